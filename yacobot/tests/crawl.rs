//! The scheduler, the archive and the fetch outcomes, through the real binary against a real
//! database, with pages from a mirror tree (`Fetch.Backend = mirror`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{crawl_together, due_url, number, sql, url_row, Site};
use focuser_formats::segment::Status;
use focuser_formats::urls;
use focuser_schema::models::FetchState;
use focuser_tests::TestDb;

const CRAWL_ONLY: &str = "Loader.Enable = 0\nQargfilter.Enable = 0\n";

#[test]
fn due_urls_are_fetched_highest_priority_first_and_only_those() {
    let db = TestDb::new();
    // One URL at a time: the archive's order is the fetch order.
    let site = Site::new(
        db.url(),
        &format!("{CRAWL_ONLY}Fetch.Connections = 1\nCrawl.ClaimBatch = 1\n"),
    );
    for (i, prio) in [(1, 5u64), (2, 50), (3, 7), (4, 1000), (5, 6)] {
        site.page(&format!("a.ru/{i}"), &format!("page {i}"));
        due_url(&db, &format!("http://a.ru/{i}"), 1, prio);
    }
    site.page("a.ru/later", "x");
    due_url(&db, "http://a.ru/later", 9, 9999);
    sql(&db, "UPDATE url SET next_indexed = UTC_TIMESTAMP() + INTERVAL 1 DAY WHERE url = 'http://a.ru/later'");
    site.page("a.ru/nohits", "x");
    due_url(&db, "http://a.ru/nohits", 0, 0);
    site.once();
    let fetched: Vec<String> = site.archive().into_iter().map(|i| i.url).collect();
    assert_eq!(
        fetched,
        [
            "http://a.ru/4",
            "http://a.ru/2",
            "http://a.ru/3",
            "http://a.ru/5",
            "http://a.ru/1"
        ]
    );
    let row = url_row(&db, "http://a.ru/4").unwrap();
    assert_eq!((row.hits, row.download_prio), (0, 0));
    assert_eq!(row.fetch_state, FetchState::Fetched);
    assert_eq!((row.claimed_by, row.claim_expires), (None, None));
    assert_eq!(row.http_status, Some(200));
    assert_eq!(row.doc_id.as_deref(), Some(urls::doc_id(row.id).as_str()));
    let md5: String = {
        use md5::{Digest, Md5};
        Md5::digest(b"page 4")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    assert_eq!(row.content_md5, Some(md5));
    assert!(row.last_downloaded.is_some() && row.last_indexed == row.last_downloaded);
    assert!(row.archive_file.is_some() && row.archive_item.is_some());
    assert_eq!(url_row(&db, "http://a.ru/later").unwrap().hits, 9);
    assert_eq!(
        url_row(&db, "http://a.ru/nohits").unwrap().last_downloaded,
        None
    );
    let items = site.archive();
    assert!(items
        .iter()
        .all(|i| i.status == Status::Update && i.doc_id == urls::doc_id(urls::url_id(&i.url))));
    assert_eq!(items[0].content, "page 4");
}

#[test]
fn two_crawlers_on_one_database_fetch_disjoint_urls() {
    let db = TestDb::new();
    // Both read the same mirror.
    let shared = tempfile::tempdir().unwrap();
    let extra = format!(
        "{CRAWL_ONLY}Crawl.ClaimBatch = 3\nFetch.Connections = 2\nFetch.MirrorDir = {}\n",
        shared.path().display()
    );
    let a = Site::new(db.url(), &extra);
    let b = Site::new(db.url(), &extra);
    let n = 400;
    for i in 0..n {
        let p = shared.path().join(format!("s{}.ru/{i}", i % 7));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("page {i}")).unwrap();
        due_url(
            &db,
            &format!("http://s{}.ru/{i}", i % 7),
            1 + i % 5,
            u64::from(1 + i % 5) * 3,
        );
    }
    for (mut child, s) in crawl_together(&db, &[&a, &b]).into_iter().zip([&a, &b]) {
        assert!(child.wait().unwrap().success(), "{}", s.log());
    }
    let ids = |s: &Site| -> std::collections::BTreeSet<String> {
        s.archive().into_iter().map(|i| i.doc_id).collect()
    };
    let (ia, ib) = (ids(&a), ids(&b));
    assert!(
        !ia.is_empty() && !ib.is_empty(),
        "both crawled: {} and {}\n{}\n{}",
        ia.len(),
        ib.len(),
        a.log(),
        b.log()
    );
    assert!(ia.is_disjoint(&ib), "a URL was fetched twice");
    assert_eq!(ia.len() + ib.len(), n as usize);
    assert_eq!(a.archive().len() + b.archive().len(), n as usize);
    assert_eq!(
        number(
            &db,
            "SELECT COUNT(*) AS n FROM url WHERE hits > 0 OR claimed_by IS NOT NULL"
        ),
        0
    );
}

