//! Two masters, one node (docs/operations.md "yacobot: two masters"), through the real
//! binary: disjoint mode applies every master's files; duplicate mode counts each hit once,
//! fills the primary's gaps from the other master after `Loader.FailoverAfter`, survives
//! kill -9, and refuses bad files and keys clearly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{number, record, Site, T0};
use focuser_formats::queue::{QueueHeader, QueueRecord, QueueWriter};
use focuser_tests::{wait_for, TestDb};

const NO_CRAWL: &str = "Crawl.Enable = 0\nQargfilter.Enable = 0\nLoader.Inbox.m2 = inbox/m2\n";

fn duplicate(failover_after: u64) -> String {
    format!(
        "{NO_CRAWL}Loader.Mode = duplicate\nLoader.Primary = m1\nLoader.FailoverAfter = {failover_after}\n"
    )
}

/// A record of `url` with `hits`, the latest at `at` seconds after T0.
fn hit(url: &str, hits: u64, at: i64) -> QueueRecord {
    QueueRecord {
        timestamp: T0 + at,
        ..record(url, hits, "")
    }
}

/// Publishes the queue file of `master`'s cycle `cycle`, whose clock is T0 + `time`, in the
/// inbox of `inbox` (its own, but for bad-input tests).
fn queue(site: &Site, inbox: &str, master: &str, cycle: u64, time: i64, records: &[QueueRecord]) {
    let mut sorted = records.to_vec();
    sorted.sort_by_key(|r| r.id);
    let header = QueueHeader {
        master: master.into(),
        cycle,
        node: 1,
        time: T0 + time,
    };
    let mut w = QueueWriter::new(Vec::new(), &header).unwrap();
    for r in &sorted {
        w.write(r).unwrap();
    }
    let dir = site.root().join("inbox").join(inbox);
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!("{master}-{cycle:010}.q");
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, w.finish().unwrap().0).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

fn hits(db: &TestDb, url: &str) -> i64 {
    let id = focuser_formats::urls::url_id(url);
    number(
        db,
        &format!("SELECT CAST(COALESCE(SUM(hits), 0) AS SIGNED) AS n FROM url WHERE id = {id}"),
    )
}

