//! The parsers of untrusted bytes, run over one input with the invariants that must hold
//! whatever the bytes: no panic, errors that say something, and good results that obey their
//! rules. The fuzz targets (fuzz/) and the ordinary tests (tests/corpus.rs) both call these.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::ops::ControlFlow;

use md5::{Digest, Md5};

use crate::items::{extract, FieldRule, Limits, Outcome, Rules};
use crate::sitemap::{self, MAX_URL_BYTES};

/// The charsets a fuzz input may be declared in, chosen by its first byte.
const CHARSETS: [Option<&str>; 5] = [
    None,
    Some("gbk"),
    Some("big5"),
    Some("shift_jis"),
    Some("utf-16le"),
];

fn split(data: &[u8]) -> (Option<&'static str>, &[u8]) {
    match data.split_first() {
        Some((&b, rest)) => (CHARSETS[usize::from(b) % CHARSETS.len()], rest),
        None => (None, data),
    }
}

/// Sitemaps: either URLs that obey the rules, or an error that says why.
pub fn check_sitemap(data: &[u8]) {
    let (charset, body) = split(data);
    match sitemap::parse(body, charset) {
        Ok(s) => {
            assert!(!s.urls.is_empty());
            assert_eq!(s.md5, sitemap::sitemap_md5(body));
            let mut seen = HashSet::new();
            for u in &s.urls {
                assert!(u.len() < MAX_URL_BYTES, "{u}");
                assert!(u[..4].eq_ignore_ascii_case("http"), "{u}");
                assert_eq!(u.trim(), u);
                assert!(seen.insert(u), "duplicate {u}");
            }
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty() && msg.len() < 1000, "{msg}");
        }
    }
}

/// The class the item fuzz target reads with: a key, a required field, a repeated field,
/// an attribute, the item's own text.
pub fn fuzz_rules() -> Rules {
    let r = |label: &str, xpath: &str, key: bool, required: bool| FieldRule {
        label_name: label.into(),
        parent_label: "item".into(),
        xpath: xpath.into(),
        is_key: key,
        is_required: required,
        ..FieldRule::default()
    };
    Rules::compile(&[
        r("id", "", true, false),
        r("title", "", false, true),
        r("tag", "tags/tag", false, false),
        r("src", "img/@src", false, false),
        r("all", ".", false, false),
    ])
    .expect("the fuzz class is valid")
}

/// Feeds: every good item has a key and the MD5 of its canonical form; the counts agree with
/// what the sink was given; an error has a position.
pub fn check_items(data: &[u8]) {
    let (charset, body) = split(data);
    let limits = Limits {
        max_item_bytes: 4096,
        max_field_bytes: 1024,
        max_event_bytes: 8192,
        max_depth: 32,
        max_key_chars: 64,
        max_items: 0,
    };
    let (mut good, mut failed) = (0u64, 0u64);
    let result = extract(body, charset, &fuzz_rules(), &limits, |o| {
        match o {
            Outcome::Item(i) => {
                good += 1;
                assert!(!i.key().is_empty());
                assert!(i.key().chars().count() <= limits.max_key_chars);
                let digest = Md5::digest(i.canonical().as_bytes());
                let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                assert_eq!(i.md5(), hex);
                assert!(i.canonical().len() < 2 * limits.max_item_bytes + 1024);
                assert_eq!(i.values(0).next(), Some(i.key()));
                assert!(i.values(1).next().is_some());
            }
            Outcome::Failed(f) => {
                failed += 1;
                assert!(!f.to_string().is_empty());
            }
        }
        ControlFlow::Continue(())
    });
    match result {
        Ok(s) => assert_eq!((s.items, s.failed), (good, failed)),
        Err(e) => {
            assert_eq!((e.items, e.failed), (good, failed));
            assert!(e.line >= 1 && e.column >= 1);
            assert!(!e.to_string().is_empty());
        }
    }
}
