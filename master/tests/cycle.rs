//! Whole cycles through the library: what goes where, rejects, partitions, and the filter's
//! invariants over random splits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;

use common::{line, map_domain, nodes, partner_domains, Site, T0};
use focuser_master::cycle::{DomainStore, Master};
use focuser_master::route::{Assignment, DomainMap};
use focuser_master::store::ConnStore;
use focuser_schema::models::NewPartnerDomain;
use focuser_tests::TestDb;

#[test]
fn urls_go_to_their_domains_node_and_current_log_remembers_them() {
    let db = TestDb::new();
    let ids = nodes(&db, &[("yb1", true), ("yb2", true)]);
    map_domain(&db, "astroma.net", ids[1]);
    let site = Site::new(db.url(), "");
    site.reflog(
        "r1.log",
        &[
            line(T0, "http://astroma.net/week/02.htm", 1, "0"),
            line(T0 + 5, "http://WWW.Astroma.net/week/02.htm#top", 2, ""),
            line(
                T0 + 1,
                "http://fatalenergy.com.ru/power/index.php?newsid=1",
                1,
                "a",
            ),
            line(T0 + 2, "https://3dnews.ru/search?q=canon%20600d", 7, ""),
        ],
    );
    let s = site.cycle(&db, T0 + 10).unwrap();
    // www.astroma.net and astroma.net are two URLs of one domain.
    assert_eq!(
        (
            s.seq,
            s.ingest.lines,
            s.join.unique_urls,
            s.join.forwarded_new,
            s.new_domains
        ),
        (1, 4, 4, 4, 2)
    );
    let fwd = site.forwarded();
    let astroma: Vec<_> = fwd
        .iter()
        .filter(|(_, r)| r.domain == "astroma.net")
        .collect();
    assert_eq!(astroma.len(), 2);
    assert!(
        astroma.iter().all(|(node, _)| *node == ids[1]),
        "astroma.net was mapped to yb2"
    );
    let www = astroma
        .iter()
        .find(|(_, r)| r.url == "http://www.astroma.net/week/02.htm")
        .unwrap();
    assert_eq!(
        (
            www.1.hits,
            www.1.timestamp,
            www.1.updatetag.as_str(),
            www.1.new
        ),
        (2, T0 + 5, "", true)
    );
    let bare = astroma
        .iter()
        .find(|(_, r)| r.url == "http://astroma.net/week/02.htm")
        .unwrap();
    assert_eq!(
        (bare.1.hits, bare.1.timestamp, bare.1.updatetag.as_str()),
        (1, T0, "0")
    );
    let pd = partner_domains(&db);
    assert_eq!(pd.len(), 3);
    for (node, r) in &fwd {
        assert_eq!(
            pd[&r.domain], *node,
            "{} routed by partner_domain",
            r.domain
        );
    }
    assert!(
        site.root().join("done/r1.log").exists() && !site.root().join("incoming/r1.log").exists()
    );

    // Cycle 2, within the window: held back; a new tag goes through.
    site.reflog(
        "r2.log",
        &[
            line(
                T0 + 100,
                "http://fatalenergy.com.ru/power/index.php?newsid=1",
                4,
                "a",
            ),
            line(T0 + 100, "https://3dnews.ru/search?q=canon%20600d", 1, "v2"),
        ],
    );
    let s = site.cycle(&db, T0 + 200).unwrap();
    assert_eq!(
        (
            s.seq,
            s.join.kept,
            s.join.forwarded_updatetag,
            s.join.retained,
            s.forwarded()
        ),
        (2, 1, 1, 2, 1)
    );
    let second: Vec<_> = site
        .forwarded()
        .into_iter()
        .filter(|(_, r)| r.timestamp == T0 + 100)
        .collect();
    assert_eq!(second.len(), 1);
    assert_eq!(
        (
            second[0].1.hits,
            second[0].1.updatetag.as_str(),
            second[0].1.new
        ),
        (1, "v2", false),
        "its 7 hits went in cycle 1"
    );
    assert!(
        site.current_log().contains("\t4\ta\tfatalenergy.com.ru\t"),
        "pending 4 kept:\n{}",
        site.current_log()
    );

    // Cycle 3, an hour after fatalenergy was forwarded: the window has passed.
    site.reflog(
        "r3.log",
        &[line(
            T0 + 1 + 3600,
            "http://fatalenergy.com.ru/power/index.php?newsid=1",
            1,
            "",
        )],
    );
    let s = site.cycle(&db, T0 + 3700).unwrap();
    assert_eq!(s.join.forwarded_window, 1);
    let third = site
        .forwarded()
        .into_iter()
        .find(|(_, r)| r.timestamp == T0 + 3601)
        .unwrap();
    assert_eq!(
        (third.1.hits, third.1.updatetag.as_str()),
        (5, "a"),
        "pending 4 + 1, tag kept"
    );

    // Nothing ready: no cycle.
    assert!(site.cycle(&db, T0 + 3800).is_none());
    // Past retention, entries leave current_log.
    site.reflog(
        "r4.log",
        &[line(T0 + 40000, "http://astroma.net/week/02.htm", 1, "0")],
    );
    let s = site.cycle(&db, T0 + 40000).unwrap();
    assert_eq!((s.join.expired, s.current_log_entries), (3, 1));
}

