//! The loader, through the real binary against a real database: query-argument rules,
//! NEW_URL_BOOST and the upsert rules, exactly-once application, bad files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{number, queue_bytes, record, sql, url_row, Site};
use focuser_formats::urls;
use focuser_schema::models::{NewPathArgName, PathArgName};
use focuser_tests::TestDb;
use focuser_tests::{check_config, repo_root, wait_for};

const NO_CRAWL: &str = "Crawl.Enable = 0\nQargfilter.Enable = 0\n";

fn rule(db: &TestDb, url: &str, name: &str, significant: bool) {
    NewPathArgName {
        path_hash: urls::path_hash(url),
        name,
        significant,
        updated_at: chrono::DateTime::from_timestamp(common::T0, 0)
            .unwrap()
            .naive_utc(),
    }
    .insert(&mut db.conn())
    .unwrap();
}

#[test]
fn query_arguments_follow_path_arg_name() {
    let db = TestDb::new();
    let page = "http://shop.ru/item";
    rule(&db, page, "sid", false);
    rule(&db, page, "utm_source", false);
    rule(&db, page, "id", true);
    // Another path's rules do not apply here.
    rule(&db, "http://shop.ru/other", "color", false);
    // Rows whose URL lost arguments are held back and written in id order: flushed after
    // every batch here.
    let site = Site::new(
        db.url(),
        &format!("{NO_CRAWL}Loader.SortBuffer = 1\nLoader.Batch = 2\n"),
    );
    site.queue(
        "m1-0000000001.q",
        &[
            record("http://shop.ru/item?id=5&sid=abc&color=red", 2, ""),
            record("http://shop.ru/item?sid=x&utm_source=y", 3, ""),
            record("http://shop.ru/item?id=6", 1, ""),
        ],
    );
    site.once();
    // sid and utm_source dropped, id kept, color unknown here: kept and recorded significant.
    let kept = url_row(&db, "http://shop.ru/item?id=5&color=red").expect("stored without sid");
    assert_eq!(kept.hits, 2);
    assert_eq!(kept.path_hash, urls::path_hash(page));
    assert!(url_row(&db, "http://shop.ru/item?id=5&sid=abc&color=red").is_none());
    // Every argument dropped: the URL loses its `?`.
    assert_eq!(url_row(&db, "http://shop.ru/item").unwrap().hits, 3);
    assert_eq!(url_row(&db, "http://shop.ru/item?id=6").unwrap().hits, 1);
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), 3);
    let rules = PathArgName::for_path(&mut db.conn(), urls::path_hash(page)).unwrap();
    let rules: Vec<(&str, bool)> = rules
        .iter()
        .map(|r| (r.name.as_str(), r.significant))
        .collect();
    assert_eq!(
        rules,
        [
            ("color", true),
            ("id", true),
            ("sid", false),
            ("utm_source", false)
        ]
    );
    let log = site.log();
    assert!(
        log.contains("applied m1-0000000001.q: 3 URLs, query arguments 3 dropped, 3 kept (1 new)"),
        "{log}"
    );
    assert!(site.files("").is_empty(), "applied files are deleted");
}

