#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn phrase(text: &str, relevance: u16) -> BoundPhrase {
    BoundPhrase {
        text: text.into(),
        relevance,
        advertisers: 3,
    }
}

/// A page bound (direct) to `phrases`, in categories `cats`.
fn page(url: &str, tragic: bool, phrases: &[(&str, u16)], cats: &[&str]) -> PageBinding {
    PageBinding::new(
        section_id(url),
        url,
        tragic,
        vec![Binding {
            kind: Kind::Direct,
            dict_version: 9,
            categories: cats.iter().map(|c| ((*c).to_owned(), 800)).collect(),
            phrases: if tragic {
                vec![]
            } else {
                phrases.iter().map(|&(t, r)| phrase(t, r)).collect()
            },
        }],
    )
}

fn rules(min_urls: usize) -> Rules {
    Rules {
        min_urls,
        ..Rules::default()
    }
}

fn names(stubs: &[Stub]) -> Vec<&str> {
    stubs.iter().map(|s| s.section.as_str()).collect()
}

#[test]
fn a_page_belongs_to_its_hosts_root_and_its_directories_down_to_the_depth() {
    let url = "https://User@Example.COM:8080/news/world/a.html?x=1/2#top/x";
    assert_eq!(
        sections(url, 5),
        [
            "example.com:8080/",
            "example.com:8080/news/",
            "example.com:8080/news/world/"
        ]
    );
    assert_eq!(
        sections(url, 1),
        ["example.com:8080/", "example.com:8080/news/"]
    );
    assert_eq!(sections(url, 0), ["example.com:8080/"]);
    assert_eq!(sections("http://ex.com", 2), ["ex.com/"]);
    assert_eq!(
        sections("http://ex.com/a//b/", 2),
        ["ex.com/", "ex.com/a/", "ex.com/a/b/"]
    );
    assert_eq!(sections("http://ex.com/a?q=/b/c/", 2), ["ex.com/"]);
    assert!(sections("not a url", 2).is_empty());
    assert!(sections("http:///path/", 2).is_empty());
    assert_ne!(section_id("ex.com/"), section_id("ex.com/a/"));
    assert_eq!(section_id("ex.com/"), section_id("ex.com/"));
}

#[test]
fn a_section_needs_its_minimum_of_bound_pages() {
    let pages: Vec<PageBinding> = (0..3)
        .map(|i| {
            page(
                &format!("https://ex.com/news/{i}.html"),
                false,
                &[("phone", 500)],
                &["1"],
            )
        })
        .chain([page(
            "https://ex.com/about.html",
            false,
            &[("phone", 500)],
            &["1"],
        )])
        .collect();
    // The root has all four, news/ three.
    assert_eq!(
        names(&stubs(&pages, &rules(3))),
        ["ex.com/", "ex.com/news/"]
    );
    assert_eq!(names(&stubs(&pages, &rules(4))), ["ex.com/"]);
    assert!(stubs(&pages, &rules(5)).is_empty());
    let s = &stubs(&pages, &rules(4))[0];
    assert_eq!((s.urls, s.key), (4, section_id("ex.com/")));
}

#[test]
fn a_stub_has_the_most_frequent_phrases_and_categories_with_their_share() {
    let pages = [
        page(
            "https://ex.com/p/1",
            false,
            &[("phone case", 900), ("charger", 300)],
            &["1", "2"],
        ),
        page(
            "https://ex.com/p/2",
            false,
            &[("phone case", 700), ("charger", 600)],
            &["1", "2"],
        ),
        page(
            "https://ex.com/p/3",
            false,
            &[("phone case", 500), ("cable", 700)],
            &["1", "4"],
        ),
        page(
            "https://ex.com/p/4",
            false,
            &[("screen", 999), ("cable", 100)],
            &["3"],
        ),
        page("https://ex.com/p/5", false, &[("rare", 999)], &["1"]),
    ];
    let r = Rules {
        min_urls: 5,
        min_share: 0.3,
        max_phrases: 3,
        max_categories: 2,
        ..Rules::default()
    };
    let s = stubs(&pages, &r);
    assert_eq!(names(&s), ["ex.com/", "ex.com/p/"]);
    let b = &s[1].bindings[0];
    assert_eq!((b.kind, b.dict_version), (Kind::Direct, 9));
    let got: Vec<(&str, u16)> = b
        .phrases
        .iter()
        .map(|p| (p.text.as_str(), p.relevance))
        .collect();
    // phrase case in 3 of 5; charger and cable in 2, charger first for its larger sum; screen
    // and rare in 1 of 5 (< 0.3) are left out, and the cap is 3 anyway.
    assert_eq!(got, [("phone case", 600), ("charger", 400), ("cable", 400)]);
    assert_eq!(b.phrases[0].advertisers, 3);
    assert_eq!(b.categories, [("1".to_owned(), 800), ("2".to_owned(), 400)]);
    assert!(!s[1].tragic);
    // The stub's item reads back.
    let item = Item::Stub(s[1].clone());
    assert_eq!(Item::parse(item.render().as_bytes()).unwrap(), item);
}

#[test]
fn a_mostly_tragic_section_gets_a_tragic_stub_without_phrases() {
    let mut pages: Vec<PageBinding> = (0..4)
        .map(|i| {
            page(
                &format!("https://ex.com/n/{i}"),
                i < 2,
                &[("phone", 500)],
                &["1"],
            )
        })
        .collect();
    let s = stubs(&pages, &rules(4));
    assert!(s[0].tragic, "{s:?}");
    assert!(s[0].bindings[0].phrases.is_empty());
    assert_eq!(s[0].bindings[0].categories.len(), 1);
    pages[1].tragic = false;
    pages[1].bindings[0].phrases = vec![phrase("phone", 500)];
    let s = stubs(&pages, &rules(4));
    assert!(!s[0].tragic);
    assert_eq!(s[0].bindings[0].phrases[0].relevance, 750);
}

#[test]
fn only_changed_stubs_are_shipped_and_lost_ones_withdrawn() {
    let mut pages: Vec<PageBinding> = (0..4)
        .map(|i| {
            page(
                &format!("https://ex.com/a/{i}"),
                false,
                &[("phone", 500)],
                &["1"],
            )
        })
        .collect();
    let first = stubs(&pages, &rules(4));
    assert_eq!(names(&first), ["ex.com/", "ex.com/a/"]);
    // Nothing stored: everything ships.
    assert_eq!(changes(&[], first.clone()).len(), 2);
    let stored: Vec<(u64, String)> = first.iter().map(|s| (s.key, s.md5())).collect();
    // Built again from the same pages: nothing.
    assert!(changes(&stored, stubs(&pages, &rules(4))).is_empty());
    // A page moves out of a/: a/ falls below the minimum and is withdrawn; the root's stub is
    // the same and not shipped again.
    pages[3].url = "https://ex.com/b/3".into();
    let c = changes(&stored, stubs(&pages, &rules(4)));
    assert_eq!(c, [Change::Withdraw(section_id("ex.com/a/"))]);
    // A page's phrases change: the root's stub changes and ships.
    pages[0].bindings[0].phrases = vec![phrase("cable", 500)];
    pages[1].bindings[0].phrases = vec![phrase("cable", 500)];
    let c = changes(&stored, stubs(&pages, &rules(4)));
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(matches!(&c[1], Change::Ship(s) if s.section == "ex.com/"));
}