#[test]
fn every_malformed_line_is_rejected_with_its_reason() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let site = Site::new(db.url(), "");
    let good = |n: u64| line(T0, &format!("http://good.ru/{n}"), 1, "");
    let ten_mb = format!(
        "b\t5\t{}\t1\thttp://big.ru/{}\t1\t\n",
        common::stamp(T0),
        "a".repeat(10 << 20)
    );
    let long_url = line(T0, &format!("http://long.ru/{}", "x".repeat(2048)), 1, "");
    let mut bytes = b"header\n".to_vec();
    let lines: Vec<Vec<u8>> = vec![
        good(1).into_bytes(),
        b"b\t5\t20231114221320\t1\thttp://a.ru/\n".to_vec(),
        b"b\t5\t2023-11-14\t1\thttp://a.ru/\t1\t\n".to_vec(),
        b"b\t5\t20231114221320\t1\thttp://a.ru/\t-3\t\n".to_vec(),
        b"b\t5\t20231114221320\t1\thttp://a.ru/\tlots\t\n".to_vec(),
        b"b\t5\t20231114221320\t1\tftp://a.ru/\t1\t\n".to_vec(),
        long_url.into_bytes(),
        b"b\t5\t20231114221320\t1\thttp://a.ru/\xff\xfe\t1\t\n".to_vec(),
        b"\n".to_vec(),
        ten_mb.into_bytes(),
        good(2).into_bytes(),
        b"b\t5\t20231114221320\t1\thttp://[::1/\t1\t\n".to_vec(),
        good(3).into_bytes(),
        // A domain longer than any DNS name (and partner_domain.domain): not routed.
        line(T0, &format!("http://{}ru/", "a.".repeat(130)), 1, "").into_bytes(),
    ];
    for l in &lines {
        bytes.extend_from_slice(l);
    }
    std::fs::write(site.root().join("incoming/bad.log"), bytes).unwrap();
    let s = site.cycle(&db, T0).unwrap();
    assert_eq!(
        (
            s.ingest.lines,
            s.ingest.rejected_total(),
            s.join.forwarded_new
        ),
        (14, 11, 3)
    );
    let rej = site.rejects("bad.log");
    let reasons: Vec<(&str, &str)> = rej
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, '\t');
            (f.next().unwrap(), f.next().unwrap())
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("3", "expected 7 tab-separated fields, found 5"),
            ("4", "timestamp is not YYYYMMDDhhmmss"),
            ("5", "hits is not a non-negative integer"),
            ("6", "hits is not a non-negative integer"),
            ("7", "not an http or https URL"),
            ("8", "URL longer than 2048 bytes"),
            ("9", "not valid UTF-8"),
            ("10", "empty line"),
            ("11", "line longer than 1048576 bytes"),
            ("13", "URL does not parse"),
            ("15", "URL domain longer than 253 bytes"),
        ]
    );
    let long = rej.lines().nth(5).unwrap();
    assert!(
        long.len() < 1200 && long.ends_with(" bytes]"),
        "a long line's excerpt is cut: {long}"
    );
    assert!(rej.len() < 20_000, "a 10 MB line leaves no copy of itself");
    assert_eq!(s.ingest.rejected["hits"], 2);
    assert_eq!(s.ingest.rejected["url"], 2);
    let urls: Vec<String> = site.forwarded().into_iter().map(|(_, r)| r.url).collect();
    assert_eq!(urls.len(), 3);
}

#[test]
fn a_line_longer_than_a_mebibyte_is_rejected_without_being_kept() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let site = Site::new(db.url(), "");
    let mut text = format!("header\n{}", line(T0, "http://a.ru/1", 1, ""));
    text.push_str(&"z".repeat(3 << 20));
    text.push('\n');
    text.push_str(&line(T0, "http://a.ru/2", 1, ""));
    std::fs::write(site.root().join("incoming/huge.log"), text).unwrap();
    let s = site.cycle(&db, T0).unwrap();
    assert_eq!(
        (s.ingest.rejected["line_too_long"], s.join.forwarded_new),
        (1, 2)
    );
    assert!(site
        .rejects("huge.log")
        .starts_with("3\tline longer than 1048576 bytes\t"));
}

