//! `kill -9` of yacobot while qargfilter merges thousands of variants into their canonical
//! URLs, then while the crawl withdraws them: every hit ends up once on its canonical URL, and
//! every variant gets exactly one `DELETE` item.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{number, Site};
use diesel::RunQueryDsl;
use focuser_formats::segment::Status;
use focuser_formats::urls;
use focuser_schema::models::{NewPathArgName, NewUrl};
use focuser_tests::{wait_for, TestDb};
use nix::sys::signal::Signal;

const PATHS: usize = 200;
const VARIANTS: usize = 30;

/// The variants (URL, hits) of each path's canonical URL, stored; the rules say `sid` does not
/// matter.
fn frontier(db: &TestDb) -> BTreeMap<String, Vec<(String, u32)>> {
    let now = chrono::Utc::now().naive_utc();
    let mut c = db.conn();
    let mut out = BTreeMap::new();
    for j in 0..PATHS {
        let domain = format!("c{}.ru", j % 4);
        let canonical = format!("http://{domain}/p{j}?id=1");
        let variants: Vec<(String, u32)> = (0..VARIANTS)
            .map(|i| (format!("{canonical}&sid=s{i}"), 1 + (i % 5) as u32))
            .collect();
        let rows: Vec<NewUrl<'_>> = variants
            .iter()
            .map(|(u, hits)| NewUrl {
                id: urls::url_id(u),
                url: u,
                domain: &domain,
                path_hash: urls::path_hash(u),
                hits: *hits,
                download_prio: u64::from(*hits),
                updatetag: "",
                first_seen: now,
                last_hit: now,
                next_indexed: now,
            })
            .collect();
        diesel::insert_into(focuser_schema::schema::url::table)
            .values(&rows)
            .execute(&mut c)
            .unwrap();
        for (name, significant) in [("id", true), ("sid", false)] {
            NewPathArgName {
                path_hash: urls::path_hash(&canonical),
                name,
                significant,
                updated_at: now,
            }
            .insert(&mut c)
            .unwrap();
        }
        out.insert(canonical, variants);
    }
    out
}

fn marked(db: &TestDb) -> i64 {
    number(
        db,
        "SELECT COUNT(*) AS n FROM url WHERE withdraw IS NOT NULL",
    )
}

/// Runs the daemon until `check` holds, then kills it with SIGKILL.
fn kill_when(site: &Site, what: &str, check: impl FnMut() -> bool) {
    let daemon = site.spawn();
    wait_for(what, Duration::from_secs(120), check);
    daemon.signal(Signal::SIGKILL);
    drop(daemon);
}

#[test]
fn kill_9_while_merging_and_withdrawing_loses_and_doubles_nothing() {
    let db = TestDb::new();
    let site = Site::new(
        db.url(),
        "Loader.Enable = 0\nCrawl.Enable = 0\nQargfilter.Batch = 97\n",
    );
    let base = std::fs::read_to_string(&site.config).unwrap();
    let paths = frontier(&db);
    let total = (PATHS * VARIANTS) as i64;

    kill_when(&site, "merging begun", || marked(&db) > 300);
    kill_when(&site, "merging half done", || marked(&db) > total / 2);
    site.once();
    assert_eq!(marked(&db), total, "{}", site.log());
    for (canonical, variants) in &paths {
        let row = common::url_row(&db, canonical).unwrap();
        let hits: u32 = variants.iter().map(|(_, h)| h).sum();
        assert_eq!(row.hits, hits, "{canonical}");
        assert_eq!(row.download_prio, u64::from(hits) * 3, "never downloaded");
    }
    // Hits 1 to 5 in turn: 15 every five variants, all on the canonical URLs now.
    assert_eq!(
        number(
            &db,
            "SELECT CAST(COALESCE(SUM(hits), 0) AS SIGNED) AS n FROM url"
        ),
        (PATHS * VARIANTS / 5 * 15) as i64
    );

    // The crawl withdraws them (the canonical URLs are fetched too: gone, no mirror).
    std::fs::write(&site.config, base.replace("Crawl.Enable = 0\n", "")).unwrap();
    kill_when(&site, "withdrawal begun", || marked(&db) < total - 500);
    kill_when(&site, "withdrawal half done", || marked(&db) < total / 2);
    site.once();
    assert_eq!(marked(&db), 0);
    let mut deletes: BTreeMap<String, usize> = BTreeMap::new();
    for i in site.archive() {
        if i.status == Status::Delete {
            *deletes.entry(i.doc_id).or_default() += 1;
        }
    }
    for variants in paths.values() {
        for (u, _) in variants {
            let doc = urls::doc_id(urls::url_id(u));
            assert_eq!(deletes.get(&doc), Some(&1), "{u}");
        }
    }
    assert_eq!(
        number(&db, "SELECT COUNT(*) AS n FROM url"),
        PATHS as i64,
        "one row per canonical URL"
    );
}