fn files(site: &Site, inbox: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(site.root().join("inbox").join(inbox))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn skipped(db: &TestDb, source: &str) -> i64 {
    number(
        db,
        &format!(
            "SELECT COUNT(*) AS n FROM queue_applied WHERE source = '{source}' AND skipped = 1"
        ),
    )
}

#[test]
fn disjoint_mode_applies_every_masters_files() {
    let db = TestDb::new();
    let site = Site::new(db.url(), NO_CRAWL);
    // Ad servers that fail over: each master forwards other hits of the same URL.
    queue(&site, "m1", "m1", 1, 60, &[hit("http://a.ru/", 3, 50)]);
    queue(&site, "m2", "m2", 1, 60, &[hit("http://a.ru/", 2, 40)]);
    site.once();
    assert_eq!(hits(&db, "http://a.ru/"), 5);
    assert_eq!(
        number(
            &db,
            "SELECT COUNT(*) AS n FROM queue_applied WHERE skipped = 0"
        ),
        2
    );
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM loader_watermark"), 0);
}

#[test]
fn duplicate_mode_counts_each_hit_once() {
    let db = TestDb::new();
    let site = Site::new(db.url(), &duplicate(600));
    // Both masters read the same reflogs: the same records, cycles not aligned.
    let first = [hit("http://a.ru/", 3, 50), hit("http://b.ru/", 2, 55)];
    queue(&site, "m1", "m1", 1, 60, &first);
    queue(&site, "m2", "m2", 7, 58, &first);
    // Ahead of the primary: held while it keeps up.
    let second = [hit("http://a.ru/", 1, 100)];
    queue(&site, "m2", "m2", 8, 118, &second);
    site.once();
    assert_eq!(hits(&db, "http://a.ru/"), 3);
    assert_eq!(hits(&db, "http://b.ru/"), 2);
    assert_eq!(skipped(&db, "m2"), 1);
    assert_eq!(files(&site, "m2"), ["m2-0000000008.q"]);
    // The primary passes it: dropped without counting again.
    queue(&site, "m1", "m1", 2, 120, &second);
    site.once();
    assert_eq!(hits(&db, "http://a.ru/"), 4);
    assert_eq!(skipped(&db, "m2"), 2);
    assert!(files(&site, "m2").is_empty());
    assert!(
        site.log().contains("skipped m2-0000000008.q"),
        "{}",
        site.log()
    );
}

#[test]
fn the_other_master_fills_the_primarys_gap_once() {
    let db = TestDb::new();
    let site = Site::new(db.url(), &duplicate(4));
    queue(&site, "m1", "m1", 1, 60, &[hit("http://a.ru/", 1, 50)]);
    queue(&site, "m2", "m2", 1, 60, &[hit("http://a.ru/", 1, 50)]);
    site.once();
    // The primary stops; the other master's files wait, then fill the gap.
    let s2 = [hit("http://a.ru/", 2, 110), hit("http://b.ru/", 1, 100)];
    queue(&site, "m2", "m2", 2, 120, &s2);
    queue(&site, "m2", "m2", 3, 180, &[hit("http://c.ru/", 1, 170)]);
    site.once();
    assert_eq!(
        files(&site, "m2").len(),
        2,
        "held: the primary handled a file just now"
    );
    assert_eq!(hits(&db, "http://a.ru/"), 1);
    wait_for("the gap to be filled", Duration::from_secs(60), || {
        site.once();
        files(&site, "m2").is_empty()
    });
    assert_eq!(hits(&db, "http://a.ru/"), 3);
    assert_eq!(hits(&db, "http://b.ru/"), 1);
    assert_eq!(hits(&db, "http://c.ru/"), 1);
    // The primary comes back with its files of the period covered: no hit counts twice.
    queue(&site, "m1", "m1", 2, 120, &s2);
    let p3 = [hit("http://c.ru/", 1, 170), hit("http://d.ru/", 1, 183)];
    queue(&site, "m1", "m1", 3, 185, &p3);
    // The other master's file of the same period, later: covered by the primary.
    queue(&site, "m2", "m2", 4, 185, &[hit("http://d.ru/", 1, 183)]);
    site.once();
    assert!(files(&site, "m1").is_empty() && files(&site, "m2").is_empty());
    assert_eq!(hits(&db, "http://a.ru/"), 3);
    assert_eq!(hits(&db, "http://b.ru/"), 1);
    assert_eq!(hits(&db, "http://c.ru/"), 1);
    assert_eq!(hits(&db, "http://d.ru/"), 1);
    assert_eq!(skipped(&db, "m1"), 1);
    assert_eq!(skipped(&db, "m2"), 2);
    let log = site.log();
    assert!(log.contains("the files of m2 fill the gap"), "{log}");
    assert!(
        log.contains("1 counted from another master's files before"),
        "{log}"
    );
}

#[test]
fn kill_9_in_duplicate_mode_applies_nothing_twice() {
    let db = TestDb::new();
    let site = Site::new(db.url(), &format!("{}debuglevel = 40\n", duplicate(1)));
    let n = 150_000i64;
    let big: Vec<_> = (0..n)
        .map(|i| hit(&format!("http://d{}.ru/p/{i}", i % 97), 1, 50))
        .collect();
    queue(&site, "m1", "m1", 1, 60, &big);
    // The same period from the other master (skipped once the primary's file is in), then
    // one the primary never sends (applied after the failover).
    queue(&site, "m2", "m2", 1, 60, &big[..1000]);
    queue(
        &site,
        "m2",
        "m2",
        2,
        120,
        &[hit("http://after.ru/", 7, 110)],
    );
    let daemon = site.spawn();
    wait_for("the load to start", Duration::from_secs(30), || {
        site.log().contains("loading m1-0000000001.q (150000 URLs)")
    });
    std::thread::sleep(Duration::from_millis(300));
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    drop(daemon);
    assert!(
        !site.log().contains("applied m1-0000000001.q"),
        "finished before the kill"
    );
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM queue_applied"), 0);
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM loader_watermark"), 0);
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), 0);
    wait_for("every file handled", Duration::from_secs(120), || {
        site.once();
        files(&site, "m1").is_empty() && files(&site, "m2").is_empty()
    });
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), n + 1);
    assert_eq!(
        number(
            &db,
            "SELECT CAST(SUM(hits) AS SIGNED) AS n FROM url WHERE domain <> 'after.ru'"
        ),
        n
    );
    assert_eq!(hits(&db, "http://after.ru/"), 7);
    assert_eq!(skipped(&db, "m2"), 1);
}