#[test]
fn an_expired_claim_is_taken_back_a_live_one_is_not() {
    let db = TestDb::new();
    let site = Site::new(db.url(), CRAWL_ONLY);
    for i in 1..=3 {
        site.page(&format!("a.ru/{i}"), "x");
        due_url(&db, &format!("http://a.ru/{i}"), 1, 3);
    }
    // A crawler that died a minute ago held 1 and 2; a live one holds 3.
    sql(&db, "UPDATE url SET claimed_by = 'yb9/77', fetch_state = 1, claim_expires = UTC_TIMESTAMP() - INTERVAL 1 MINUTE WHERE url IN ('http://a.ru/1', 'http://a.ru/2')");
    sql(&db, "UPDATE url SET claimed_by = 'yb9/78', fetch_state = 1, claim_expires = UTC_TIMESTAMP() + INTERVAL 10 MINUTE WHERE url = 'http://a.ru/3'");
    site.once();
    assert!(
        site.log()
            .contains("took back 2 URLs whose claim had expired"),
        "{}",
        site.log()
    );
    for i in [1, 2] {
        let row = url_row(&db, &format!("http://a.ru/{i}")).unwrap();
        assert_eq!((row.hits, row.claimed_by), (0, None));
        assert!(row.last_downloaded.is_some());
    }
    let held = url_row(&db, "http://a.ru/3").unwrap();
    assert_eq!((held.hits, held.claimed_by.as_deref()), (1, Some("yb9/78")));
    assert_eq!(site.archive().len(), 2);
}