#[test]
fn new_urls_are_boosted_and_known_ones_accumulate() {
    let db = TestDb::new();
    let site = Site::new(db.url(), NO_CRAWL);
    let a = "http://a.ru/";
    site.queue("m1-0000000001.q", &[record(a, 4, "")]);
    site.once();
    let row = url_row(&db, a).unwrap();
    assert_eq!((row.hits, row.download_prio), (4, 12), "NEW_URL_BOOST = 3");
    assert!(row.last_downloaded.is_none());
    let first_due = row.next_indexed;
    assert!(
        (chrono::Utc::now().naive_utc() - first_due)
            .num_seconds()
            .abs()
            < 60
    );

    // Still never downloaded: the priority stays boosted.
    site.queue("m1-0000000002.q", &[record(a, 2, "")]);
    site.once();
    let row = url_row(&db, a).unwrap();
    assert_eq!((row.hits, row.download_prio), (6, 18));

    // Downloaded once, indexed, not due for a week: hits count plainly, and an unchanged
    // (empty) updatetag leaves next_indexed alone.
    sql(
        &db,
        "UPDATE url SET hits = 0, download_prio = 0, last_downloaded = UTC_TIMESTAMP(), \
         next_indexed = UTC_TIMESTAMP() + INTERVAL 7 DAY",
    );
    site.queue("m1-0000000003.q", &[record(a, 5, "")]);
    site.once();
    let row = url_row(&db, a).unwrap();
    assert_eq!((row.hits, row.download_prio), (5, 5));
    assert!(row.next_indexed > chrono::Utc::now().naive_utc() + chrono::TimeDelta::days(6));

    // A new updatetag makes it due now; the same one again does not.
    site.queue("m1-0000000004.q", &[record(a, 1, "v2")]);
    site.once();
    let row = url_row(&db, a).unwrap();
    assert_eq!(
        (row.hits, row.download_prio, row.updatetag.as_str()),
        (6, 6, "v2")
    );
    assert!(row.next_indexed <= chrono::Utc::now().naive_utc());
    sql(
        &db,
        "UPDATE url SET next_indexed = UTC_TIMESTAMP() + INTERVAL 7 DAY",
    );
    site.queue("m1-0000000005.q", &[record(a, 1, "v2")]);
    site.once();
    let row = url_row(&db, a).unwrap();
    assert!(row.next_indexed > chrono::Utc::now().naive_utc() + chrono::TimeDelta::days(6));
    // An empty tag keeps the stored one.
    site.queue("m1-0000000006.q", &[record(a, 1, "")]);
    site.once();
    assert_eq!(url_row(&db, a).unwrap().updatetag, "v2");
}

#[test]
fn a_queue_file_applied_twice_is_applied_once() {
    let db = TestDb::new();
    let site = Site::new(db.url(), &format!("{NO_CRAWL}Loader.KeepApplied = 1\n"));
    let records = [
        record("http://a.ru/1", 3, ""),
        record("http://a.ru/2", 1, ""),
    ];
    site.queue("m1-0000000007.q", &records);
    site.once();
    assert_eq!(site.files("done"), ["m1-0000000007.q"]);
    // The same file arrives again (a resend, an operator's copy).
    site.queue("m1-0000000007.q", &records);
    site.once();
    assert_eq!(url_row(&db, "http://a.ru/1").unwrap().hits, 3);
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM queue_applied"), 1);
    assert_eq!(
        number(
            &db,
            "SELECT row_count AS n FROM queue_applied WHERE source = 'm1'"
        ),
        2
    );
    assert!(site.log().contains("m1-0000000007.q was applied before"));
    assert!(site.files("").is_empty());
}

#[test]
fn bad_queue_files_go_to_bad_and_nothing_of_them_is_applied() {
    let db = TestDb::new();
    let site = Site::new(db.url(), NO_CRAWL);
    let good = queue_bytes(
        "m1",
        &[
            record("http://a.ru/1", 1, ""),
            record("http://a.ru/2", 1, ""),
        ],
    );
    let text = String::from_utf8(good.clone()).unwrap();
    let mut wrong_id = record("http://a.ru/3", 1, "");
    wrong_id.id ^= 1;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "m1-01.q",
            text.replace("#end records=2\n", "").into_bytes(),
            "line 4: missing trailer",
        ),
        (
            "m1-02.q",
            text.replace("#focuser-queue 1", "#queue 9").into_bytes(),
            "line 1: not a queue file",
        ),
        (
            "m1-03.q",
            // A good record first, then a damaged one: the good one is not applied either.
            text.replacen("\t1\t\t1\n#end", "\tmany\t\t1\n#end", 1)
                .into_bytes(),
            "line 3: bad hits",
        ),
        (
            "m1-04.q",
            queue_bytes("m1", &[record("http://a.ru/4", 1, ""), wrong_id]),
            "is not the id of the URL",
        ),
        (
            "m1-05.q",
            queue_bytes("m2", &[record("http://a.ru/5", 1, "")]),
            "master \"m2\" in the inbox of \"m1\"",
        ),
        (
            "m1-06.q",
            b"\xff\xfe garbage".to_vec(),
            "line 1: not valid UTF-8",
        ),
        ("m1-07.q", Vec::new(), "line 1: empty file"),
    ];
    for (name, bytes, _) in &cases {
        site.drop_file(name, bytes);
    }
    site.drop_file("m1-08.q", &good);
    site.once();
    assert_eq!(
        number(&db, "SELECT COUNT(*) AS n FROM url"),
        2,
        "only m1-08.q"
    );
    assert_eq!(
        number(
            &db,
            "SELECT COUNT(*) AS n FROM queue_applied WHERE file_name <> 'm1-08.q'"
        ),
        0
    );
    assert!(site.files("").is_empty());
    let bad = site.files("bad");
    let log = site.log();
    for (name, _, why) in &cases {
        assert!(
            bad.contains(&name.to_string()),
            "{name} not in bad/: {bad:?}"
        );
        let reason =
            std::fs::read_to_string(site.inbox().join("bad").join(format!("{name}.why"))).unwrap();
        assert!(reason.contains(why), "{name}: {reason}");
        assert!(log.contains(&format!("bad queue file {name}: ")), "{log}");
    }
}

