//! The frontier's expiry (`Url.ExpireDays`) through the real binary: pages crawled, analysed
//! and bound; those no hit asked for in `Url.ExpireDays` days leave the frontier with a
//! `DELETE` item that reaches the bindings store, while recently hit and due ones stay;
//! 0 switches it off; a large frontier expires in bounded batches.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::bindings::{direct, load, phones, rows, shipped};
use common::multidoc::{id_of, pages_by_id};
use common::{due_url, number, sql, url_row, Site};
use diesel::RunQueryDsl;
use focuser_formats::segment::Status;
use focuser_formats::urls;
use focuser_schema::models::NewUrl;
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

const HOST: &str = "old.test";

fn crawler(db: &TestDb, server: &WebServer) -> Site {
    server.set("*", "/robots.txt", Behaviour::status(404));
    let site = Site::with(
        db.url(),
        &format!(
            "Loader.Enable = 0\nQargfilter.Enable = 0\nFetch.Resolve = {}\n\
             Fetch.AllowPrivate = 127.0.0.1\nFetch.HostDelay = 0\nFetch.ConnectTimeout = 2\n\
             MultiDoc.Enable = 1\nBindings.Enable = 1\n",
            server.resolve().join(" ")
        ),
    );
    let dict = direct(&[("phone case", 12), ("wireless charging", 5)]);
    load(&site, "direct", "direct.tsv", dict.as_bytes());
    site
}

/// The site's config with `Url.ExpireDays = days`.
fn expire_days(site: &Site, days: u32) {
    let text = std::fs::read_to_string(&site.config).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with("Url.ExpireDays"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&site.config, format!("{kept}Url.ExpireDays = {days}\n")).unwrap();
}

/// Last hit `days` ago.
fn hit_days_ago(db: &TestDb, url: &str, days: u32) {
    sql(
        db,
        &format!(
            "UPDATE url SET last_hit = UTC_TIMESTAMP() - INTERVAL {days} DAY WHERE url = '{url}'"
        ),
    );
}

fn doc(url: &str) -> String {
    format!("{:016x}", id_of(url))
}

#[test]
fn urls_not_hit_for_expire_days_leave_with_their_bindings_and_the_others_stay() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let site = crawler(&db, &server);
    let urls: Vec<String> = (0..6)
        .map(|i| {
            let path = format!("/{i}.html");
            let html = format!("<html><body><h1>Review {i}</h1>{}</body></html>", phones(i));
            server.set(HOST, &path, Behaviour::html(&html));
            let url = server.url(HOST, &path);
            due_url(&db, &url, 1, 3);
            url
        })
        .collect();
    site.once();
    assert_eq!(rows(&db).len(), 6, "{}", site.log());

    // 0, 1: old; 2: old but due (hits waiting, next_indexed passed); 3: hit 29 days ago; 4, 5:
    // hit now.
    for u in &urls[..3] {
        hit_days_ago(&db, u, 40);
    }
    hit_days_ago(&db, &urls[3], 29);
    // Off: nothing goes.
    expire_days(&site, 0);
    site.once();
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), 6);

    sql(
        &db,
        &format!(
            "UPDATE url SET hits = 2, next_indexed = UTC_TIMESTAMP() - INTERVAL 1 MINUTE \
             WHERE url = '{}'",
            urls[2]
        ),
    );
    expire_days(&site, 30);
    site.once();
    let log = site.log();
    let gone: BTreeSet<&String> = urls.iter().filter(|u| url_row(&db, u).is_none()).collect();
    assert_eq!(gone, urls[..2].iter().collect(), "{log}");
    assert!(log.contains("expiry: 2 URLs not hit since"), "{log}");
    // Their DELETE items: in the archive, then in the bindings store; their analysis and
    // binding rows removed.
    let archived: Vec<_> = site.archive();
    let pages = pages_by_id(&db);
    let bound = rows(&db);
    for u in &urls[..2] {
        assert!(archived
            .iter()
            .any(|i| i.status == Status::Delete && i.doc_id == doc(u)));
        let last = shipped(&site)
            .into_iter()
            .rfind(|i| i.doc_id == doc(u))
            .unwrap();
        assert_eq!(last.status, Status::Delete, "{u}");
        assert!(!pages.contains_key(&id_of(u)));
        assert!(!bound.contains_key(&id_of(u)));
    }
    for u in &urls[2..] {
        assert!(bound.contains_key(&id_of(u)), "{u} stays");
        assert!(!shipped(&site)
            .iter()
            .any(|i| i.status == Status::Delete && i.doc_id == doc(u)));
    }
    // The due one was crawled again (it had hits waiting), not expired.
    assert_eq!(url_row(&db, &urls[2]).unwrap().hits, 0);
}

#[test]
fn a_large_frontier_expires_in_bounded_batches() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let site = crawler(&db, &server);
    expire_days(&site, 7);
    // 2 500 URLs hit 8 days ago and never fetched, 10 hit 6 days ago.
    let now = chrono::Utc::now().naive_utc();
    let rows: Vec<(String, chrono::NaiveDateTime)> = (0..2510)
        .map(|i| {
            let days = if i < 2500 { 8 } else { 6 };
            (
                format!("http://{HOST}/p{i}.html"),
                now - chrono::TimeDelta::days(days),
            )
        })
        .collect();
    let new: Vec<NewUrl<'_>> = rows
        .iter()
        .map(|(u, at)| NewUrl {
            id: urls::url_id(u),
            url: u,
            domain: HOST,
            path_hash: urls::path_hash(u),
            hits: 0,
            download_prio: 0,
            updatetag: "",
            first_seen: *at,
            last_hit: *at,
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
    site.once();
    let log = site.log();
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url"), 10, "{log}");
    // At most 1 000 a transaction: three batches.
    assert!(
        log.contains("expiry: 2500 URLs marked to leave the frontier, in 3 batches"),
        "{log}"
    );
    let deletes = site
        .archive()
        .iter()
        .filter(|i| i.status == Status::Delete)
        .count();
    assert_eq!(deletes, 2500);
}
