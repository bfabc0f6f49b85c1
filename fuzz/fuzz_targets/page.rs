//! Fetched pages through the whole analysis (decode, blocks, weights, template evidence), in
//! the charsets the first byte picks.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    focuser_multidoc::corpus::check_page(data);
});