/// The same input through one in-memory part and through spill partitions: the same bytes.
#[test]
fn partitioned_and_in_memory_cycles_write_the_same_files() {
    let lines: Vec<String> = (0..70_000u64)
        .map(|i| {
            line(
                T0 + (i % 600) as i64,
                &format!(
                    "http://d{}.ru/page/{}?ref={}",
                    i % 50,
                    i % 60_000,
                    "x".repeat(20)
                ),
                i % 3,
                if i % 7 == 0 { "t" } else { "" },
            )
        })
        .collect();
    let run = |memory_limit: u64| {
        let db = TestDb::new();
        nodes(&db, &[("yb1", true), ("yb2", true), ("yb3", true)]);
        let site = Site::new(db.url(), &format!("Cycle.MemoryLimit = {memory_limit}\n"));
        site.reflog("a.log", &lines[..40_000]);
        site.reflog("b.log", &lines[40_000..]);
        let s = site.cycle(&db, T0 + 1000).unwrap();
        (
            s.parts,
            site.queue_files(),
            site.current_log(),
            partner_domains(&db),
        )
    };
    let (parts_small, q1, log1, pd1) = run(16);
    let (parts_big, q2, log2, pd2) = run(1024);
    assert!(parts_small > 1, "16 MiB forces partitions ({parts_small})");
    assert_eq!(parts_big, 1);
    assert_eq!(q1, q2);
    assert_eq!(log1, log2);
    assert_eq!(pd1, pd2);
}

mod properties {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::common::{line, OneNode, Site, T0};
    use focuser_master::cycle::Master;

    const WINDOW: i64 = 3600;

    prop_compose! {
        fn reflog_line()(url in 0..6usize, dt in 0..(WINDOW - 1), hits in 0..5u64, tag in prop::option::of(0..3usize)) -> (usize, i64, u64, Option<usize>) {
            (url, dt, hits, tag)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

        /// Any split of the same lines into files and cycles within one window: every hit is
        /// forwarded or pending, and a URL forwarded twice has a new updatetag.
        #[test]
        fn hits_are_conserved_and_nothing_is_forwarded_twice_without_news(
            lines in prop::collection::vec(reflog_line(), 1..60),
            cuts in prop::collection::vec(0..60usize, 0..5),
        ) {
            let site = Site::new("mysql://unused:unused@127.0.0.1:1/unused", "");
            let cfg = site.cfg();
            let master = Master::new(&cfg);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % lines.len()).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut start = 0;
            let mut cycle = 0;
            for end in cuts.into_iter().chain([lines.len()]) {
                if end <= start { continue; }
                // Each cycle's lines in two files, to split them across files too.
                let chunk = &lines[start..end];
                let mid = chunk.len() / 2;
                for (i, part) in [&chunk[..mid], &chunk[mid..]].iter().enumerate() {
                    let text: Vec<String> = part.iter().map(|&(u, dt, h, t)| line(T0 + dt, &format!("http://u{u}.ru/"), h, &t.map(|t| format!("tag{t}")).unwrap_or_default())).collect();
                    site.reflog(&format!("c{cycle:03}-{i}.log"), &text);
                }
                master.run(&mut OneNode, T0 + WINDOW - 1, None).unwrap();
                start = end;
                cycle += 1;
            }
            let total: u64 = lines.iter().map(|l| l.2).sum();
            let forwarded: Vec<_> = site.forwarded();
            let sent: u64 = forwarded.iter().map(|(_, r)| r.hits).sum();
            let pending: u64 = site.current_log().lines().filter(|l| !l.starts_with('#')).map(|l| l.split('\t').nth(3).unwrap().parse::<u64>().unwrap()).sum();
            prop_assert_eq!(sent + pending, total);
            // One node: its files in name order are the cycles in order.
            let mut last_tag: HashMap<u64, String> = HashMap::new();
            for r in site.queue_files().values().flat_map(|t| focuser_formats::queue::read(t.as_bytes()).unwrap().1) {
                if let Some(previous) = last_tag.insert(r.id, r.updatetag.clone()) {
                    prop_assert_ne!(previous, r.updatetag, "URL {} forwarded twice in one window without a new updatetag", r.url);
                }
            }
        }
    }
}

/// Another master that gives every domain this one planned to `node`, just before this one
/// writes its plan.
struct Rival {
    store: ConnStore,
    node: u32,
}

impl DomainStore for Rival {
    fn load(&mut self) -> anyhow::Result<DomainMap> {
        self.store.load()
    }

