//! Item digest files (docs/formats.md "Item digest file"): an automatic run diffs against the
//! file its resource's previous run left, a manual run reads `vr_data`, and a damaged or
//! stale file is refused and `vr_data` read instead; a run that lost its claim writes nothing —
//! through `yacobot --once`, real MariaDB.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use std::time::Duration;

use common::feeds::{
    ask, assert_consistent, count, feed_xml, items, resource, resource_row, rules, serve_feed,
    serve_sitemap, site, store, It,
};
use common::{number, sql, Site};
use focuser_formats::segment::Status;
use focuser_schema::models::FetchStatus;
use focuser_tests::wait_for;
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

fn digest_file(site: &Site, id: u32) -> PathBuf {
    site.root().join(format!("segments-vr/digests/{id}.dig"))
}

/// One resource of one feed of 20 items (`frequency = 0`: due at every automatic scan).
fn shop(db: &TestDb, server: &WebServer) -> (u32, Vec<It>) {
    let c = &mut db.conn();
    rules(c);
    let sitemap = serve_sitemap(server, "d.test", &["/feed.xml"]);
    let id = resource(c, "shop", &[("partner", sitemap)]);
    let feed = items("k", 20);
    serve_feed(server, "d.test", "/feed.xml", &feed);
    (id, feed)
}

fn detail(db: &TestDb, id: u32) -> String {
    let r = resource_row(&mut db.conn(), id);
    assert_eq!(r.fetch_status, FetchStatus::Ok, "{:?}", r.fetch_detail);
    r.fetch_detail.unwrap_or_default()
}

#[test]
fn resources_automatic_runs_diff_against_the_digest_file_manual_runs_read_vr_data() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let (id, mut feed) = shop(&db, &server);
    let site = site(&db, &server, "");
    site.once();
    assert!(detail(&db, id).starts_with("items: 20 new"));
    assert!(digest_file(&site, id).exists(), "{}", site.log());

    // Behind the worker's back, an unchanged item's stored MD5 is altered by hand: an
    // automatic run trusts its digest file and does not see it...
    sql(
        &db,
        &format!(
            "UPDATE vr_data SET md5_sum = REPEAT('0', 32) WHERE res_id = {id} AND keyword = 'k5'"
        ),
    );
    // ... and finds exactly the feed's changes: 2 changed, 1 removed, 1 added, with the row of
    // one of the changed items deleted by hand (it is inserted again).
    feed[0].2 = "1000.00".into();
    feed[1].1 = "Another title".into();
    feed.remove(19);
    feed.push(("k-new".into(), "New".into(), "1.00".into()));
    serve_feed(&server, "d.test", "/feed.xml", &feed);
    sql(
        &db,
        &format!("DELETE FROM vr_data WHERE res_id = {id} AND keyword = 'k1'"),
    );
    let before = store(&site).len();
    site.once();
    assert!(
        detail(&db, id)
            .ends_with("items: 1 new, 2 changed, 1 deleted, 17 unchanged, 0 failed keys"),
        "{}",
        detail(&db, id)
    );
    let new = store(&site)[before..].to_vec();
    assert_eq!(
        (count(&new, Status::Update), count(&new, Status::Delete)),
        (3, 1),
        "{new:#?}"
    );
    assert_eq!(
        number(
            &db,
            &format!("SELECT COUNT(*) AS n FROM vr_data WHERE res_id = {id} AND md5_sum = REPEAT('0', 32)")
        ),
        1,
        "the automatic run read vr_data instead of its digest file"
    );

    // A manual run reads vr_data: the altered MD5 no longer matches, so the item is
    // rewritten (and emitted again, the same content: the price of a hand edit).
    ask(&mut db.conn(), id);
    let before = store(&site).len();
    site.once();
    assert!(
        detail(&db, id)
            .ends_with("items: 0 new, 1 changed, 0 deleted, 19 unchanged, 0 failed keys"),
        "{}",
        detail(&db, id)
    );
    assert_eq!(store(&site).len(), before + 1);
    assert_eq!(
        number(
            &db,
            &format!("SELECT COUNT(*) AS n FROM vr_data WHERE res_id = {id} AND md5_sum = CONVERT(MD5(content) USING ascii) COLLATE ascii_bin")
        ),
        21,
        "every row's MD5 is its content's again (20 live, 1 deleted)"
    );

    // And the next automatic run, on the manual run's file, changes nothing.
    let before = store(&site).len();
    site.once();
    assert!(detail(&db, id).ends_with("0 new, 0 changed, 0 deleted, 20 unchanged, 0 failed keys"));
    assert_eq!(store(&site).len(), before);
}

