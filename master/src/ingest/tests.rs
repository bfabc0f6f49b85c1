//! Reading reflogs: parts, the updatetag rule and rejects, however the input is cut.

use super::*;

#[test]
fn parts_cover_the_id_space_in_order() {
    assert_eq!(part_of(0, 4), 0);
    assert_eq!(part_of(u64::MAX, 4), 3);
    assert_eq!(part_of(1 << 62, 4), 1);
    assert_eq!(part_of(u64::MAX, 1), 0);
    assert_eq!(parts_for(100, 1000), 2);
    assert_eq!(parts_for(1000, 1000), 6);
    assert_eq!(parts_for(1500, 1000), 10);
    // Even parts: the lower half of the id space is the first half of the parts.
    assert_eq!(part_of((1 << 63) - 1, 10), 4);
    assert_eq!(part_of(1 << 63, 10), 5);
}

/// Every aggregate: id, latest time, hits, tag, URL, domain.
type Seen = Vec<(u64, i64, u64, String, String, String)>;

fn ingest_with(
    dir: &Path,
    inputs: &[PathBuf],
    threads: usize,
    budget: u64,
) -> (Seen, IngestStats, Vec<String>, usize) {
    let tmp = dir.join(format!("tmp-{threads}-{budget}"));
    let rej = dir.join(format!("rej-{threads}-{budget}"));
    let rules = LineRules {
        offset: 0,
        max_url: 2048,
        hosts: HostPolicy::default(),
    };
    let ing = ingest(inputs, threads, budget, (&tmp, &rej), rules).unwrap();
    let mut seen = Vec::new();
    for p in 0..ing.parts {
        let part = ing.part(p, &ing.domains).unwrap();
        let mut m = Merged::new(part.runs(), 0..=u64::MAX);
        while let Some(a) = m.next_agg() {
            let domain = ing.domains.names[a.domain as usize].clone();
            // Ids are computed a batch at a time: each must still be its own URL's.
            assert_eq!(a.id, focuser_formats::urls::url_id(a.url), "{}", a.url);
            seen.push((
                a.id,
                a.ts,
                a.hits,
                a.tag.to_string(),
                a.url.to_string(),
                domain,
            ));
        }
    }
    let rejects = ing
        .rejects
        .iter()
        .map(|(tmp, _)| std::fs::read_to_string(tmp).unwrap())
        .collect();
    (seen, ing.stats, rejects, ing.parts)
}

/// A reflog line at second `ts` of 2023-11-14 22:13.
fn line(ts: u32, url: &str, hits: u64, tag: &str) -> String {
    format!("b\t5\t202311142213{ts:02}\t1\t{url}\t{hits}\t{tag}\n")
}

#[test]
fn the_last_non_empty_tag_in_timestamp_order_wins_however_the_input_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = String::from("header\n");
    let mut b = String::from("header\n");
    for round in 0..300u32 {
        let filler = format!("http://f{}.ru/{round}", round % 7);
        a.push_str(&line(round % 60, &filler, 1, ""));
        a.push_str("bad line\n");
        b.push_str(&line(
            round % 60,
            &filler,
            2,
            if round % 5 == 0 { "f" } else { "" },
        ));
    }
    for (ts, url, tag) in [
        (10, "http://a.ru/u", "x"),
        (30, "http://a.ru/u", ""),
        (20, "http://A.RU/u", "y"),
        (5, "http://a.ru/u#frag", "old"),
    ] {
        a.push_str(&line(ts, url, 1, tag));
    }
    // The same second as y, in a later line (of a later file): it wins.
    b.push_str(&line(20, "http://a.ru:80/u", 1, "z"));
    b.push_str(&line(59, "ftp://a.ru/", 1, ""));
    let inputs = [("a.log", a), ("b.log", b)].map(|(name, text)| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    });
    let (seen, stats, rejects, parts) = ingest_with(dir.path(), &inputs, 1, 1 << 30);
    assert_eq!(parts, 1);
    assert_eq!(
        (stats.files, stats.lines, stats.rejected_total()),
        (2, 906, 301)
    );
    let u = seen.iter().find(|s| s.4 == "http://a.ru/u").unwrap();
    let t30 = focuser_formats::stamp::parse(b"20231114221330", 0).unwrap();
    assert_eq!(
        (u.1, u.2, u.3.as_str(), u.5.as_str()),
        (t30, 5, "z", "a.ru")
    );
    assert_eq!(rejects.len(), 2);
    assert!(rejects[0].starts_with("3\texpected 7 tab-separated fields, found 1\tbad line\n5\t"));
    assert_eq!(
        rejects[1],
        "303\tnot an http or https URL\tb\t5\t20231114221359\t1\tftp://a.ru/\t1\t\n"
    );
    for threads in [2, 3, 5, 16] {
        for budget in [1 << 30, 1 << 16] {
            let (s, st, r, parts) = ingest_with(dir.path(), &inputs, threads, budget);
            assert_eq!(
                parts > 1,
                budget < 1 << 20,
                "{threads} threads, {budget} bytes"
            );
            assert_eq!(
                (&s, &st, &r),
                (&seen, &stats, &rejects),
                "{threads} threads, {budget} bytes"
            );
        }
    }
}

/// A URL that does not normalise is rejected, line by line, by the thread that keeps it,
/// which may not be the one that read the line: the reject files do not depend on that.
#[test]
fn rejected_urls_are_reported_alike_whichever_thread_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let bad = [
        "ftp://a.ru/",
        "http://",
        "http://a b.ru/",
        "mailto:x@a.ru",
        "http://[::1",
        "gopher://g.ru/",
    ];
    let mut inputs = Vec::new();
    for f in 0..3 {
        let mut text = String::from("header\n");
        for i in 0..2000u32 {
            let url = if i % 13 == 0 {
                format!("{}{}", bad[(i as usize / 13) % bad.len()], i % 50)
            } else {
                format!("http://d{}.ru/p/{}", i % 11, i % 700)
            };
            text.push_str(&line(i % 60, &url, u64::from(i % 4), ""));
            if i % 97 == 0 {
                // Long enough to stand out in a reject file, with a non-ASCII byte.
                text.push_str(&line(
                    1,
                    &format!("ftp://é{}.ru/{}", i, "x".repeat(1500)),
                    1,
                    "",
                ));
            }
        }
        let p = dir.path().join(format!("{f}.log"));
        std::fs::write(&p, text).unwrap();
        inputs.push(p);
    }
    let (seen, stats, rejects, _) = ingest_with(dir.path(), &inputs, 1, 1 << 30);
    assert_eq!(rejects.len(), 3);
    let rejected: usize = rejects.iter().map(|r| r.lines().count()).sum();
    assert_eq!(rejected as u64, stats.rejected_total());
    // Most of them (`http://` and a number is an IPv4 host: refused as internal).
    assert!(rejected > 400, "{rejected}");
    assert!(rejects[0].contains("[... "), "{}", &rejects[0][..200]);
    for threads in [2, 3, 4, 7] {
        for budget in [1 << 30, 1 << 16] {
            let (s, st, r, _) = ingest_with(dir.path(), &inputs, threads, budget);
            assert_eq!(
                (&s, &st, &r),
                (&seen, &stats, &rejects),
                "{threads} threads, {budget} bytes"
            );
        }
    }
}
