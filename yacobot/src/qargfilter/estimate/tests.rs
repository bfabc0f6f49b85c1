#![allow(clippy::unwrap_used)]
use super::*;

fn print(n: u128) -> Option<MainPrint> {
    Some(MainPrint {
        md5: n,
        simhash: Some(n as u64 * 0x0101_0101_0101_0101),
    })
}

fn pages<'a>(list: &[(&'a str, Option<MainPrint>)]) -> Vec<Page<'a>> {
    list.iter()
        .map(|(url, main)| Page { url, main: *main })
        .collect()
}

fn of(e: &PathEvidence, name: &str) -> ArgEvidence {
    e.args.get(name).cloned().unwrap_or_default()
}

#[test]
fn a_page_argument_whose_pages_differ_gets_pairs_that_differ() {
    let urls: Vec<String> = (1..=12)
        .map(|i| format!("http://a.ru/list?page={i}"))
        .collect();
    let list: Vec<_> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| (u.as_str(), print(i as u128)))
        .collect();
    let e = evidence(&pages(&list));
    assert_eq!(
        of(&e, "page"),
        ArgEvidence {
            pages: 12,
            pairs: 11,
            equal_pairs: 0
        }
    );
    let s = decide(&of(&e, "page"), 10).unwrap();
    assert!(s < 0.1, "{s}");
}

#[test]
fn an_ignored_argument_changed_or_dropped_gives_equal_pairs() {
    // The article itself (no argument), and ten utm variants of it: same main text.
    let mut urls = vec!["http://a.ru/story?id=7".to_string()];
    urls.extend((0..10).map(|i| format!("http://a.ru/story?id=7&utm_source=s{i}")));
    // Another article with its own variants.
    urls.push("http://a.ru/story?id=8&utm_source=x".to_string());
    urls.push("http://a.ru/story?utm_source=y&id=8".to_string());
    let list: Vec<_> = urls
        .iter()
        .map(|u| (u.as_str(), print(if u.contains("id=8") { 8 } else { 7 })))
        .collect();
    let e = evidence(&pages(&list));
    // Ten values and the page without it: ten pairs; id=8: one pair.
    assert_eq!(
        of(&e, "utm_source"),
        ArgEvidence {
            pages: 12,
            pairs: 11,
            equal_pairs: 11
        }
    );
    let s = decide(&of(&e, "utm_source"), 10).unwrap();
    assert!(s >= 0.95, "{s}");
    // id never changes alone (utm_source changes with it): no pair, no score.
    assert_eq!(of(&e, "id").pairs, 0);
    assert_eq!(decide(&of(&e, "id"), 10), None);
}

#[test]
fn pairs_differ_in_one_argument_only() {
    let list = [
        ("http://a.ru/p?id=1&sid=a", print(1)),
        ("http://a.ru/p?id=2&sid=b", print(2)),
        ("http://a.ru/p?id=1&sid=c", print(1)),
        ("http://a.ru/p?sid=c&id=1", print(1)), // the same arguments, another order
        ("http://a.ru/p?id=1", print(1)),
        ("http://a.ru/p?id=1&sid=d", None), // not analysed
    ];
    let e = evidence(&pages(&list));
    // sid: (absent, a), (a, c) for id=1; nothing for id=2 alone.
    assert_eq!(
        of(&e, "sid"),
        ArgEvidence {
            pages: 4,
            pairs: 2,
            equal_pairs: 2
        }
    );
    // id: (absent? no page "?sid=…" alone) — none.
    assert_eq!(of(&e, "id").pairs, 0);
}

#[test]
fn repeated_arguments_are_one_value() {
    let list = [
        ("http://a.ru/p?t=1&t=2", print(1)),
        ("http://a.ru/p?t=1", print(2)),
        ("http://a.ru/p?t=2&t=1", print(1)),
    ];
    let e = evidence(&pages(&list));
    // "1\02" against "1", and "2\01"... sorted arguments make the first and the last one.
    assert_eq!(of(&e, "t").pairs, 1);
    assert_eq!(of(&e, "t").equal_pairs, 0);
}