    fn apply(
        &mut self,
        plan: &[Assignment],
        by: &str,
        now: i64,
    ) -> anyhow::Result<HashMap<String, u32>> {
        let rows: Vec<NewPartnerDomain<'_>> = plan
            .iter()
            .map(|a| NewPartnerDomain {
                domain: &a.domain,
                yacobot_id: self.node,
                assigned_by: "rival",
            })
            .collect();
        NewPartnerDomain::insert_many_if_absent(&mut self.store.0, &rows)?;
        self.store.apply(plan, by, now)
    }
}

#[test]
fn queue_files_follow_the_database_when_another_master_assigned_a_planned_domain_first() {
    let lines: Vec<String> = (0..40)
        .map(|i| line(T0 + i, &format!("http://d{}.ru/p/{i}", i % 6), 1, ""))
        .collect();

    // The domains are new: the plan spreads them over both nodes, the rival takes them all
    // for yb2 first.
    let db = TestDb::new();
    let ids = nodes(&db, &[("yb1", true), ("yb2", true)]);
    let site = Site::new(db.url(), "");
    site.reflog("r1.log", &lines);
    let cfg = site.cfg();
    let mut rival = Rival {
        store: ConnStore(db.conn()),
        node: ids[1],
    };
    let s = Master::new(&cfg)
        .run(&mut rival, T0 + 100, None)
        .unwrap()
        .unwrap();
    assert_eq!((s.new_domains, s.forwarded()), (6, 40));
    assert_eq!(s.per_node.keys().collect::<Vec<_>>(), [&ids[1]]);
    assert!(partner_domains(&db).values().all(|&n| n == ids[1]));

    // The same cycle where the rows were there from the start: the same files, and no
    // temporary left behind.
    let db2 = TestDb::new();
    let ids2 = nodes(&db2, &[("yb1", true), ("yb2", true)]);
    assert_eq!(ids, ids2);
    for d in 0..6 {
        map_domain(&db2, &format!("d{d}.ru"), ids[1]);
    }
    let site2 = Site::new(db2.url(), "");
    site2.reflog("r1.log", &lines);
    let s2 = site2.cycle(&db2, T0 + 100).unwrap();
    assert_eq!(s2.new_domains, 0);
    assert_eq!(site.queue_files(), site2.queue_files());
    assert_eq!(site.queue_files().len(), 1);
    let leftovers: Vec<_> = walkdir(site.root().join("queue"))
        .into_iter()
        .filter(|p| p.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn walkdir(dir: std::path::PathBuf) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(walkdir(e.path()));
        } else {
            out.push(e.path().display().to_string());
        }
    }
    out
}

/// A store that appends a line to a reflog while the cycle writes the plan: the writer of a
/// file the master has read already.
struct Appender {
    store: ConnStore,
    file: std::path::PathBuf,
    line: String,
}

impl DomainStore for Appender {
    fn load(&mut self) -> anyhow::Result<DomainMap> {
        self.store.load()
    }

    fn apply(
        &mut self,
        plan: &[Assignment],
        by: &str,
        now: i64,
    ) -> anyhow::Result<HashMap<String, u32>> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.file)?;
        f.write_all(std::mem::take(&mut self.line).as_bytes())?;
        self.store.apply(plan, by, now)
    }
}

#[test]
fn a_reflog_that_grows_while_the_cycle_reads_it_waits_for_a_later_cycle_and_loses_nothing() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let site = Site::new(db.url(), "");
    site.reflog("a.log", &[line(T0, "http://a.ru/1", 1, "")]);
    let growing = site.reflog("b.log", &[line(T0, "http://b.ru/1", 1, "")]);
    let cfg = site.cfg();
    let mut store = Appender {
        store: ConnStore(db.conn()),
        file: growing,
        line: line(T0, "http://b.ru/late", 1, ""),
    };
    // The cycle is computed again without b.log, which stays in incoming_dir.
    let s = Master::new(&cfg)
        .run(&mut store, T0 + 100, None)
        .unwrap()
        .unwrap();
    assert_eq!((s.ingest.files, s.forwarded()), (1, 1));
    assert!(site.root().join("done/a.log").exists());
    assert!(site.root().join("incoming/b.log").exists());
    // The next cycle takes it whole.
    let s = site.cycle(&db, T0 + 200).unwrap();
    assert_eq!((s.ingest.files, s.ingest.lines, s.forwarded()), (1, 2, 2));
    let mut urls: Vec<String> = site.forwarded().into_iter().map(|(_, r)| r.url).collect();
    urls.sort();
    assert_eq!(urls, ["http://a.ru/1", "http://b.ru/1", "http://b.ru/late"]);
}
