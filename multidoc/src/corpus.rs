//! The page analysis run over untrusted bytes, with the invariants that must hold whatever the
//! bytes: no panic, errors that say something, blocks and weights that obey their rules. The
//! fuzz target `page` (fuzz/) and the ordinary tests (tests/corpus.rs) both call this.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::template::DomainEvidence;
use crate::{analyze, Evidence};

/// The charsets a fuzz input may be declared in, chosen by its first byte.
const CHARSETS: [Option<&str>; 5] = [
    None,
    Some("windows-1251"),
    Some("gbk"),
    Some("koi8-r"),
    Some("utf-16le"),
];

/// A page's analysis, alone and with the evidence of itself.
pub fn check_page(data: &[u8]) {
    let (charset, body) = match data.split_first() {
        Some((&b, rest)) => (CHARSETS[usize::from(b) % CHARSETS.len()], rest),
        None => (None, data),
    };
    let a = match analyze(body, charset, 1 << 20, None) {
        Ok(a) => a,
        Err(e) => return assert!(!e.to_string().is_empty()),
    };
    let n = a.blocks.len();
    assert_eq!((a.weights.len(), a.fingerprints.len()), (n, n));
    for (i, b) in a.blocks.iter().enumerate() {
        assert_eq!(b.position as usize, i);
        assert!(b.text.chars().any(char::is_alphanumeric), "{b:?}");
        assert!(
            b.chars > 0 && b.link_chars <= b.chars && b.heading <= 6,
            "{b:?}"
        );
        assert!((0.0..=1.0).contains(&b.weight), "{b:?}");
        assert_eq!(a.weights[i], b.weight);
    }
    assert!(a.main_text.is_empty() == (n == 0));
    for line in a.main_text.lines() {
        assert!(a.blocks.iter().any(|b| b.text.contains(line)), "{line}");
    }
    let mut domain = DomainEvidence::new(64);
    domain.add_page(a.fingerprints.iter().copied());
    domain.add_page(a.fingerprints.iter().copied());
    let e = Evidence {
        domain: &domain,
        includes_page: true,
    };
    let b = analyze(body, charset, 1 << 20, Some(e)).unwrap();
    assert_eq!(b.blocks, a.blocks);
    for (w, page_only) in b.weights.iter().zip(&a.weights) {
        assert!(*w <= *page_only && *w >= 0.0);
    }
    assert!((0.0..=1.0).contains(&b.template_share));
}
