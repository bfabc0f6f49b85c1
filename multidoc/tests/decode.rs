//! Pages in the encodings a Russian and Chinese crawl meets decode without mojibake
//! (fixtures written for this test: each `X.html` beside the `X.expected.txt` it must give).
#![allow(clippy::unwrap_used)]

use std::path::Path;

use focuser_multidoc::decode::{decode, CharsetFrom, DEFAULT_MAX_BYTES};

fn check(name: &str, encodings: &[&str], from: CharsetFrom) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decode");
    let body = std::fs::read(dir.join(format!("{name}.html"))).unwrap();
    let expected = std::fs::read_to_string(dir.join(format!("{name}.expected.txt"))).unwrap();
    let d = decode(&body, None, DEFAULT_MAX_BYTES).unwrap();
    assert!(
        encodings.contains(&d.encoding.name()),
        "{name}: {}",
        d.encoding.name()
    );
    assert_eq!(d.from, from, "{name}");
    assert!(!d.had_errors, "{name}");
    assert_eq!(d.text, expected, "{name}");
}

#[test]
fn windows_1251_without_a_declaration_is_detected() {
    check(
        "windows-1251-detected",
        &["windows-1251"],
        CharsetFrom::Detector,
    );
}

#[test]
fn koi8_r_from_meta_and_from_the_detector() {
    check("koi8-r-meta", &["KOI8-R"], CharsetFrom::Meta);
    // KOI8-U differs from KOI8-R only in letters Russian does not use: the text is the same.
    check(
        "koi8-r-detected",
        &["KOI8-R", "KOI8-U"],
        CharsetFrom::Detector,
    );
}

#[test]
fn gb2312_whose_meta_comes_after_a_long_ascii_head() {
    // GB2312 is decoded as GBK, its superset (WHATWG).
    check("gb2312-late-meta", &["GBK"], CharsetFrom::Meta);
    check("gbk-detected", &["GBK", "gb18030"], CharsetFrom::Detector);
}

#[test]
fn utf8_without_a_declaration_is_borrowed() {
    check("utf-8-detected", &["UTF-8"], CharsetFrom::Detector);
    let body = "<p>Привет</p>".as_bytes();
    let d = decode(body, None, DEFAULT_MAX_BYTES).unwrap();
    assert!(matches!(d.text, std::borrow::Cow::Borrowed(_)));
}

#[test]
fn the_header_charset_wins_over_meta() {
    let body = "<meta charset=koi8-r><p>Привет</p>".as_bytes();
    let d = decode(body, Some("UTF-8"), DEFAULT_MAX_BYTES).unwrap();
    assert_eq!((d.encoding.name(), d.from), ("UTF-8", CharsetFrom::Header));
    assert!(d.text.contains("Привет"));
}
