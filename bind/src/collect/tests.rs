#![allow(clippy::unwrap_used, clippy::expect_used)]

use focuser_multidoc::tokenize::Tokenizer;

use super::*;
use crate::binder::tests::dict;
use crate::binder::{Finder, Relevance};
use crate::page::PageText;

/// A hand-made finding of the phrase whose text is `text`.
fn found(d: &Dictionary, text: &str, relevance: f32) -> Found {
    let phrase = (0..d.len() as u32)
        .find(|&p| d.phrase(p).unwrap().text == text)
        .unwrap_or_else(|| panic!("{text} is not in the dictionary"));
    Found {
        phrase,
        count: 1,
        weight: 1.0,
        blocks: vec![0],
        relevance,
    }
}

fn texts(d: &Dictionary, c: &[Collected]) -> Vec<String> {
    c.iter()
        .map(|x| d.phrase(x.found.phrase).unwrap().text.to_owned())
        .collect()
}

fn rules(kind: Kind, f: impl FnOnce(&mut Rules)) -> Rules {
    let mut r = Rules::default_for(kind);
    f(&mut r);
    r
}

#[test]
fn phrases_below_the_relevance_threshold_are_dropped() {
    let d = dict(Kind::Media, &["football\t3", "tennis\t3", "golf\t3"]);
    let f = vec![
        found(&d, "football", 0.05),
        found(&d, "tennis", 0.1),
        found(&d, "golf", 0.3),
    ];
    let r = rules(Kind::Media, |r| r.min_relevance = 0.1);
    assert_eq!(texts(&d, &collect(&d, f.clone(), &r)), ["golf", "tennis"]);
    let r = rules(Kind::Media, |r| r.min_relevance = 0.0);
    assert_eq!(collect(&d, f, &r).len(), 3);
}

#[test]
fn a_direct_binding_keeps_at_most_20_phrases_the_best_ones() {
    let lines: Vec<String> = (0..30).map(|i| format!("thing{i:02}\t1")).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let d = dict(Kind::Direct, &refs);
    let f: Vec<Found> = (0..30)
        .map(|i| found(&d, &format!("thing{i:02}"), 0.2 + i as f32 / 100.0))
        .collect();
    let r = Rules::default_for(Kind::Direct);
    assert_eq!(r.max_phrases, 20);
    let kept = texts(&d, &collect(&d, f.clone(), &r));
    let want: Vec<String> = (10..30).rev().map(|i| format!("thing{i:02}")).collect();
    assert_eq!(kept, want);
    let r = rules(Kind::Direct, |r| r.max_phrases = 3);
    assert_eq!(collect(&d, f, &r).len(), 3);
}

#[test]
fn nested_phrases_are_dropped_for_the_longer_ones() {
    let d = dict(
        Kind::Direct,
        &[
            "iphone\t1",
            "buy iphone\t1",
            "buy iphone 15\t1",
            "iphone 15 pro\t1",
            "pro\t1",
            "buy 15\t1",
            "cases\t1",
        ],
    );
    let all = [
        "iphone",
        "buy iphone",
        "buy iphone 15",
        "iphone 15 pro",
        "pro",
        "buy 15",
        "cases",
    ];
    let f: Vec<Found> = all.iter().map(|t| found(&d, t, 0.5)).collect();
    let kept = texts(
        &d,
        &collect(&d, f.clone(), &Rules::default_for(Kind::Direct)),
    );
    // "buy 15" is no run of "buy iphone 15": kept. Ties keep the page's order.
    assert_eq!(kept, ["buy iphone 15", "iphone 15 pro", "buy 15", "cases"]);
    let r = rules(Kind::Direct, |r| r.drop_nested = false);
    assert_eq!(collect(&d, f.clone(), &r).len(), 7);
    // A longer phrase dropped by an earlier rule holds nothing.
    let mut f = f;
    f[2].relevance = 0.01;
    f[3].relevance = 0.01;
    let kept = texts(&d, &collect(&d, f, &Rules::default_for(Kind::Direct)));
    assert_eq!(kept, ["buy iphone", "pro", "buy 15", "cases"]);
}