#[test]
fn a_malformed_config_is_a_clear_error() {
    let db = TestDb::new();
    for (extra, expected) in [
        ("Loader.Batch = many\n", "Loader.Batch"),
        ("Loader.Inbox.m1 = inbox/m1\n", "Loader.Inbox.m1"),
        ("Loader.Inbox.bad/name = x\n", "Loader.Inbox"),
        (
            "Url.SteadyMax = 0.5\n",
            "Url.SteadyMax: must be at least Url.SteadyMin",
        ),
        ("Fetch.Backend = ftp\n", "Fetch.Backend"),
        ("Crawl.ClaimTtl = 0\n", "Crawl.ClaimTtl"),
        ("Loader.Typo = 1\n", "Typo"),
        ("Bindings.Enable = 1\n", "set MultiDoc.Enable = 1 too"),
        (
            "Bindings.Dir = segments\nArchive.Dir = segments\n",
            "Bindings.Dir: must not be Archive.Dir",
        ),
    ] {
        let site = Site::new(db.url(), extra);
        let err = site.config_refused(extra);
        assert!(
            err.contains("yacobot.cf") && err.contains(expected),
            "{extra}: {err}"
        );
    }
}

#[test]
fn the_shipped_config_checks_out() {
    let conf = repo_root().join("conf/yacobot.cf");
    let out = check_config(env!("CARGO_BIN_EXE_yacobot"), &conf, &[]);
    // The file parses and validates (its effective config is printed); the start-up checks
    // then find that this machine is not the site (its rootdir is not here).
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("rootdir /var/lib/focuser") && !err.contains("yacobot.cf"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Loader.Inbox.master1 = /var/lib/focuser/recv/inbox/master1")
            && text.contains("Url.SteadyGrow = 1.4"),
        "{text}"
    );
}

#[test]
fn kill_9_during_a_load_applies_the_file_exactly_once_after_restart() {
    let db = TestDb::new();
    let site = Site::new(db.url(), &format!("{NO_CRAWL}debuglevel = 40\n"));
    let n = 150_000u64;
    let records: Vec<_> = (0..n)
        .map(|i| record(&format!("http://d{}.ru/p/{i}?x={i}", i % 97), 1 + i % 3, ""))
        .collect();
    let expected_hits: u64 = records.iter().map(|r| r.hits).sum();
    site.queue("m1-0000000001.q", &records);
    site.queue("m1-0000000002.q", &[record("http://after.ru/", 7, "")]);
    let daemon = site.spawn();
    wait_for("the load to start", Duration::from_secs(30), || {
        site.log().contains("loading m1-0000000001.q (150000 URLs)")
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    drop(daemon);
    // Killed inside the transaction: nothing of it is visible.
    assert!(
        !site.log().contains("applied m1-0000000001.q"),
        "the load finished before the kill"
    );
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM queue_applied"), 0);
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), 0);
    assert_eq!(site.files(""), ["m1-0000000001.q", "m1-0000000002.q"]);
    site.once();
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM queue_applied"), 2);
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), n as i64 + 1);
    assert_eq!(
        number(
            &db,
            "SELECT CAST(SUM(hits) AS SIGNED) AS n FROM url WHERE domain <> 'after.ru'"
        ),
        expected_hits as i64
    );
    assert!(site.files("").is_empty());
}

/// The open files of process `pid` that are `path`.
fn holds_open(pid: u32, path: &std::path::Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
}

