//! Sitemaps: plain lists and XML urlset/sitemapindex, in the encodings the first byte picks.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    focuser_feed::corpus::check_sitemap(data);
});
