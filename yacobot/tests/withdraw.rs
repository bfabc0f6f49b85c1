//! Withdrawal (docs/design.md#yacobot-withdrawal): URLs marked in `url.withdraw` are announced
//! with one `DELETE` item each in the archive and removed, across `kill -9` at any moment —
//! in particular after the items are durable and before the rows are removed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{number, record, sql, url_row, Site};
use diesel::connection::SimpleConnection;
use diesel::RunQueryDsl;
use focuser_formats::segment::Status;
use focuser_formats::urls;
use focuser_schema::models::{NewUrl, Url, WithdrawReason};
use focuser_tests::{wait_for, TestDb};
use nix::sys::signal::Signal;

const CRAWL_ONLY: &str = "Loader.Enable = 0\nQargfilter.Enable = 0\n";

/// `n` URLs in the frontier, marked as merged away; their ids.
fn marked(db: &TestDb, n: usize) -> Vec<u64> {
    let now = chrono::Utc::now().naive_utc();
    let rows: Vec<(String, String)> = (0..n)
        .map(|i| {
            (
                format!("http://w{}.ru/p?sid={i}", i % 5),
                format!("w{}.ru", i % 5),
            )
        })
        .collect();
    let new: Vec<NewUrl<'_>> = rows
        .iter()
        .map(|(u, d)| NewUrl {
            id: urls::url_id(u),
            url: u,
            domain: d,
            path_hash: urls::path_hash(u),
            hits: 3,
            download_prio: 3,
            updatetag: "",
            first_seen: now,
            last_hit: now,
            next_indexed: now + chrono::TimeDelta::days(1),
        })
        .collect();
    let mut c = db.conn();
    for chunk in new.chunks(1000) {
        diesel::insert_into(focuser_schema::schema::url::table)
            .values(chunk)
            .execute(&mut c)
            .unwrap();
    }
    let ids: Vec<u64> = new.iter().map(|r| r.id).collect();
    assert_eq!(
        Url::withdraw(&mut c, &ids, WithdrawReason::Merged).unwrap(),
        n
    );
    let again = Url::withdraw(&mut c, &ids, WithdrawReason::Expired).unwrap();
    assert_eq!(again, 0, "marked rows are left as they are");
    ids
}

/// `DELETE` items of the archive, per doc id.
fn deletes(site: &Site) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for i in site.archive() {
        if i.status == Status::Delete {
            *out.entry(i.doc_id).or_insert(0) += 1;
        }
    }
    out
}

fn left(db: &TestDb) -> i64 {
    number(db, "SELECT COUNT(*) AS n FROM url")
}

/// Runs the daemon until its removal of a batch waits (a trigger makes every delete from
/// `url` wait for a row the test holds), so its `DELETE` items are durable and its rows are
/// not removed yet; then kills it with SIGKILL.
fn kill_before_the_removal(db: &TestDb, site: &Site) {
    db.conn()
        .batch_execute(
            "CREATE TABLE gate (id INT PRIMARY KEY); INSERT INTO gate VALUES (1);
             CREATE TRIGGER gate_url BEFORE DELETE ON url FOR EACH ROW
             BEGIN DECLARE g INT; SELECT id INTO g FROM gate WHERE id = 1 FOR UPDATE; END",
        )
        .unwrap();
    let mut lock = db.conn();
    lock.batch_execute("BEGIN; SELECT * FROM gate FOR UPDATE")
        .unwrap();
    let daemon = site.spawn();
    let waiting = format!(
        "SELECT COUNT(*) AS n FROM information_schema.processlist \
         WHERE db = '{}' AND (info LIKE 'DELETE%' OR info LIKE 'SELECT id INTO g FROM gate%')",
        db.name()
    );
    assert!(
        focuser_tests::poll(Duration::from_secs(60), || number(db, &waiting) > 0),
        "no removal waiting: {}",
        site.log()
    );
    daemon.signal(Signal::SIGKILL);
    drop(daemon);
    lock.batch_execute("ROLLBACK").unwrap();
    db.conn()
        .batch_execute("DROP TRIGGER gate_url; DROP TABLE gate")
        .unwrap();
}

#[test]
fn marked_urls_get_one_delete_each_across_kill_9() {
    let db = TestDb::new();
    let site = Site::new(db.url(), CRAWL_ONLY);
    let n = 3000;
    let ids = marked(&db, n);

    kill_before_the_removal(&db, &site);
    let written = deletes(&site);
    assert!(
        !written.is_empty(),
        "the killed batch's items are durable\n{}",
        site.log()
    );
    assert_eq!(left(&db), n as i64, "no row was removed");

    // Killed again at moments of its own choosing.
    for below in [2500, 1500] {
        let daemon = site.spawn();
        wait_for("rows removed", Duration::from_secs(120), || {
            left(&db) < below
        });
        daemon.signal(Signal::SIGKILL);
        drop(daemon);
    }
    site.once();

    assert_eq!(left(&db), 0, "{}", site.log());
    let all = deletes(&site);
    assert_eq!(all.len(), n);
    for id in &ids {
        assert_eq!(
            all.get(&urls::doc_id(*id)),
            Some(&1),
            "{}",
            urls::doc_id(*id)
        );
    }
    let log = site.log();
    assert!(
        log.contains(&format!(
            "withdrawal: {} URLs held from an interrupted batch, {} of their DELETE items already in the archive",
            written.len(),
            written.len()
        )),
        "{log}"
    );
}

#[test]
fn hits_for_a_marked_url_keep_it_and_without_an_archive_rows_just_go() {
    let db = TestDb::new();
    let site = Site::new(db.url(), "Qargfilter.Enable = 0\nArchive.Enable = 0\n");
    site.page("k.ru/kept", "<html><body><p>kept</p></body></html>");
    let ids = marked(&db, 20);
    let kept = urls::url_id("http://k.ru/kept");
    common::due_url(&db, "http://k.ru/kept", 1, 3);
    sql(
        &db,
        &format!("UPDATE url SET hits = 0, withdraw = 2 WHERE id = {kept}"),
    );
    site.queue("m1-0000000001.q", &[record("http://k.ru/kept", 4, "")]);
    site.once();

    let row = url_row(&db, "http://k.ru/kept").expect("the URL hit again stays");
    assert!(row.last_downloaded.is_some(), "{row:?}");
    assert_eq!(
        number(
            &db,
            "SELECT COUNT(*) AS n FROM url WHERE withdraw IS NOT NULL"
        ),
        0
    );
    assert_eq!(left(&db), 1, "the other marked rows went: {ids:?}");
    assert!(!site.root().join("segments").exists());
}