#[test]
fn bad_query_strings_are_counted_not_fatal() {
    let many: String = (0..=MAX_ARGS).map(|i| format!("a{i}=1&")).collect();
    let long = "n".repeat(MAX_NAME + 1);
    let urls = [
        format!("http://a.ru/p?{many}"),
        "http://a.ru/p?&&=&=x&%zz=%&x".to_string(),
        "http://a.ru/p?=&=x&%zz=%".to_string(),
        "http://a.ru/p?%zz=%".to_string(),
        format!("http://a.ru/p?{long}=1"),
        format!("http://a.ru/p?{long}=2"),
        "http://a.ru/p?".to_string(),
        "http://a.ru/p".to_string(),
    ];
    let list: Vec<_> = urls.iter().map(|u| (u.as_str(), print(1))).collect();
    let e = evidence(&pages(&list));
    assert_eq!(e.too_many_args, 1);
    assert_eq!(e.long_names, 1);
    assert!(!e.args.contains_key(&long));
    // "x" present against absent: one pair; the empty name is a name like another (its two
    // values are one value, "\0x").
    assert_eq!(of(&e, "x").pairs, 1);
    assert_eq!(of(&e, "").pairs, 1);
    assert_eq!(of(&e, "%zz").pairs, 1, "?%zz=% against ?");
}

#[test]
fn a_hundred_thousand_variants_make_a_linear_number_of_pairs() {
    let n = 100_000;
    let urls: Vec<String> = (0..n).map(|i| format!("http://a.ru/p?sid={i}")).collect();
    let list: Vec<_> = urls.iter().map(|u| (u.as_str(), print(1))).collect();
    let started = std::time::Instant::now();
    let e = evidence(&pages(&list));
    assert_eq!(of(&e, "sid").pairs, n - 1);
    assert_eq!(of(&e, "sid").equal_pairs, n - 1);
    // Not a timing test: a quadratic pairing would take hours, not seconds.
    assert!(started.elapsed().as_secs() < 60);
}

#[test]
fn the_score_is_the_posterior_mean_with_jeffreys_prior() {
    assert_eq!(score(0, 0), 0.5);
    // n agreeing pairs: (n + ½) / (n + 1).
    assert!(score(8, 8) < 0.95);
    assert!(score(10, 10) >= 0.95);
    // One pair in twenty that differs keeps an argument significant; one in forty does not.
    assert!(score(20, 19) < 0.95);
    assert!(score(40, 39) >= 0.95);
    assert!(score(10, 0) < 0.05);
    let e = ArgEvidence {
        pages: 12,
        pairs: 9,
        equal_pairs: 9,
    };
    assert_eq!(decide(&e, 10), None, "too few pairs: no score");
    assert_eq!(decide(&e, 9), Some(score(9, 9)));
    assert_eq!(decide(&ArgEvidence::default(), 0), None);
}

#[test]
fn main_prints_come_from_hex_md5_and_near_ones_are_the_same() {
    let p = MainPrint::new("0123456789abcdef0123456789ABCDEF", Some(0b1011)).unwrap();
    assert_eq!(p.md5, 0x0123456789abcdef0123456789abcdef);
    assert_eq!(MainPrint::new("0123", None), None);
    assert_eq!(MainPrint::new(&"g".repeat(32), None), None);
    assert_eq!(MainPrint::new(EMPTY_MAIN, None), None, "empty");
    assert!(same_main(&p, &p));
    // Another text, three bits of SimHash away: near, the same page; four bits: another one.
    let near = MainPrint {
        md5: 1,
        simhash: Some(0b1100),
    };
    let far = MainPrint {
        md5: 2,
        simhash: Some(0b0100),
    };
    let unknown = MainPrint {
        md5: 3,
        simhash: None,
    };
    assert!(same_main(&p, &near));
    assert!(!same_main(&p, &far));
    assert!(
        !same_main(&p, &unknown),
        "without a SimHash only the MD5 tells"
    );
}

#[test]
fn a_count_in_the_text_that_changes_on_every_fetch_is_near_not_a_difference() {
    // The same article three times, its main text with a view count that differs: MD5s differ,
    // SimHashes are within the near distance.
    let list = [
        (
            "http://a.ru/story?id=1",
            Some(MainPrint {
                md5: 1,
                simhash: Some(0xF0F0),
            }),
        ),
        (
            "http://a.ru/story?id=1&utm_source=a",
            Some(MainPrint {
                md5: 2,
                simhash: Some(0xF0F1),
            }),
        ),
        (
            "http://a.ru/story?id=1&utm_source=b",
            Some(MainPrint {
                md5: 3,
                simhash: Some(0xF0F3),
            }),
        ),
    ];
    let e = evidence(&pages(&list));
    assert_eq!(
        (of(&e, "utm_source").pairs, of(&e, "utm_source").equal_pairs),
        (2, 2)
    );
}