#[test]
fn a_queue_file_renamed_over_the_one_being_loaded_is_not_applied_in_its_place() {
    let db = TestDb::new();
    let site = Site::new(db.url(), NO_CRAWL);
    // Large enough that checking it takes a while: the other file comes in meanwhile.
    let n = 60_000u64;
    let first: Vec<_> = (0..n)
        .map(|i| record(&format!("http://d{}.ru/p/{i}", i % 97), 1, ""))
        .collect();
    let other: Vec<_> = (0..1000)
        .map(|i| record(&format!("http://wrong.ru/{i}"), 1, ""))
        .collect();
    let name = "m1-0000000001.q";
    let path = site.queue(name, &first);
    let path = path.canonicalize().unwrap();
    // Written aside (a name starting with `.` is left alone), renamed over the first one.
    let aside = site.inbox().join(".other.tmp");
    std::fs::write(&aside, common::queue_bytes("m1", &other)).unwrap();
    let daemon = site.spawn();
    let pid = daemon.child.id();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !holds_open(pid, &path) {
        assert!(std::time::Instant::now() < until, "{name} never opened");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::fs::rename(&aside, &path).unwrap();
    wait_for(
        "the first file to be applied",
        Duration::from_secs(60),
        || site.log().contains(&format!("applied {name}: ")),
    );
    // What lands is the first file, recorded as itself.
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), n as i64);
    assert_eq!(
        number(
            &db,
            "SELECT COUNT(*) AS n FROM url WHERE domain = 'wrong.ru'"
        ),
        0
    );
    assert_eq!(
        number(&db, "SELECT row_count AS n FROM queue_applied"),
        n as i64
    );
    // The other file is not applied under the first one's name: it is set aside with why.
    wait_for("the other file in bad/", Duration::from_secs(30), || {
        site.files("bad").contains(&name.to_string())
    });
    daemon.stop();
    let why =
        std::fs::read_to_string(site.inbox().join("bad").join(format!("{name}.why"))).unwrap();
    assert!(
        why.contains(&format!("applied before with {n} URLs, this one has 1000")),
        "{why}"
    );
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), n as i64);
}

#[test]
fn bad_queue_files_of_one_name_are_all_kept_in_bad() {
    let db = TestDb::new();
    let site = Site::new(db.url(), NO_CRAWL);
    let text = String::from_utf8(queue_bytes("m1", &[record("http://a.ru/1", 1, "")])).unwrap();
    let cases = [
        (text.replace("#end records=1\n", ""), "missing trailer"),
        (
            text.replace("#focuser-queue 1", "#queue 9"),
            "not a queue file",
        ),
        (
            text.replace("\t1\t\t1\n#end", "\tmany\t\t1\n#end"),
            "bad hits",
        ),
    ];
    for (bytes, _) in &cases {
        site.drop_file("m1-01.q", bytes.as_bytes());
        site.once();
    }
    assert_eq!(
        site.files("bad"),
        [
            "m1-01.q",
            "m1-01.q.2",
            "m1-01.q.2.why",
            "m1-01.q.3",
            "m1-01.q.3.why",
            "m1-01.q.why"
        ]
    );
    for ((bytes, why), name) in cases.iter().zip(["m1-01.q", "m1-01.q.2", "m1-01.q.3"]) {
        let bad = site.inbox().join("bad");
        assert_eq!(&std::fs::read_to_string(bad.join(name)).unwrap(), bytes);
        let reason = std::fs::read_to_string(bad.join(format!("{name}.why"))).unwrap();
        assert!(reason.contains(why), "{name}: {reason}");
    }
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), 0);
}

