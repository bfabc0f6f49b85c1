//! The fuzz targets' checks as ordinary tests: over the committed corpus (fuzz/seeds/) and
//! over damage generated from good sitemaps and feeds: every truncation, bytes replaced by
//! XML's special characters, bits flipped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use focuser_feed::corpus::{check_items, check_sitemap};

type Check = fn(&[u8]);

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect()
}

fn damage(good: &[u8], check: Check) {
    check(good);
    for cut in 0..good.len() {
        check(&good[..cut]);
    }
    for i in 1..good.len() {
        for b in [b'<', b'>', b'&', b'/', b'"', b'\n', 0x00, 0x80, 0xFF] {
            let mut d = good.to_vec();
            d[i] = b;
            check(&d);
        }
        for bit in [0, 5, 7] {
            let mut d = good.to_vec();
            d[i] ^= 1 << bit;
            check(&d);
        }
    }
}

#[test]
fn the_committed_corpus() {
    for (target, check, at_least) in [
        ("sitemap", check_sitemap as Check, 8),
        ("items", check_items as Check, 9),
    ] {
        let files = seeds(target);
        assert!(files.len() >= at_least, "{target}: {} seeds", files.len());
        for f in &files {
            check(f);
        }
    }
}

#[test]
fn damaged_sitemaps() {
    for s in seeds("sitemap") {
        damage(&s, check_sitemap);
    }
}

#[test]
fn damaged_feeds() {
    for s in seeds("items") {
        damage(&s, check_items);
    }
}

#[test]
fn every_charset_selector() {
    for first in 0..=255u8 {
        check_sitemap(&[&[first][..], b"http://a.example/\n"].concat());
        check_items(
            &[
                &[first][..],
                b"<rss><item><id>1</id><title>t</title></item></rss>",
            ]
            .concat(),
        );
    }
}
