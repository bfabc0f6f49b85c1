//! `kill -9` of yacobot while its multidoc worker analyses an archive of hundreds of pages: at
//! moments of its own choosing, and inside a batch's transaction (its counts and rows written,
//! the position not yet moved). After the restarts every page is counted once into its
//! domain's template evidence, every URL has its row, and the position is at the archive's end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::multidoc::{domains, fingerprints, id_of, page, page_count, pages_by_id};
use common::{due_url, number, Site};
use diesel::connection::SimpleConnection;
use focuser_formats::segment::{Cursor, Position};
use focuser_schema::models::{MultidocPosition, PageOutcome};
use focuser_tests::{wait_for, TestDb};
use nix::sys::signal::Signal;

const DOMAINS: usize = 4;
const PER_DOMAIN: usize = 150;
const TOTAL: usize = DOMAINS * PER_DOMAIN;

fn domain(d: usize) -> String {
    format!("d{d}.test")
}

/// Runs the daemon until `rows` pages have their row, then kills it with SIGKILL.
fn kill_after(db: &TestDb, site: &Site, rows: i64) {
    let daemon = site.spawn();
    wait_for("pages analysed", Duration::from_secs(120), || {
        page_count(db) >= rows
    });
    daemon.signal(Signal::SIGKILL);
    drop(daemon);
}

/// Runs the daemon until a batch waits to move the position (its counts and rows written in
/// its transaction), then kills it there: the batch is rolled back whole.
fn kill_in_a_transaction(db: &TestDb, site: &Site) {
    let before = page_count(db);
    let daemon = site.spawn();
    // Past its start (which waits for the position's row too), far from the archive's end.
    wait_for("a batch committed", Duration::from_secs(120), || {
        page_count(db) > before
    });
    // The position's row held: the next batch's last statement waits for it.
    let mut lock = db.conn();
    lock.batch_execute("BEGIN; SELECT * FROM multidoc_position FOR UPDATE")
        .unwrap();
    let committed = page_count(db);
    let waiting = format!(
        "SELECT COUNT(*) AS n FROM information_schema.processlist \
         WHERE db = '{}' AND info LIKE 'UPDATE%multidoc_position%'",
        db.name()
    );
    wait_for(
        "a batch moving the position",
        Duration::from_secs(60),
        || number(db, &waiting) > 0,
    );
    daemon.signal(Signal::SIGKILL);
    drop(daemon);
    lock.batch_execute("ROLLBACK").unwrap();
    assert_eq!(page_count(db), committed, "a killed batch left rows");
    assert!(committed < TOTAL as i64);
}

#[test]
fn multidoc_kill_9_counts_every_page_once() {
    let db = TestDb::new();
    let crawl = "Loader.Enable = 0\nQargfilter.Enable = 0\nSegment.MaxItems = 50\n\
                 Crawl.ClaimBatch = 100\n";
    let site = Site::new(db.url(), crawl);
    let mut urls = Vec::new();
    for d in 0..DOMAINS {
        for i in 0..PER_DOMAIN {
            let path = format!("{}/a/{i}.html", domain(d));
            site.page(&path, &page(i).1);
            let url = format!("http://{path}");
            due_url(&db, &url, 1, 3);
            urls.push(url);
        }
    }
    // The archive made first, without the worker.
    site.once();
    assert_eq!(site.archive().len(), TOTAL);

    let cf = std::fs::read_to_string(&site.config).unwrap();
    std::fs::write(
        &site.config,
        format!("{cf}Crawl.Enable = 0\nMultiDoc.Enable = 1\nMultiDoc.Batch = 7\n"),
    )
    .unwrap();
    kill_after(&db, &site, 30);
    kill_in_a_transaction(&db, &site);
    kill_after(&db, &site, 200);
    kill_in_a_transaction(&db, &site);
    kill_after(&db, &site, 400);
    site.once();

    let rows = pages_by_id(&db);
    assert_eq!(rows.len(), TOTAL, "{}", site.log());
    for url in &urls {
        let r = &rows[&id_of(url)];
        assert_eq!(r.outcome, PageOutcome::Analysed, "{url}");
        assert!(r.counted_at.is_some(), "{url}");
    }
    let counted = domains(&db);
    assert_eq!(counted.len(), DOMAINS);
    let shared = common::multidoc::shared_fingerprints();
    for d in &counted {
        assert_eq!(d.pages, PER_DOMAIN as u32, "{d:?}");
        let fps = fingerprints(&db, &d.domain);
        assert_eq!(d.fingerprints as usize, fps.len(), "{d:?}");
        for f in fps {
            let once = if shared.contains(&f.fingerprint) {
                PER_DOMAIN as u32
            } else {
                1
            };
            assert_eq!(f.pages, once, "{}: {f:?}", d.domain);
        }
    }

    // At the archive's end.
    let dir = site.root().join("segments");
    let mut cursor = Cursor::new(&dir, Position::START, None);
    while cursor.next().unwrap().is_some() {}
    let end = cursor.position();
    let all = MultidocPosition::all(&mut db.conn()).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].place(), (end.file_id, end.item_idx));
    assert_eq!(all[0].counted(), all[0].place());
    let show = common::multidoc::multidoc_cmd(&site, &["show"]);
    assert!(
        show.contains(&format!("at {end}, counted up to {end}")),
        "{show}"
    );
    assert!(show.contains("; 0 items behind"), "{show}");
}