#[test]
fn a_file_name_that_is_not_utf8_is_set_aside_once_not_warned_at_every_pass() {
    use std::os::unix::ffi::OsStrExt;
    let db = TestDb::new();
    let site = Site::new(db.url(), NO_CRAWL);
    std::fs::create_dir_all(site.inbox()).unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"m1-\xff\xfe.q");
    std::fs::write(site.inbox().join(odd), b"whatever").unwrap();
    let daemon = site.spawn();
    // Every good file applied is one more pass over the inbox.
    for i in 1..=4 {
        let name = format!("m1-000000000{i}.q");
        site.queue(&name, &[record(&format!("http://a.ru/{i}"), 1, "")]);
        wait_for("the file to be applied", Duration::from_secs(30), || {
            site.log().contains(&format!("applied {name}: "))
        });
    }
    daemon.stop();
    let log = site.log();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("m1-\u{fffd}\u{fffd}.q"))
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].contains("bad queue file") && lines[0].contains("not ASCII"),
        "{log}"
    );
    assert!(!site.inbox().join(odd).exists());
    let why = std::fs::read_to_string(site.inbox().join("bad/m1-\u{fffd}\u{fffd}.q.why")).unwrap();
    assert!(
        why.contains("not ASCII") && why.contains(r#"file name: "m1-\xFF\xFE.q""#),
        "{why}"
    );
    assert_eq!(
        std::fs::read(site.inbox().join("bad/m1-\u{fffd}\u{fffd}.q")).unwrap(),
        b"whatever"
    );
}

#[test]
fn a_queue_file_written_in_place_while_it_is_loaded_is_set_aside() {
    let db = TestDb::new();
    let site = Site::new(db.url(), NO_CRAWL);
    let n = 60_000u64;
    let records: Vec<_> = (0..n)
        .map(|i| record(&format!("http://d{}.ru/p/{i}", i % 97), 1, ""))
        .collect();
    let name = "m1-0000000001.q";
    let path = site.queue(name, &records).canonicalize().unwrap();
    let daemon = site.spawn();
    let pid = daemon.child.id();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !holds_open(pid, &path) {
        assert!(std::time::Instant::now() < until, "{name} never opened");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // The same file, written to in place: its last record's hits 1 become 7 (still a good
    // file, of as many records).
    let bytes = std::fs::read(&path).unwrap();
    let at = bytes.windows(5).rposition(|w| w == b"\t1\t\t1").unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_at(&file, b"7", at as u64 + 1).unwrap();
    drop(file);
    wait_for("the file in bad/", Duration::from_secs(60), || {
        site.files("bad").contains(&name.to_string())
    });
    daemon.stop();
    let why =
        std::fs::read_to_string(site.inbox().join("bad").join(format!("{name}.why"))).unwrap();
    assert!(why.contains("changed while it was loaded"), "{why}");
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), 0);
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM queue_applied"), 0);
}

#[test]
fn files_that_cannot_be_moved_away_and_an_unreadable_inbox_are_said_once() {
    let db = TestDb::new();
    let site = Site::new(
        db.url(),
        &format!("{NO_CRAWL}Loader.KeepApplied = 1\nLoader.Inbox.m2 = inbox/m2\n"),
    );
    std::fs::create_dir_all(site.inbox()).unwrap();
    // Where the files would go leads nowhere (root may write anywhere: permissions would not
    // stop it); the inbox of m2 is a file.
    std::os::unix::fs::symlink("/nonexistent/bad", site.inbox().join("bad")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/done", site.inbox().join("done")).unwrap();
    std::fs::write(site.root().join("inbox/m2"), b"").unwrap();
    site.drop_file("m1-0000000000.q", b"not a queue file");
    let daemon = site.spawn();
    // Every file applied is one more pass over the inboxes.
    for i in 1..=4 {
        let name = format!("m1-000000000{i}.q");
        site.queue(&name, &[record(&format!("http://a.ru/{i}"), 1, "")]);
        wait_for("the file to be applied", Duration::from_secs(30), || {
            site.log().contains(&format!("applied {name}: "))
        });
    }
    daemon.stop();
    let log = site.log();
    let lines = |what: &str| -> Vec<&str> { log.lines().filter(|l| l.contains(what)).collect() };
    let bad = lines("m1-0000000000.q");
    assert_eq!(bad.len(), 1, "{log}");
    assert!(
        bad[0].contains("line 1: not a queue file") && bad[0].contains("cannot move it to bad/")
    );
    for i in 1..=4 {
        // Applied, then said once that it stays.
        let applied = lines(&format!("m1-000000000{i}.q"));
        assert_eq!(applied.len(), 2, "{log}");
        assert!(
            applied[1].contains("applied, but cannot move it away"),
            "{log}"
        );
    }
    assert_eq!(lines("inbox m2").len(), 1, "{log}");
    // Nothing was lost: every file is still in the inbox, each applied once.
    assert_eq!(site.files("").len(), 5);
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM queue_applied"), 4);
}
