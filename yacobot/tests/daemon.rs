//! yacobot as a daemon: its workers together, /metrics and /status.json, SIGUSR1 sealing the
//! archive's segment, SIGUSR2 reloading, SIGTERM stopping cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{number, record, Site};
use focuser_tests::TestDb;
use focuser_tests::{free_port, get, metric, wait_for};
use nix::sys::signal::Signal;

#[test]
fn queue_to_archive_with_figures_and_signals() {
    let db = TestDb::new();
    let port = free_port();
    let site = Site::new(
        db.url(),
        &format!("status_listen = {port}\nstatus_sample = 1\nLoader.KeepApplied = 1\n"),
    );
    site.page("w.ru/0", "page 0");
    site.page("w.ru/1?sid=5", "page 1"); // sid is new here: kept, recorded significant
    site.page("w.ru/2", "page 2");
    site.queue(
        "m1-0000000001.q",
        &[
            record("http://w.ru/0", 2, ""),
            record("http://w.ru/1?sid=5", 1, ""),
            record("http://w.ru/2", 1, ""),
            record("http://w.ru/missing", 1, ""),
        ],
    );
    let daemon = site.spawn();
    wait_for("the pages", Duration::from_secs(30), || {
        metric(port, "focuser_yacobot_pages_total") == Some(3.0)
    });
    wait_for("the gone page", Duration::from_secs(30), || {
        metric(port, "focuser_yacobot_gone_total") == Some(1.0)
    });
    assert_eq!(metric(port, "focuser_yacobot_queue_files_total"), Some(1.0));
    assert_eq!(metric(port, "focuser_yacobot_urls_loaded_total"), Some(4.0));
    assert_eq!(
        metric(port, "focuser_yacobot_arg_rules_new_total"),
        Some(1.0)
    );
    assert_eq!(metric(port, "focuser_yacobot_bytes_total"), Some(18.0));
    assert!(metric(port, "focuser_yacobot_archive_bytes").unwrap() > 0.0);
    // Every segment is young: the retention floor keeps them all.
    assert_eq!(
        metric(port, "focuser_yacobot_archive_floor_segment"),
        Some(1.0)
    );
    assert_eq!(metric(port, "focuser_yacobot_in_flight"), Some(0.0));
    wait_for("the due count", Duration::from_secs(30), || {
        metric(port, "focuser_yacobot_due_urls") == Some(0.0)
    });
    let status = get(port, "/status.json");
    for expected in [
        "\"label\": \"queue files applied\"",
        "\"id\": \"queue_files\"",
        "m1-0000000001.q",
        "\"figure\": \"yacobot_pages_total\"",
    ] {
        assert!(status.contains(expected), "{expected} not in {status}");
    }

    // SIGUSR1 seals the active segment; the next items go to a new one.
    let segments = site.root().join("segments");
    assert!(!segments.join("item_0000000002.dat").exists());
    daemon.signal(Signal::SIGUSR1);
    wait_for("the seal", Duration::from_secs(10), || {
        segments.join("item_0000000002.dat").exists()
    });
    wait_for("its log line", Duration::from_secs(10), || {
        site.log().contains("archive: segment sealed (SIGUSR1)")
    });
    assert_eq!(
        metric(port, "focuser_yacobot_segments_sealed_total"),
        Some(1.0)
    );

    // SIGUSR2 reloads; a key that needs a restart is named.
    let cf = std::fs::read_to_string(&site.config).unwrap();
    std::fs::write(&site.config, cf.replace("node = yb1", "node = yb2")).unwrap();
    daemon.signal(Signal::SIGUSR2);
    wait_for("the reload", Duration::from_secs(10), || {
        site.log()
            .contains("changed keys that take effect only at restart (running values kept): node")
    });
    // A bad config is refused and the daemon keeps going.
    std::fs::write(&site.config, format!("{cf}Crawl.Idle = 0\n")).unwrap();
    daemon.signal(Signal::SIGUSR2);
    wait_for("the refusal", Duration::from_secs(10), || {
        site.log().contains("reload rejected")
    });

    // Still at work: a second file is loaded and crawled.
    site.page("w.ru/3", "page 3");
    site.queue("m1-0000000002.q", &[record("http://w.ru/3", 1, "")]);
    wait_for("the second file", Duration::from_secs(30), || {
        metric(port, "focuser_yacobot_pages_total") == Some(4.0)
    });
    assert_eq!(site.files("done"), ["m1-0000000001.q", "m1-0000000002.q"]);
    // The page counter moves when a page is fetched; its item is readable once the archive's
    // batch is synced, a moment later.
    wait_for(
        "the third page in the archive",
        Duration::from_secs(10),
        || common::archive_items(&segments).len() >= 5,
    );
    let items = common::archive_items(&segments);
    assert_eq!(items.len(), 5);
    assert_eq!(items[4].content, "page 3");
    daemon.stop();
    assert!(site.log().contains("yacobot stopped"));
    assert_eq!(
        number(
            &db,
            "SELECT COUNT(*) AS n FROM url WHERE claimed_by IS NOT NULL"
        ),
        0
    );
}
