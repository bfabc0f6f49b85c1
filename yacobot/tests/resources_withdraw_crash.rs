//! `kill -9` of yacobot in the middle of a withdrawal (docs/formats.md "Withdrawing a
//! resource"), and an `enable` that stops one: after a restart every live item has exactly one
//! `DELETE` item, and what an enable stopped comes back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::feeds::{assert_consistent, live, resource_cmd, resource_row, rules, site, store};
use common::withdraw::{
    assert_one_delete_each, fed, hold_row, live_docs, nth_row, pending, running,
};
use common::ArchivedItem;
use diesel::connection::SimpleConnection;
use focuser_formats::segment::Status;
use focuser_schema::models::{FetchStatus, ResStatus};
use focuser_tests::web::WebServer;
use focuser_tests::{wait_for, TestDb};

#[test]
fn resources_kill_9_in_the_middle_of_a_withdrawal_emits_each_delete_once() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let site = site(
        &db,
        &server,
        "Resources.WithdrawBatch = 1\ndebuglevel = 40\n",
    );
    let id = fed(&db, &server, &site, "big", 300);
    let docs = live_docs(c, id);

    // Killed wherever it is once the store holds 50 of its items, then right before the
    // 150th batch (its row locked by the test).
    let start = store(&site).len();
    let row = nth_row(&db, id, 150);
    let (code, out) = resource_cmd(&site, &["disable", "big"]);
    assert_eq!(code, 0, "{out}");
    let daemon = site.spawn();
    wait_for("50 DELETE items", Duration::from_secs(60), || {
        store(&site).len() >= start + 50
    });
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    drop(daemon);
    assert!(store(&site).len() < start + 150);
    let lock = hold_row(&db, row);
    let daemon = site.spawn();
    wait_for("149 DELETE items", Duration::from_secs(60), || {
        store(&site).len() >= start + 149
    });
    // Past its 149th batch, the withdrawal waits for the row: it marks rows deleted, then
    // emits their items.
    wait_for(
        "the withdrawal at the held row",
        Duration::from_secs(30),
        || running(&db, "UPDATE `vr_data` SET `data_status`"),
    );
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    drop(daemon);
    drop(lock);
    assert_eq!(store(&site).len(), start + 149, "past the locked row");
    assert_eq!(resource_row(c, id).res_status, ResStatus::Withdrawing);
    // The last batch's item is in the store, its row not yet marked emitted.
    assert_eq!(pending(&db, id), 1);
    site.once();
    let log = site.log();
    assert!(
        log.contains(
            "an interrupted run left 1 changes not marked emitted; 0 of them were not in the store"
        ),
        "{log}"
    );
    assert_one_delete_each(&store(&site)[start..], &docs);
    assert_eq!(resource_row(c, id).res_status, ResStatus::Disabled);
    assert_consistent(c, &site, id);

    // Back, then killed at the end: every DELETE in the store, the last batch not marked
    // (the final transaction waits on vr_update_info, which the test holds).
    assert_eq!(resource_cmd(&site, &["enable", "big"]).0, 0);
    site.once();
    assert_eq!(live(c, id).len(), 300);
    let config = std::fs::read_to_string(&site.config).unwrap();
    std::fs::write(
        &site.config,
        config.replace("WithdrawBatch = 1\n", "WithdrawBatch = 100\n"),
    )
    .unwrap();
    let start = store(&site).len();
    assert_eq!(resource_cmd(&site, &["disable", "big"]).0, 0);
    let mut lock = db.conn();
    lock.batch_execute("LOCK TABLES vr_update_info WRITE")
        .unwrap();
    let daemon = site.spawn();
    wait_for("300 DELETE items", Duration::from_secs(60), || {
        store(&site).len() >= start + 300
    });
    wait_for("the end of the withdrawal", Duration::from_secs(30), || {
        running(&db, "INSERT INTO `vr_update_info`")
    });
    assert_eq!(pending(&db, id), 100, "the last batch is marked already");
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    drop(daemon);
    drop(lock);
    site.once();
    assert!(
        site.log().contains("an interrupted run left 100 changes not marked emitted; 0 of them were not in the store"),
        "{}",
        site.log()
    );
    assert_one_delete_each(&store(&site)[start..], &docs);
    let r = resource_row(c, id);
    assert_eq!(
        (r.res_status, r.fetch_status),
        (ResStatus::Disabled, FetchStatus::Ok)
    );
    assert_consistent(c, &site, id);
}

#[test]
fn resources_enable_during_a_withdrawal_stops_it_and_the_run_brings_back_what_it_withdrew() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let site = site(&db, &server, "Resources.WithdrawBatch = 1\n");
    let id = fed(&db, &server, &site, "shop", 30);
    let docs = live_docs(c, id);
    let start = store(&site).len();
    assert_eq!(resource_cmd(&site, &["disable", "shop"]).0, 0);
    // The withdrawal waits at the 10th row; `enable` waits for the withdrawal's transaction.
    let lock = hold_row(&db, nth_row(&db, id, 10));
    let daemon = site.spawn();
    wait_for(
        "the withdrawal at the held row",
        Duration::from_secs(30),
        || running(&db, "UPDATE `vr_data` SET `data_status`"),
    );
    let mut enable = site
        .command()
        .args(["resource", "enable", "shop"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("enable waiting", Duration::from_secs(30), || {
        running(&db, "UPDATE `vr_resource` SET `res_status`")
    });
    drop(lock);
    assert!(enable.wait().unwrap().success());
    wait_for("the items back", Duration::from_secs(60), || {
        let r = resource_row(&mut db.conn(), id);
        live(&mut db.conn(), id).len() == 30 && !r.manual_update && r.claimed_by.is_none()
    });
    daemon.stop();
    let log = site.log();
    assert!(log.contains("withdrawal stopped after"), "{log}");
    let items = &store(&site)[start..];
    let withdrawn: Vec<&ArchivedItem> = items
        .iter()
        .filter(|i| i.status == Status::Delete)
        .collect();
    assert!(
        (10..30).contains(&withdrawn.len()),
        "{} DELETE items: the withdrawal did not stop",
        withdrawn.len()
    );
    // Each withdrawn item once, and back: its DELETE, then its UPDATE; the others untouched.
    let gone: BTreeSet<String> = withdrawn.iter().map(|i| i.doc_id.clone()).collect();
    assert_eq!(gone.len(), withdrawn.len(), "a DELETE item twice");
    assert!(gone.is_subset(&docs));
    let back: Vec<&ArchivedItem> = items
        .iter()
        .filter(|i| i.status == Status::Update)
        .collect();
    let back: BTreeSet<String> = back.iter().map(|i| i.doc_id.clone()).collect();
    assert_eq!(back, gone);
    assert_eq!(items.len(), 2 * gone.len());
    assert_eq!(resource_row(c, id).res_status, ResStatus::Enabled);
    assert_consistent(c, &site, id);
}
