//! The templater on a generated site whose 30 pages share a menu, a tagline and a footer:
//! as the domain's pages arrive (each weighed before it is added, as the worker does), the
//! template's weight falls to nothing, and each page's own text keeps its page-only weight.
#![allow(clippy::unwrap_used)]

use focuser_multidoc::decode::DEFAULT_MAX_BYTES;
use focuser_multidoc::segment::MAIN_THRESHOLD;
use focuser_multidoc::template::{DomainEvidence, TRUST_PAGES};
use focuser_multidoc::{analyze, Analysis, Evidence};

const WORDS: [&str; 16] = [
    "river", "council", "harvest", "bridge", "market", "winter", "school", "festival", "railway",
    "library", "mayor", "storm", "orchard", "museum", "ferry", "choir",
];

/// Page `i` of the site: the shared parts around an article of its own.
fn page(i: usize) -> String {
    // A word chosen by a hash of the page and the place (digits are alike in fingerprints:
    // the words make each page's text its own).
    let w = |k: usize| {
        let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (k as u64 + 1).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 32;
        WORDS[x as usize % WORDS.len()]
    };
    let article: String = (0..3)
        .map(|p| {
            format!(
                "<p>Story {i}, part {p}: the {} and the {} met the {} near the {}, and the town \
                 talked about the {} for a week, as it does every year when the {} comes.</p>",
                w(p * 6),
                w(p * 6 + 1),
                w(p * 6 + 2),
                w(p * 6 + 3),
                w(p * 6 + 4),
                w(p * 6 + 5)
            )
        })
        .collect();
    let (h1, h2) = (w(20), w(21));
    format!(
        "<html><head><title>Story {i} - Valley Daily</title></head><body>\
         <nav><ul><li><a href=/>Home</a><li><a href=/news>News</a><li><a href=/sport>Sport</a>\
         <li><a href=/about>About us</a></ul></nav>\
         <div class=intro><p>Valley Daily brings you the news of the valley, every day since \
         1999, written with care by people who live here.</p></div>\
         <article><h1>The {h1} and the {h2} of story {i}</h1>{article}</article>\
         <footer><p>© 2024 Valley Daily. All rights reserved. Contact: desk@valley.example</p></footer>\
         </body></html>"
    )
}

fn weight_of(a: &Analysis, starts: &str) -> (f32, f32) {
    let i = a
        .blocks
        .iter()
        .position(|b| b.text.starts_with(starts))
        .unwrap();
    (a.blocks[i].weight, a.weights[i])
}

#[test]
fn the_template_fades_as_pages_arrive_and_unique_text_keeps_its_weight() {
    let mut domain = DomainEvidence::default();
    let mut tagline = Vec::new();
    for i in 0..30 {
        let html = page(i);
        let e = Evidence {
            domain: &domain,
            includes_page: false,
        };
        let a = analyze(html.as_bytes(), None, DEFAULT_MAX_BYTES, Some(e)).unwrap();
        let (page_only, combined) = weight_of(&a, "Valley Daily brings you");
        tagline.push(combined);
        if i == 0 {
            assert_eq!(combined, page_only, "no evidence yet");
            assert!(
                page_only >= MAIN_THRESHOLD,
                "the tagline looks like content: {page_only}"
            );
        }
        for part in 0..3 {
            let (page_only, combined) = weight_of(&a, &format!("Story {i}, part {part}"));
            assert_eq!(
                combined, page_only,
                "page {i}: unique text keeps its weight"
            );
            assert!(combined >= MAIN_THRESHOLD);
        }
        if i as u32 >= TRUST_PAGES {
            for furniture in ["Valley Daily brings you", "Home", "© 2024 Valley Daily"] {
                assert!(weight_of(&a, furniture).1 < 0.01, "page {i}: {furniture}");
            }
            assert!(a.template_share > 0.2, "page {i}: {}", a.template_share);
            let first = a.main_text.lines().next().unwrap();
            assert!(first.ends_with(&format!("of story {i}")), "{}", a.main_text);
            assert!(!a.main_text.contains("Valley Daily brings"));
        }
        domain.add_page(a.fingerprints.iter().copied());
    }
    assert!(tagline.windows(2).all(|w| w[1] <= w[0]), "{tagline:?}");
    assert!(tagline[29] < 0.01);
    assert_eq!(domain.pages(), 30);
}

#[test]
fn a_site_analysed_with_all_its_pages_counted() {
    // As `analyze --site DIR` does: every page added first, then each weighed.
    let mut domain = DomainEvidence::default();
    let pages: Vec<String> = (0..30).map(page).collect();
    for p in &pages {
        let a = analyze(p.as_bytes(), None, DEFAULT_MAX_BYTES, None).unwrap();
        domain.add_page(a.fingerprints);
    }
    let e = Evidence {
        domain: &domain,
        includes_page: true,
    };
    let a = analyze(pages[3].as_bytes(), None, DEFAULT_MAX_BYTES, Some(e)).unwrap();
    assert!(weight_of(&a, "Valley Daily brings you").1 < 0.01);
    let (page_only, combined) = weight_of(&a, "Story 3, part 1");
    assert_eq!(page_only, combined);
}