#[test]
fn direct_phrases_are_filtered_and_ranked_by_their_advertisers() {
    let d = dict(
        Kind::Direct,
        &["alpha\t0", "beta\t2", "delta\t50", "gamma\t5"],
    );
    let f = vec![
        found(&d, "alpha", 0.9),
        found(&d, "beta", 0.5),
        found(&d, "gamma", 0.5),
        found(&d, "delta", 0.5),
    ];
    // A phrase nobody bids on is dropped by default; more advertisers rank first.
    let kept = texts(
        &d,
        &collect(&d, f.clone(), &Rules::default_for(Kind::Direct)),
    );
    assert_eq!(kept, ["delta", "gamma", "beta"]);
    let r = rules(Kind::Direct, |r| r.min_advertisers = 5);
    assert_eq!(texts(&d, &collect(&d, f.clone(), &r)), ["delta", "gamma"]);
    // Without the advertisers' weight, relevance alone ranks (ties in page order).
    let r = rules(Kind::Direct, |r| {
        r.min_advertisers = 0;
        r.advertiser_weight = 0.0;
    });
    assert_eq!(
        texts(&d, &collect(&d, f.clone(), &r)),
        ["alpha", "beta", "gamma", "delta"]
    );
    // Other kinds have no advertisers to filter by.
    let m = dict(Kind::Market, &["alpha\t1"]);
    let kept = collect(
        &m,
        vec![found(&m, "alpha", 0.5)],
        &Rules::default_for(Kind::Market),
    );
    assert_eq!(kept.len(), 1);
}

#[test]
fn a_phrase_only_in_the_menu_ranks_below_the_same_phrase_in_the_article() {
    let d = dict(Kind::Direct, &["mountain bikes\t10", "road bikes\t10"]);
    let mut page = PageText::new();
    page.read(
        &mut Tokenizer::default(),
        [
            ("Mountain bikes | Road bikes | Helmets", 0.08),
            (
                "Our review of the best road bikes of the year: light frames, fast wheels.",
                0.92,
            ),
        ],
    );
    let f = Finder::new().find(&d, &page, &[], &Relevance::default());
    let r = rules(Kind::Direct, |r| r.min_relevance = 0.0);
    assert_eq!(
        texts(&d, &collect(&d, f.clone(), &r)),
        ["road bikes", "mountain bikes"]
    );
    // With the default threshold the menu's phrase does not make it at all.
    assert_eq!(
        texts(&d, &collect(&d, f, &Rules::default_for(Kind::Direct))),
        ["road bikes"]
    );
}

/// The nesting rule as it reads: a phrase is dropped when its words are a run of a longer
/// phrase that is kept (itself not nested), comparing every pair.
fn nested_pairwise(d: &Dictionary, found: &[Found]) -> Vec<bool> {
    let words = |f: &Found| d.stem_ids(f.phrase);
    let mut by_length: Vec<usize> = (0..found.len()).collect();
    by_length.sort_by_key(|&i| std::cmp::Reverse(words(&found[i]).len()));
    let mut nested = vec![false; found.len()];
    for (k, &i) in by_length.iter().enumerate() {
        let w = words(&found[i]);
        nested[i] = by_length[..k].iter().any(|&j| {
            let longer = words(&found[j]);
            !nested[j] && longer.len() > w.len() && longer.windows(w.len()).any(|x| x == w)
        });
    }
    nested
}

#[test]
fn nesting_drops_exactly_what_comparing_every_pair_drops() {
    // Phrases over five words, so that many are runs of others, and runs of runs.
    let mut x = 99u64;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let words = ["alpha", "bravo", "charlie", "delta", "echo"];
    let mut lines: Vec<String> = Vec::new();
    for _ in 0..400 {
        let p: Vec<&str> = (0..1 + rnd(4)).map(|_| words[rnd(5) as usize]).collect();
        let line = format!("{}\t1", p.join(" "));
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let d = dict(Kind::Market, &refs);
    let r = rules(Kind::Market, |r| {
        r.max_phrases = usize::MAX;
        r.min_relevance = 0.0;
    });
    for round in 0..20 {
        let f: Vec<Found> = (0..d.len() as u32)
            .filter(|_| rnd(3) == 0)
            .map(|p| Found {
                phrase: p,
                count: 1,
                weight: 1.0,
                blocks: vec![0],
                relevance: 0.5,
            })
            .collect();
        let nested = nested_pairwise(&d, &f);
        let want: Vec<u32> = f
            .iter()
            .zip(&nested)
            .filter(|(_, &n)| !n)
            .map(|(f, _)| f.phrase)
            .collect();
        let got: Vec<u32> = collect(&d, f.clone(), &r)
            .iter()
            .map(|c| c.found.phrase)
            .collect();
        assert_eq!(got, want, "round {round}");
        assert!(nested.iter().any(|&n| n) && want.len() > 1, "round {round}");
    }
}