#[test]
fn resources_a_damaged_or_stale_digest_file_is_refused_and_vr_data_read() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let (id, mut feed) = shop(&db, &server);
    let site = site(&db, &server, "");
    site.once();
    let path = digest_file(&site, id);
    let first_file = std::fs::read(&path).unwrap();

    // Damaged: a flipped byte fails the file's CRC; the run says so, reads vr_data, and its
    // result is exact.
    let mut bad = first_file.clone();
    bad[30] ^= 0x40;
    std::fs::write(&path, &bad).unwrap();
    feed[2].2 = "2.22".into();
    serve_feed(&server, "d.test", "/feed.xml", &feed);
    site.once();
    assert!(detail(&db, id).ends_with("0 new, 1 changed, 0 deleted, 19 unchanged, 0 failed keys"));
    let log = site.log();
    assert!(
        log.contains(&format!("{id}.dig: fails its CRC"))
            && log.contains("reading vr_data instead"),
        "{log}"
    );
    assert_consistent(&mut db.conn(), &site, id);

    // Stale: the first run's file put back. It describes a run that is not the previous one,
    // so it is not trusted: the item changed since then is not taken for a change again,
    // and the one changed now is found.
    std::fs::write(&path, &first_file).unwrap();
    feed[3].2 = "3.33".into();
    serve_feed(&server, "d.test", "/feed.xml", &feed);
    let before = store(&site).len();
    site.once();
    assert!(
        detail(&db, id).ends_with("0 new, 1 changed, 0 deleted, 19 unchanged, 0 failed keys"),
        "{}",
        detail(&db, id)
    );
    assert_eq!(store(&site).len(), before + 1);
    assert_consistent(&mut db.conn(), &site, id);

    // Not a file at all: refused the same way.
    std::fs::write(&path, b"").unwrap();
    site.once();
    assert!(detail(&db, id).ends_with("0 new, 0 changed, 0 deleted, 20 unchanged, 0 failed keys"));
    assert!(site.log().contains("shorter than a header"));

    // A database restored from a backup reuses run ids: the previous run has the file's id
    // but not its start, so the file is not trusted (the MD5 altered by hand is seen).
    sql(
        &db,
        &format!(
            "UPDATE vr_data SET md5_sum = REPEAT('0', 32) WHERE res_id = {id} AND keyword = 'k7'"
        ),
    );
    sql(
        &db,
        &format!("UPDATE process_timestamp SET fetch_start = fetch_start - INTERVAL 1 DAY WHERE res_id = {id} ORDER BY id DESC LIMIT 1"),
    );
    site.once();
    assert!(
        detail(&db, id).ends_with("0 new, 1 changed, 0 deleted, 19 unchanged, 0 failed keys"),
        "{}",
        detail(&db, id)
    );
}

/// A run whose claim lapsed and was taken while its feeds were fetched writes nothing: the
/// claim is checked, with the resource's row locked, in the transaction of its changes.
#[test]
fn resources_a_run_that_lost_its_claim_before_its_write_writes_nothing() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let (id, feed) = shop(&db, &server);
    // The feed's delay is the whole window for the two statements below, each on a new
    // connection, after the claim is seen: 10 s for a loaded machine (within the site's
    // `Fetch.Timeout = 20`).
    server.set(
        "d.test",
        "/feed.xml",
        Behaviour::delay(
            std::time::Duration::from_secs(10),
            Behaviour::fixed(200, "application/xml", feed_xml(&feed)),
        ),
    );
    let site = site(&db, &server, "");
    let child = site.command().arg("--once").spawn().unwrap();
    let claimed =
        format!("SELECT COUNT(*) AS n FROM vr_resource WHERE id = {id} AND claimed_by IS NOT NULL");
    wait_for("the run's claim", Duration::from_secs(10), || {
        number(&db, &claimed) == 1
    });
    // While its feed is on the way, another worker takes the resource, and has a change
    // written and not yet emitted (its step 1 done).
    sql(
        &db,
        &format!("UPDATE vr_resource SET claimed_by = 'other/1' WHERE id = {id}"),
    );
    sql(
        &db,
        &format!("INSERT INTO vr_data (res_id, keyword, md5_sum, doc_id, status) VALUES ({id}, 'theirs', REPEAT('a', 32), 'x', 0)"),
    );
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", site.log());
    // Nothing of its own written, and the other worker's change not marked emitted.
    assert_eq!(
        number(
            &db,
            &format!("SELECT COUNT(*) AS n FROM vr_data WHERE res_id = {id} AND keyword = 'theirs' AND status = 0")
        ),
        1,
        "{}",
        site.log()
    );
    assert_eq!(
        number(
            &db,
            &format!("SELECT COUNT(*) AS n FROM vr_data WHERE res_id = {id}")
        ),
        1,
        "{}",
        site.log()
    );
    assert_eq!(
        resource_row(&mut db.conn(), id).claimed_by.as_deref(),
        Some("other/1")
    );
    assert!(store(&site).is_empty());
    assert!(
        site.log()
            .contains("lost its claim before its write: nothing written"),
        "{}",
        site.log()
    );
    assert!(!digest_file(&site, id).exists());
}