/// Sets the dictionary file's date `days` ago.
fn dictionary(site: &Site, days: f64) {
    let p = site.root().join("dict");
    std::fs::write(&p, "phrases").unwrap();
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs_f64(days * 86_400.0);
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn days_to_next(db: &TestDb, url: &str) -> f64 {
    let row = url_row(db, url).unwrap();
    (row.next_indexed - row.last_indexed.unwrap()).num_seconds() as f64 / 86_400.0
}

#[test]
fn next_indexed_follows_the_dictionary_and_steady_level() {
    let db = TestDb::new();
    let cfg = format!(
        "{CRAWL_ONLY}Url.DictFile = dict\nUrl.DictPeriod = 7\nUrl.DictAge = 10\nUrl.ReindexPeriod = 3\n"
    );
    let site = Site::new(db.url(), &cfg);
    let cases = [
        // (dictionary age in days, steady_level, days to the next indexing)
        (2.0, 10.0, 5.0),  // fresh: the next dictionary is 5 days away
        (2.0, 2.5, 2.5),   // steady_level comes first
        (6.8, 10.0, 1.0),  // the next dictionary is hours away: at least one day
        (30.0, 10.0, 3.0), // stale dictionary: Url.ReindexPeriod
        (30.0, 1.5, 1.5),
    ];
    for (i, (age, steady, expected)) in cases.iter().enumerate() {
        let url = format!("http://d.ru/{i}");
        site.page(&format!("d.ru/{i}"), "x");
        due_url(&db, &url, 1, 3);
        sql(
            &db,
            &format!("UPDATE url SET steady_level = {steady} WHERE url = '{url}'"),
        );
        dictionary(&site, *age);
        site.once();
        let got = days_to_next(&db, &url);
        assert!(
            (got - expected).abs() < 0.01,
            "case {i}: {got} days, expected {expected}"
        );
    }
    // No dictionary at all counts as stale.
    std::fs::remove_file(site.root().join("dict")).unwrap();
    site.page("d.ru/none", "x");
    due_url(&db, "http://d.ru/none", 1, 3);
    sql(
        &db,
        "UPDATE url SET steady_level = 10 WHERE url = 'http://d.ru/none'",
    );
    site.once();
    assert!((days_to_next(&db, "http://d.ru/none") - 3.0).abs() < 0.01);
}

/// Makes `url` due again, its last download `days_ago`.
fn due_again(db: &TestDb, url: &str, days_ago: u32) {
    sql(
        db,
        &format!(
            "UPDATE url SET hits = 4, download_prio = 4, next_indexed = UTC_TIMESTAMP(), \
         last_downloaded = UTC_TIMESTAMP() - INTERVAL {days_ago} DAY WHERE url = '{url}'"
        ),
    );
}

fn steady(db: &TestDb, url: &str) -> f64 {
    url_row(db, url).unwrap().steady_level
}

#[test]
fn steady_level_grows_while_the_content_stays_and_shrinks_when_it_changes() {
    let db = TestDb::new();
    let site = Site::new(
        db.url(),
        &format!("{CRAWL_ONLY}Url.SteadyMin = 1\nUrl.SteadyMax = 3\n"),
    );
    let url = "http://s.ru/page";
    site.page("s.ru/page", "version 1");
    due_url(&db, url, 1, 3);
    sql(
        &db,
        &format!("UPDATE url SET steady_level = 2 WHERE url = '{url}'"),
    );
    site.once();
    assert_eq!(
        steady(&db, url),
        2.0,
        "the first download has nothing to compare with"
    );
    due_again(&db, url, 30);
    site.once();
    assert!((steady(&db, url) - 2.8).abs() < 1e-9, "unchanged: x1.4");
    due_again(&db, url, 30);
    site.once();
    assert_eq!(steady(&db, url), 3.0, "capped at Url.SteadyMax");
    site.page("s.ru/page", "version 2");
    due_again(&db, url, 30);
    site.once();
    assert!((steady(&db, url) - 2.4).abs() < 1e-9, "changed: x0.8");
    let md5s: Vec<String> = site.archive().iter().map(|i| i.content.clone()).collect();
    assert_eq!(md5s, ["version 1", "version 1", "version 1", "version 2"]);
}

#[test]
fn a_url_downloaded_recently_is_reindexed_from_the_archive() {
    let db = TestDb::new();
    let site = Site::new(db.url(), CRAWL_ONLY);
    let url = "http://r.ru/";
    site.page("r.ru/index.html", "old content");
    due_url(&db, url, 1, 3);
    sql(
        &db,
        &format!("UPDATE url SET steady_level = 5 WHERE url = '{url}'"),
    );
    site.once();
    let first = url_row(&db, url).unwrap();
    // The page changes on the site, and the URL is due again (new hits, the same updatetag) a
    // day after its download: less than steady_level (5 days) ago.
    site.page("r.ru/index.html", "new content");
    due_again(&db, url, 1);
    site.once();
    let items = site.archive();
    assert_eq!(items.len(), 2);
    assert_eq!(
        items[1].content, "old content",
        "re-indexed from the archive"
    );
    let row = url_row(&db, url).unwrap();
    assert_eq!(row.hits, 0);
    assert_eq!(row.content_md5, first.content_md5);
    assert!(
        row.last_downloaded < row.last_indexed,
        "not downloaded again"
    );
    assert_eq!((row.archive_file, row.archive_item), (Some(1), Some(2)));
    assert!(
        site.log()
            .contains("crawl: 0 pages fetched, 1 re-indexed from the archive"),
        "{}",
        site.log()
    );
    // Six days after its download it is fetched again.
    due_again(&db, url, 6);
    site.once();
    let items = site.archive();
    assert_eq!(items.len(), 3);
    assert_eq!(items[2].content, "new content");
    // The copy gone from the archive (retention): downloaded even when recent.
    due_again(&db, url, 1);
    sql(
        &db,
        &format!("UPDATE url SET archive_item = 99 WHERE url = '{url}'"),
    );
    site.page("r.ru/index.html", "third content");
    site.once();
    assert_eq!(site.archive()[3].content, "third content");
}

#[test]
fn gone_refused_and_failed_fetches_are_booked_and_counted() {
    let db = TestDb::new();
    let site = Site::new(
        db.url(),
        &format!("{CRAWL_ONLY}Fetch.MaxBytes = 100\nCrawl.RetryLater = 600\n"),
    );
    site.page("g.ru/big.html", &"x".repeat(101));
    site.page("g.ru/doc.pdf", "%PDF");
    site.page("g.ru/fits.html", &"y".repeat(100));
    // A directory without index.html: reading it fails (a transient failure for the mirror).
    std::fs::create_dir_all(site.root().join("mirror/g.ru/dir")).unwrap();
    for p in ["missing", "big.html", "doc.pdf", "fits.html", "dir"] {
        due_url(&db, &format!("http://g.ru/{p}"), 2, 6);
    }
    site.once();
    let row = |p: &str| url_row(&db, &format!("http://g.ru/{p}")).unwrap();
    let gone = row("missing");
    assert_eq!(
        (gone.fetch_state, gone.http_status, gone.hits),
        (FetchState::Gone, Some(404), 0)
    );
    assert_eq!(gone.fetch_error.as_deref(), Some("gone: HTTP 404"));
    let big = row("big.html");
    assert_eq!(big.fetch_state, FetchState::Failed);
    assert_eq!(
        big.fetch_error.as_deref(),
        Some("too_large: longer than 100 bytes")
    );
    assert_eq!(big.hits, 0, "refused for good: waits for its next turn");
    assert!(big.next_indexed > chrono::Utc::now().naive_utc());
    assert_eq!(
        row("doc.pdf").fetch_error.as_deref(),
        Some("wrong_type: content type application/pdf")
    );
    assert_eq!(row("fits.html").fetch_state, FetchState::Fetched);
    let failed = row("dir");
    assert_eq!(
        (failed.fetch_state, failed.errors, failed.hits),
        (FetchState::Failed, 1, 2)
    );
    assert!(failed.fetch_error.unwrap().starts_with("network: "));
    let wait = (failed.next_indexed - failed.last_fetch.unwrap()).num_seconds();
    assert_eq!(wait, 600, "Crawl.RetryLater");
    assert!(failed.last_downloaded.is_none());
    let items = site.archive();
    let kinds: Vec<(Status, &str)> = items.iter().map(|i| (i.status, i.url.as_str())).collect();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert!(kinds.contains(&(Status::Delete, "http://g.ru/missing")));
    assert!(kinds.contains(&(Status::Update, "http://g.ru/fits.html")));
}
