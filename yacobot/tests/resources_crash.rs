//! `kill -9` of yacobot in the resources write stage, after its items were emitted and before
//! `vr_data` says so (the moment the write protocol exists for): after a restart, `vr_data`
//! and the store agree, no item is lost and none is emitted twice for the same change.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::feeds::{
    ask, assert_consistent, items, live, resource, resource_row, rules, serve_feed, serve_sitemap,
    site, store, It,
};
use common::number;
use diesel::connection::SimpleConnection;
use diesel::mysql::MysqlConnection;
use focuser_schema::models::{FetchStatus, ProcessTimestamp};
use focuser_tests::wait_for;
use focuser_tests::web::WebServer;
use focuser_tests::TestDb;

/// Holds `vr_update_info` locked, so that the run's last transaction (the only statement that
/// writes it, when the number of live items changed) waits, after the items are in the store.
/// (Not the resource's row: the run's first transaction checks its claim on that row.)
fn hold_the_last_transaction(db: &TestDb) -> MysqlConnection {
    let mut c = db.conn();
    c.batch_execute("LOCK TABLES vr_update_info WRITE").unwrap();
    c
}

/// Starts the daemon, lets the run of `id` go as far as its last transaction, kills it.
fn kill_before_the_end(
    db: &TestDb,
    site: &common::Site,
    id: u32,
    runs_before: i64,
    items_after: usize,
) {
    // The run's fetches (robots.txt, sitemap, feed) come `Fetch.HostDelay` apart: the time the
    // lock below has to land in after the run row appears, a few queries on a new connection.
    // 4 s for a loaded machine; only this daemon has it, the other runs keep the site's 1 s.
    let config = std::fs::read_to_string(&site.config).unwrap();
    let slow = config.replace("Fetch.HostDelay = 1\n", "Fetch.HostDelay = 4\n");
    assert_ne!(slow, config);
    std::fs::write(&site.config, slow).unwrap();
    let daemon = site.spawn();
    let runs = format!("SELECT COUNT(*) AS n FROM process_timestamp WHERE res_id = {id}");
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while number(db, &runs) <= runs_before {
        assert!(
            std::time::Instant::now() < until,
            "no run started:\n{}",
            site.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let lock = hold_the_last_transaction(db);
    let pending = format!("SELECT COUNT(*) AS n FROM vr_data WHERE res_id = {id} AND status = 0");
    wait_for("the items in the store", Duration::from_secs(60), || {
        store(site).len() >= items_after
    });
    assert!(
        number(db, &pending) > 0,
        "nothing pending: the run ended before the lock"
    );
    std::thread::sleep(Duration::from_millis(200));
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    drop(daemon);
    drop(lock);
    std::fs::write(&site.config, config).unwrap();
    assert_eq!(store(site).len(), items_after);
}

#[test]
fn resources_kill_9_in_the_write_stage_loses_nothing_and_emits_nothing_twice() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let sitemap = serve_sitemap(&server, "k.test", &["/feed.xml"]);
    let mut feed: Vec<It> = items("k", 3000);
    serve_feed(&server, "k.test", "/feed.xml", &feed);
    let id = resource(c, "crash", &[("partner", sitemap)]);
    // A host delay gives the test time to take its lock between the claim and the end.
    let site = site(&db, &server, "Fetch.HostDelay = 1\ndebuglevel = 40\n");

    // The first run, killed with its 3000 inserts emitted but not marked.
    kill_before_the_end(&db, &site, id, 0, 3000);
    assert_eq!(resource_row(c, id).fetch_status, FetchStatus::Running);
    site.once();
    let log = site.log();
    assert!(
        log.contains("an interrupted run left 3000 changes not marked emitted; 0 of them were not in the store"),
        "{log}"
    );
    let r = resource_row(c, id);
    assert_eq!(r.fetch_status, FetchStatus::Ok, "{:?}", r.fetch_detail);
    assert_eq!(live(c, id).len(), 3000);
    assert_eq!(store(&site).len(), 3000, "emitted twice");
    assert_consistent(c, &site, id);
    let runs = ProcessTimestamp::recent(c, id, 5).unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(
        runs[1].status,
        FetchStatus::Error,
        "the killed run is not shown as failed"
    );

    // A run with changes (3 modified, 2 removed, 1 added), killed the same way.
    for it in feed.iter_mut().take(3) {
        it.2 = "0.01".into();
    }
    feed.truncate(2998);
    feed.push(("k-new".into(), "New".into(), "1".into()));
    serve_feed(&server, "k.test", "/feed.xml", &feed);
    ask(c, id);
    kill_before_the_end(&db, &site, id, 2, 3006);
    site.once();
    let items = store(&site);
    assert_eq!(items.len(), 3006, "emitted twice or lost");
    assert_eq!(live(c, id).len(), 2999);
    assert_consistent(c, &site, id);
    let r = resource_row(c, id);
    assert_eq!(r.fetch_status, FetchStatus::Ok);
    assert!(!r.manual_update);

    // Killed at random moments of further runs: still consistent.
    for (n, wait_ms) in [150u64, 900, 1700].into_iter().enumerate() {
        feed[n].1 = format!("changed {n}");
        serve_feed(&server, "k.test", "/feed.xml", &feed);
        let daemon = site.spawn();
        std::thread::sleep(Duration::from_millis(wait_ms));
        daemon.signal(nix::sys::signal::Signal::SIGKILL);
        drop(daemon);
    }
    ask(c, id);
    site.once();
    assert_consistent(c, &site, id);
    assert_eq!(live(c, id).len(), 2999);
}