#[test]
fn bad_files_in_duplicate_mode_are_set_aside_with_their_line() {
    let db = TestDb::new();
    let site = Site::new(db.url(), &duplicate(1));
    queue(&site, "m1", "m1", 5, 600, &[hit("http://a.ru/", 1, 550)]);
    site.once();
    // The primary is silent: the other master fills the gap.
    queue(&site, "m2", "m2", 9, 700, &[hit("http://b.ru/", 1, 650)]);
    wait_for("the gap to be filled", Duration::from_secs(60), || {
        site.once();
        files(&site, "m2").is_empty()
    });
    // A master that is neither; the other master going back in time, after the primary's
    // watermark (before it, the file would be skipped: its period was counted).
    queue(&site, "m2", "m3", 1, 800, &[hit("http://x.ru/", 1, 750)]);
    queue(&site, "m2", "m2", 10, 650, &[hit("http://x.ru/", 1, 640)]);
    // The primary going back, to a period the other master covered: skipped, not bad.
    queue(&site, "m1", "m1", 6, 300, &[hit("http://x.ru/", 1, 250)]);
    site.once();
    let why = |inbox: &str, name: &str| {
        assert!(site
            .root()
            .join(format!("inbox/{inbox}/bad/{name}"))
            .exists());
        std::fs::read_to_string(site.root().join(format!("inbox/{inbox}/bad/{name}.why"))).unwrap()
    };
    let m3 = why("m2", "m3-0000000001.q");
    assert!(
        m3.contains("line 1: a queue file of master \"m3\" in the inbox of \"m2\""),
        "{m3}"
    );
    assert_eq!(skipped(&db, "m1"), 1);
    let back = why("m2", "m2-0000000010.q");
    assert!(
        back.contains(
            "line 1: time=20231114222410 is before the watermark of master m2 (20231114222500)"
        ),
        "{back}"
    );
    let log = site.log();
    for name in ["m3-0000000001.q", "m2-0000000010.q"] {
        assert!(
            log.contains(&format!("bad queue file {name}: line 1:")),
            "{log}"
        );
    }
    assert_eq!(hits(&db, "http://a.ru/"), 1);
    assert_eq!(hits(&db, "http://b.ru/"), 1);
    assert_eq!(hits(&db, "http://x.ru/"), 0);
    // The watermarks did not move.
    assert_eq!(
        number(
            &db,
            "SELECT CAST(SUM(TIMESTAMPDIFF(SECOND, '1970-01-01', covered)) AS SIGNED) AS n FROM loader_watermark"
        ),
        2 * common::T0 + 1300
    );
}

#[test]
fn bad_loader_keys_are_clear_errors() {
    let db = TestDb::new();
    for (extra, expected) in [
        (
            "Loader.Mode = hot\n",
            "Loader.Mode = hot: must be disjoint or duplicate",
        ),
        ("Loader.Mode = duplicate\n", "set Loader.Primary"),
        (
            "Loader.Mode = duplicate\nLoader.Primary = m3\n",
            "Loader.Primary = m3: not a master with an inbox",
        ),
        (
            "Loader.Primary = m9\n",
            "Loader.Primary = m9: not a master with an inbox",
        ),
        (
            "Loader.Mode = duplicate\nLoader.Primary = m1\nLoader.FailoverAfter = 0\n",
            "Loader.FailoverAfter: must be at least 1",
        ),
        ("Loader.FailoverAfter = soon\n", "Loader.FailoverAfter"),
    ] {
        let site = Site::new(db.url(), &format!("{NO_CRAWL}{extra}"));
        let err = site.config_refused(extra);
        assert!(
            err.contains("yacobot.cf") && err.contains(expected),
            "{extra}: {err}"
        );
    }
}

#[test]
fn a_running_node_counts_held_skipped_and_bad_files() {
    let db = TestDb::new();
    let port = focuser_tests::free_port();
    let site = Site::new(
        db.url(),
        &format!("{}status_listen = {port}\n", duplicate(600)),
    );
    queue(&site, "m1", "m1", 1, 60, &[hit("http://a.ru/", 3, 50)]);
    queue(&site, "m2", "m2", 1, 58, &[hit("http://a.ru/", 3, 50)]);
    queue(&site, "m2", "m2", 2, 118, &[hit("http://a.ru/", 1, 100)]);
    queue(&site, "m2", "m3", 1, 118, &[hit("http://a.ru/", 1, 100)]);
    let daemon = site.spawn();
    let metric = |name: &str| focuser_tests::metric(port, &format!("focuser_yacobot_{name}"));
    wait_for("the files handled", Duration::from_secs(30), || {
        metric("queue_files_bad_total") == Some(1.0)
            && metric("queue_files_skipped_total") == Some(1.0)
    });
    assert_eq!(metric("queue_files_total"), Some(1.0));
    wait_for("the held file counted", Duration::from_secs(30), || {
        metric("queue_files_held") == Some(1.0)
    });
    daemon.stop();
    assert_eq!(hits(&db, "http://a.ru/"), 3);
    assert_eq!(files(&site, "m2"), ["m2-0000000002.q"]);
}
