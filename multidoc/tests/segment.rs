//! The segmenter: the blocks of a page written for this test, exactly; and on real pages with
//! a known main text (fixtures/pages, see its NOTICE), the main text found and the furniture
//! left out.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::Path;

use focuser_multidoc::decode::{decode, DEFAULT_MAX_BYTES};
use focuser_multidoc::segment::{main_text, segment, MAIN_THRESHOLD};

const PAGE: &str = r#"<!DOCTYPE html>
<html><head><title>A  &amp; B</title><style>p { color: red }</style>
<script>document.write("<p>not text</p>")</script></head>
<body class="home nav-open">
<nav class="menu"><ul><li><a href="/">Home</a><li><a href="/news">News</a></ul></nav>
<article>
<h1>The title</h1>
<p>First paragraph, with <a href="/x">a link</a> &mdash; and an entity.
<p>Second paragraph<br>on two lines.</p>
<div hidden>Hidden text</div><div style="display: none">Also hidden</div>
<span aria-hidden="true">icon</span>
<div>Loose text <p>inner</p> tail</div>
</article>
<footer>© 2024 Example</footer>
</body></html>"#;

#[test]
fn blocks_of_a_written_page() {
    let s = segment(PAGE);
    assert_eq!(s.title.as_deref(), Some("A & B"));
    let got: Vec<(&str, &str, u8, u32, u32)> = s
        .blocks
        .iter()
        .map(|b| {
            (
                b.text.as_str(),
                b.path.as_str(),
                b.heading,
                b.chars,
                b.link_chars,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("Home", "html>body>nav>ul>li", 0, 4, 4),
            ("News", "html>body>nav>ul>li", 0, 4, 4),
            ("The title", "html>body>article>h1", 1, 8, 0),
            (
                "First paragraph, with a link — and an entity.",
                "html>body>article>p",
                0,
                37,
                5
            ),
            (
                "Second paragraph\non two lines.",
                "html>body>article>p",
                0,
                26,
                0
            ),
            ("Loose text", "html>body>article>div", 0, 9, 0),
            ("inner", "html>body>article>div>p", 0, 5, 0),
            ("tail", "html>body>article>div", 0, 4, 0),
            ("© 2024 Example", "html>body>footer", 0, 12, 0),
        ]
    );
    let positions: Vec<u32> = s.blocks.iter().map(|b| b.position).collect();
    assert_eq!(positions, (0..9).collect::<Vec<_>>());
    assert!(s.blocks.windows(2).all(|w| w[0].offset < w[1].offset));
    let first = &s.blocks[3];
    assert_eq!(&PAGE[first.offset as usize..][..15], "First paragraph");
    assert!((first.link_density() - 5.0 / 37.0).abs() < 1e-6);
    // The paragraphs are main content, the menu and the footer are not.
    for b in &s.blocks {
        let main = b.text.contains("paragraph");
        let furniture = matches!(b.text.as_str(), "Home" | "News" | "© 2024 Example");
        assert!(!main || b.weight >= MAIN_THRESHOLD, "{b:?}");
        assert!(!furniture || b.weight < MAIN_THRESHOLD, "{b:?}");
    }
}

/// WCXB's word-F1 (lower-cased `\w+` tokens as multisets).
fn word_f1(pred: &str, gold: &str) -> f64 {
    let count = |s: &str| {
        let mut m: HashMap<String, i64> = HashMap::new();
        for t in s
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|t| !t.is_empty())
        {
            *m.entry(t.to_lowercase()).or_default() += 1;
        }
        m
    };
    let (p, g) = (count(pred), count(gold));
    let overlap: i64 = p
        .iter()
        .map(|(t, c)| (*c).min(g.get(t).copied().unwrap_or(0)))
        .sum();
    let (np, ng) = (p.values().sum::<i64>(), g.values().sum::<i64>());
    if overlap == 0 {
        return 0.0;
    }
    let (pr, rc) = (overlap as f64 / np as f64, overlap as f64 / ng as f64);
    2.0 * pr * rc / (pr + rc)
}

fn fixture(name: &str) -> (Vec<u8>, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pages");
    let html = std::fs::read(dir.join(format!("{name}.html"))).unwrap();
    let expected = std::fs::read_to_string(dir.join(format!("{name}.expected.txt"))).unwrap();
    (html, expected)
}

/// The main text of a fixture page, its F1 against the known one, and the weights of the
/// blocks whose text starts with each of `furniture`.
fn check(name: &str, min_f1: f64, furniture: &[&str]) {
    let (html, expected) = fixture(name);
    let d = decode(&html, None, DEFAULT_MAX_BYTES).unwrap();
    let s = segment(&d.text);
    let text = main_text(s.blocks.iter().map(|b| (b, b.weight)), MAIN_THRESHOLD);
    let f1 = word_f1(&text, &expected);
    assert!(f1 >= min_f1, "{name}: F1 {f1:.3}\n{text}");
    for f in furniture {
        let b = s.blocks.iter().find(|b| b.text.starts_with(f)).unwrap();
        assert!(b.weight < MAIN_THRESHOLD, "{name}: {b:?}");
    }
}

#[test]
fn a_news_article_of_aeb() {
    check(
        "aeb-thespacereview",
        0.95,
        &["Home", "Subscribe to our weekly newsletter"],
    );
}

#[test]
fn an_article_of_wcxb() {
    check("wcxb-0406", 0.95, &[]);
}

#[test]
fn a_blog_post_of_readability() {
    check("readability-001", 0.9, &["Hi, I'm Nicolas.", "Home"]);
}
