//! `kill -9` of yacobot while it binds an archive of pages, with a real reader shipping the
//! bindings store to a real `reader --recv` (both killed too): at moments of the worker's own
//! choosing, and inside a batch's transaction (its items appended and synced, the position
//! not yet moved). After the restarts every page's binding is in the store once, the position
//! is at the store's end, and the receiver has every binding once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::bindings::{direct_v1, load, rows, shipped};
use common::multidoc::{id_of, page};
use common::reader::{self, Reader};
use common::{archive_items, due_url, number, Site};
use diesel::connection::SimpleConnection;
use focuser_formats::segment::{Cursor, Position, Status};
use focuser_schema::models::BindingPosition;
use focuser_tests::{wait_for, TestDb};
use nix::sys::signal::Signal;

const DOMAINS: usize = 3;
const PER_DOMAIN: usize = 60;
const TOTAL: usize = DOMAINS * PER_DOMAIN;

/// A receiver group of one (`reader --recv`) and a sender of the bindings store to it.
fn readers(site: &Site) -> (Reader, Reader) {
    reader::pair(
        site.root(),
        "adserver",
        "yb1-bindings",
        "bindings",
        "Store.CheckInterval = 3600\nIndex.0.Statuses = UPDATE, DELETE\n",
    )
}

/// Runs the daemon until `n` pages have their binding, then kills it with SIGKILL.
fn kill_after(db: &TestDb, site: &Site, n: usize) {
    let daemon = site.spawn();
    wait_for("pages bound", Duration::from_secs(120), || {
        rows(db).len() >= n
    });
    daemon.signal(Signal::SIGKILL);
    drop(daemon);
}

/// Runs the daemon until a batch waits to move the bindings position (its items appended and
/// synced, its rows written in its transaction), then kills it there.
fn kill_in_a_transaction(db: &TestDb, site: &Site) {
    let before = rows(db).len();
    let daemon = site.spawn();
    wait_for("a batch committed", Duration::from_secs(120), || {
        rows(db).len() > before
    });
    let mut lock = db.conn();
    lock.batch_execute("BEGIN; SELECT * FROM binding_position FOR UPDATE")
        .unwrap();
    let committed = rows(db).len();
    let waiting = format!(
        "SELECT COUNT(*) AS n FROM information_schema.processlist \
         WHERE db = '{}' AND info LIKE 'REPLACE%binding_position%'",
        db.name()
    );
    wait_for(
        "a batch moving the bindings position",
        Duration::from_secs(60),
        || number(db, &waiting) > 0,
    );
    daemon.signal(Signal::SIGKILL);
    drop(daemon);
    lock.batch_execute("ROLLBACK").unwrap();
    let left = rows(db);
    assert_eq!(left.len(), committed, "a killed batch left rows");
    let uncommitted = shipped(site)
        .iter()
        .filter(|i| !left.contains_key(&u64::from_str_radix(&i.doc_id, 16).unwrap()))
        .count();
    assert!(
        uncommitted > 0,
        "the killed batch's items were not appended before its transaction"
    );
    assert!(committed < TOTAL);
}

#[test]
fn bindings_kill_9_ships_every_binding_once() {
    let db = TestDb::new();
    let crawl = "Loader.Enable = 0\nQargfilter.Enable = 0\nSegment.MaxItems = 40\n\
                 Crawl.ClaimBatch = 100\n";
    let site = Site::new(db.url(), crawl);
    let mut urls = Vec::new();
    for d in 0..DOMAINS {
        for i in 0..PER_DOMAIN {
            let path = format!("d{d}.test/a/{i}.html");
            site.page(&path, &page(i).1);
            let url = format!("http://{path}");
            due_url(&db, &url, 1, 3);
            urls.push(url);
        }
    }
    site.once();
    assert_eq!(site.archive().len(), TOTAL);
    load(&site, "direct", "direct.tsv", direct_v1().as_bytes());
    let cf = std::fs::read_to_string(&site.config).unwrap();
    std::fs::write(
        &site.config,
        format!(
            "{cf}Crawl.Enable = 0\nMultiDoc.Enable = 1\nMultiDoc.Batch = 7\nBindings.Enable = 1\n"
        ),
    )
    .unwrap();
    let (mut recv, mut send) = readers(&site);

    kill_after(&db, &site, 20);
    kill_in_a_transaction(&db, &site);
    send.kill9_and_restart(&[]);
    kill_after(&db, &site, 80);
    recv.kill9_and_restart(&["--recv"]);
    kill_in_a_transaction(&db, &site);
    kill_after(&db, &site, 140);
    site.once();
    assert!(
        site.log().contains(
            "were appended by a batch that was not committed; they are not appended again"
        ),
        "{}",
        site.log()
    );

    // The store: one UPDATE per page, the stored binding.
    let stored = rows(&db);
    assert_eq!(stored.len(), TOTAL);
    let items = shipped(&site);
    let docs: BTreeSet<&str> = items.iter().map(|i| i.doc_id.as_str()).collect();
    assert_eq!(items.len(), TOTAL, "a binding appended twice");
    assert_eq!(docs.len(), TOTAL);
    for i in &items {
        assert_eq!(i.status, Status::Update);
        let id = u64::from_str_radix(&i.doc_id, 16).unwrap();
        assert_eq!(i.content, stored[&id].item);
    }
    for url in &urls {
        assert!(docs.contains(format!("{:016x}", id_of(url)).as_str()));
    }
    // The position at the store's end.
    let mut cursor = Cursor::new(&site.root().join("bindings"), Position::START, None);
    while cursor.next().unwrap().is_some() {}
    let end = cursor.position();
    let pos = BindingPosition::find(
        &mut db.conn(),
        "yb1",
        &site.root().join("bindings").display().to_string(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(pos.place(), (end.file_id, end.item_idx));

    // The ad-server group: every binding once.
    let received = site.root().join("adserver/received");
    wait_for("every binding received", Duration::from_secs(120), || {
        received.is_dir() && archive_items(&received).len() >= TOTAL
    });
    let got = archive_items(&received);
    assert_eq!(got.len(), TOTAL, "a binding received twice");
    let mut got_docs: Vec<&str> = got.iter().map(|i| i.doc_id.as_str()).collect();
    got_docs.sort_unstable();
    got_docs.dedup();
    assert_eq!(got_docs.len(), TOTAL);
    for i in &got {
        let id = u64::from_str_radix(&i.doc_id, 16).unwrap();
        assert_eq!(i.content, stored[&id].item);
    }
}
