//! Runs: sorted by id, merged in id order, domains kept beside their URLs.

use super::*;
use proptest::prelude::*;

/// Ids spread over all 64 bits, packed into a few bits (a spilled part's range), or
/// repeated at the extremes.
fn ids() -> impl Strategy<Value = Vec<u64>> {
    prop_oneof![
        prop::collection::vec(any::<u64>(), 0..3000),
        (any::<u64>(), prop::collection::vec(0u64..5000, 0..3000)).prop_map(|(base, offs)| {
            offs.into_iter().map(|o| base.saturating_add(o)).collect()
        }),
        prop::collection::vec(
            prop::sample::select(vec![0, 1, 7, u64::MAX - 1, u64::MAX]),
            0..300
        ),
    ]
}

fn run_of(ids: &[u64], domains: Option<Vec<u32>>) -> Run {
    let mut b = RunBuilder::default();
    for (i, &id) in ids.iter().enumerate() {
        let url = format!("http://www.d{}.ru/{i}", i % 7);
        let r = b.push(
            id,
            &url,
            &format!("d{}.ru", i % 7),
            Some(11),
            (i % 7) as u32,
        );
        let r = r.unwrap();
        b.agg_mut(r).hits = 1;
        b.agg_mut(r).ts = i as i64;
        if i % 3 == 0 {
            b.tag(r, i as i64, 0, &format!("t{i}"));
        }
    }
    let mut run = b.finish();
    if let Some(map) = domains {
        run.renumber_domains(&map);
    }
    run
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// The same aggregates as a plain sort, in id order.
    #[test]
    fn sort_by_id_sorts_like_a_plain_sort(ids in ids()) {
        let mut b = RunBuilder::default();
        for (i, &id) in ids.iter().enumerate() {
            b.push(id, "http://a.ru/", "a.ru", Some(7), i as u32).unwrap();
        }
        let mut aggs = b.aggs;
        let mut expected = aggs.clone();
        expected.sort_by_key(|a| (a.id, a.domain));
        sort_by_id(&mut aggs);
        prop_assert!(aggs.windows(2).all(|w| w[0].id <= w[1].id));
        aggs.sort_by_key(|a| (a.id, a.domain));
        let key = |v: &[Agg]| v.iter().map(|a| (a.id, a.domain)).collect::<Vec<_>>();
        prop_assert_eq!(key(&aggs), key(&expected));
    }

    /// Over any range, the merge gives each id in it once, in order, with the hits, latest
    /// time and latest tag of every run's aggregates of it.
    #[test]
    fn merges_in_id_order_over_any_range(
        a in ids(),
        b in ids(),
        bounds in (any::<u64>(), any::<u64>()),
    ) {
        let map: Vec<u32> = (0..7).map(|d| 10 + d).collect();
        let runs = [run_of(&a, None), run_of(&b, Some(map))];
        let (lo, hi) = (bounds.0.min(bounds.1), bounds.0.max(bounds.1));
        for range in [0..=u64::MAX, lo..=hi, 0..=(1 << 63) - 1, (1 << 63)..=u64::MAX] {
            // Per id: lines (one hit each), the latest time, and the tag of the latest
            // line with one (every third line has one, of its time).
            let mut expected: std::collections::BTreeMap<u64, (u64, i64, String)> =
                Default::default();
            for ids in [&a, &b] {
                for (i, &id) in ids.iter().enumerate().filter(|(_, id)| range.contains(id)) {
                    let e = expected.entry(id).or_insert((0, i64::MIN, String::new()));
                    e.0 += 1;
                    e.1 = e.1.max(i as i64);
                    let latest = e.2.strip_prefix('t').and_then(|t| t.parse::<usize>().ok());
                    if i % 3 == 0 && latest.is_none_or(|t| t <= i) {
                        e.2 = format!("t{i}");
                    }
                }
            }
            let mut m = Merged::new(&runs, range.clone());
            let mut seen = Vec::new();
            while let Some(v) = m.next_agg() {
                prop_assert!(v.domain_name.starts_with('d') && v.url.contains(v.domain_name));
                prop_assert!(v.domain < 7 || (10..17).contains(&v.domain));
                seen.push((v.id, v.hits, v.ts, v.tag.to_string()));
            }
            let want: Vec<(u64, u64, i64, String)> =
                expected.into_iter().map(|(id, e)| (id, e.0, e.1, e.2)).collect();
            prop_assert_eq!(seen, want);
        }
    }
}

#[test]
fn a_domain_not_in_its_url_is_kept_beside_it() {
    let mut b = RunBuilder::default();
    let r1 = b.push(5, "http://www.a.ru/", "a.ru", Some(11), 0).unwrap();
    let r2 = b.push(6, "http://b.ru/", "zz.ru", Some(7), 1).unwrap();
    let r3 = b.push(7, "http://c.ru/", "c.ru", None, 2).unwrap();
    b.tag(r1, 10, 1, "x");
    b.tag(r1, 10, 0, "older");
    b.tag(r2, 3, 0, "y");
    assert_ne!(r1, r3);
    let run = b.finish();
    let mut m = Merged::new(std::slice::from_ref(&run), 0..=u64::MAX);
    let views: Vec<(u64, &str, &str, &str)> = std::iter::from_fn(|| m.next_agg())
        .map(|v| (v.id, v.url, v.domain_name, v.tag))
        .collect();
    assert_eq!(
        views,
        [
            (5, "http://www.a.ru/", "a.ru", "x"),
            (6, "http://b.ru/", "zz.ru", "y"),
            (7, "http://c.ru/", "c.ru", "")
        ]
    );
    assert_eq!(run.aggs().count(), 3);
}
