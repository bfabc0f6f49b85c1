//! The page analysis worker (`MultiDoc.Enable`) through the real binary: a generated site
//! served over HTTP, crawled, archived and analysed by a running yacobot with a model trained
//! by `yacobot train`; its rows, its template evidence, its figures; `yacobot multidoc show`
//! and `rewind`, analysing the archive again with the web server gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::multidoc::{
    domain_key, domains, fingerprints, id_of, multidoc_cmd, page, page_count, pages_by_id,
    shared_fingerprints,
};
use common::tools::{train, CATALOG};
use common::{due_url, Site};
use focuser_schema::models::PageOutcome;
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;
use focuser_tests::{free_port, get, metric, metric_with, wait_for};

const PAGES: usize = 30;
const HOST: &str = "site.test";

/// A yacobot crawling `server` (every name resolved to it) with the multidoc worker on,
/// batches of 4 pages, the model `model`; `extra` appended.
fn crawler(db: &TestDb, server: &WebServer, model: &std::path::Path, extra: &str) -> Site {
    server.set("*", "/robots.txt", Behaviour::status(404));
    Site::with(
        db.url(),
        &format!(
            "Loader.Enable = 0\nQargfilter.Enable = 0\nFetch.Resolve = {}\n\
             Fetch.AllowPrivate = 127.0.0.1\nFetch.HostDelay = 0\nFetch.ConnectTimeout = 2\n\
             MultiDoc.Enable = 1\nMultiDoc.Batch = 4\nMultiDoc.Model = {}\n{extra}",
            server.resolve().join(" "),
            model.display()
        ),
    )
}

/// The site's pages served and due; (URL, label) of each.
fn serve_site(db: &TestDb, server: &WebServer) -> Vec<(String, &'static str)> {
    (0..PAGES)
        .map(|i| {
            let (label, html) = page(i);
            let path = format!("/articles/{i}.html");
            server.set(HOST, &path, Behaviour::html(&html));
            let url = server.url(HOST, &path);
            due_url(db, &url, 1, 3);
            (url, label)
        })
        .collect()
}

/// The checksum of the model the worker took last, as its log says.
fn model_checksum_of(log: &str) -> u32 {
    let at = log
        .rfind("(checksum ")
        .unwrap_or_else(|| panic!("no model in use in the log:\n{log}"));
    u32::from_str_radix(&log[at + 10..at + 18], 16).unwrap()
}

/// The site's template evidence in short: its pages, and its fingerprints' (rows, pages in all).
fn evidence(db: &TestDb) -> (u32, usize, u32) {
    let d = domains(db);
    let f = fingerprints(db, HOST);
    (d[0].pages, f.len(), f.iter().map(|f| f.pages).sum())
}

#[test]
fn multidoc_analyses_every_page_of_a_crawled_site_once() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let models = tempfile::tempdir().unwrap();
    let model = train(models.path()).model;
    let site_pages = serve_site(&db, &server);
    let port = free_port();
    let site = crawler(
        &db,
        &server,
        &model,
        &format!("status_listen = {port}\nstatus_sample = 1\n"),
    );
    let started = chrono::Utc::now().naive_utc() - chrono::TimeDelta::seconds(2);
    let daemon = site.spawn();
    wait_for("every page analysed", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_multidoc_pages_total") == Some(PAGES as f64)
    });
    wait_for("no lag", Duration::from_secs(30), || {
        metric(port, "focuser_yacobot_multidoc_lag_items") == Some(0.0)
    });
    let log = site.log();
    let checksum = model_checksum_of(&log);

    // Every page has its row, analysed with the model.
    let rows = pages_by_id(&db);
    assert_eq!(rows.len(), PAGES, "{log}");
    let mut md5s = std::collections::BTreeSet::new();
    let mut simhashes = Vec::new();
    for (url, label) in &site_pages {
        let r = &rows[&id_of(url)];
        assert_eq!(r.outcome, PageOutcome::Analysed, "{url}");
        assert_eq!(r.lang.as_deref(), Some("en"), "{url}");
        assert_eq!(r.category_names.as_deref(), Some(*label), "{url}");
        // The path from the root, each node with its posterior.
        let cats = r.categories.as_deref().unwrap();
        for node in cats.split(',') {
            let (id, p) = node.split_once(':').unwrap();
            assert!(
                CATALOG.lines().any(|l| l.starts_with(&format!("{id}\t"))),
                "{cats}"
            );
            let p: f64 = p.parse().unwrap();
            assert!(p > 0.0 && p <= 1.0, "{cats}");
        }
        let md5 = r.main_md5.as_deref().unwrap();
        assert!(
            md5.len() == 32 && md5.bytes().all(|b| b.is_ascii_hexdigit()),
            "{md5}"
        );
        md5s.insert(md5.to_string());
        simhashes.push((url, r.main_simhash.expect("a main text's fingerprint")));
        let share = r.template_share.unwrap();
        assert!((0.0..=1.0).contains(&share), "{url}: {share}");
        assert_eq!(r.model_checksum, Some(checksum));
        assert!(r.analysed_at >= started, "{r:?}");
        assert_eq!(r.counted_at, Some(r.analysed_at));
    }
    assert_eq!(md5s.len(), PAGES, "every page's main text is its own");
    for (i, (url, a)) in simhashes.iter().enumerate() {
        for (other, b) in &simhashes[i + 1..] {
            let d = focuser_multidoc::simhash::distance(*a, *b);
            assert!(
                d > focuser_multidoc::simhash::NEAR_BITS,
                "{url} {other}: {d}"
            );
        }
    }

    // The evidence: the site counted once per page; each menu and footer block on every page
    // exactly once, each page's own blocks on it only.
    let d = domains(&db);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].domain.as_str(), d[0].pages), (HOST, PAGES as u32));
    assert_eq!(d[0].domain_key, domain_key(HOST));
    let shared = shared_fingerprints();
    assert!(shared.len() >= 2, "menu and footer: {shared:?}");
    let rows_fp = fingerprints(&db, HOST);
    assert_eq!(d[0].fingerprints as usize, rows_fp.len());
    for f in &rows_fp {
        let expected = if shared.contains(&f.fingerprint) {
            PAGES as u32
        } else {
            1
        };
        assert_eq!(f.pages, expected, "{f:?}");
    }
    assert_eq!(
        rows_fp.iter().filter(|f| f.pages == PAGES as u32).count(),
        shared.len()
    );

    // The template share grows as the site's pages arrive (in archive order).
    let mut by_place: Vec<_> = rows.values().collect();
    by_place.sort_by_key(|r| (r.archive_file, r.archive_item));
    let shares: Vec<f32> = by_place.iter().map(|r| r.template_share.unwrap()).collect();
    assert_eq!(shares[0], 0.0, "the first page has no evidence: {shares:?}");
    let first = shares[..3].iter().sum::<f32>() / 3.0;
    let last = shares[PAGES - 10..].iter().sum::<f32>() / 10.0;
    assert!(last > first + 0.05, "{shares:?}");
    assert!(
        shares[PAGES - 10..].iter().all(|&s| s > shares[1]),
        "{shares:?}"
    );

    // The figures.
    let m = |s: &str| metric(port, s).unwrap_or_else(|| panic!("no {s}"));
    assert_eq!(
        m("focuser_yacobot_multidoc_pages_counted_total"),
        PAGES as f64
    );
    assert_eq!(m("focuser_yacobot_multidoc_pages_reanalysed_total"), 0.0);
    assert!(m("focuser_yacobot_multidoc_batches_total") >= (PAGES / 4) as f64);
    let by_lang = metric_with(
        port,
        "focuser_yacobot_multidoc_pages_by_lang_total",
        "lang=\"en\"",
    );
    assert_eq!(by_lang, Some(PAGES as f64));
    for label in ["Food", "Sport"] {
        let n = site_pages.iter().filter(|(_, l)| *l == label).count();
        let series = format!("category=\"{label}\"");
        assert_eq!(
            metric_with(port, "focuser_yacobot_multidoc_categories_total", &series),
            Some(n as f64),
            "{label}"
        );
    }
    for kind in ["empty", "binary", "too_large", "store", "model"] {
        let series = format!("kind=\"{kind}\"");
        assert_eq!(
            metric_with(port, "focuser_yacobot_multidoc_errors_total", &series),
            Some(0.0),
            "{kind}"
        );
    }
    let sum: f64 = shares.iter().map(|&s| f64::from(s)).sum();
    let shown = m("focuser_yacobot_multidoc_template_share_sum");
    assert!((shown - sum).abs() < 0.01, "{shown} vs {sum}");
    let status = get(port, "/status.json");
    for expected in [
        "\"label\": \"pages analysed\"",
        "\"label\": \"analysis lag\"",
        "\"label\": \"mean template share\"",
        "\"id\": \"multidoc_categories\"",
        "\"id\": \"multidoc_languages\"",
        "\"figure\": \"yacobot_multidoc_pages_total\"",
        &format!("\"{checksum:08x}\""),
    ] {
        assert!(status.contains(expected), "{expected} not in {status}");
    }
    daemon.stop();

    // The operator's SQL (docs/operations.md) answers.
    let answers = common::docs_sql(&db, "**Watching it in SQL**");
    assert_eq!(answers.len(), 6, "{answers:?}");
    assert!(
        answers[0].contains(&format!("1\ten\t{PAGES}")),
        "{}",
        answers[0]
    );
    assert!(answers[1].contains("\nFood\t"), "{}", answers[1]);
    assert!(
        answers[2].contains(&format!("\n{HOST}\t{PAGES}\t")),
        "{}",
        answers[2]
    );
    assert!(
        answers[3].contains(&format!("\n{HOST}\t{PAGES}\t")),
        "{}",
        answers[3]
    );
    assert!(
        answers[4].contains("\tyb1\t") || answers[4].contains("\nyb1\t"),
        "{}",
        answers[4]
    );
    assert_eq!(answers[5], "pages_behind\n0\n");
}

#[test]
fn multidoc_rewind_analyses_the_archive_again_without_downloading() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let models = tempfile::tempdir().unwrap();
    let first = train(models.path()).model;
    let site_pages = serve_site(&db, &server);
    let site = crawler(&db, &server, &first, "");
    assert!(multidoc_cmd(&site, &["show"]).contains("not analysed yet"));
    site.once();
    let before = pages_by_id(&db);
    assert_eq!(before.len(), PAGES, "{}", site.log());
    let show = multidoc_cmd(&site, &["show"]);
    assert!(show.contains("; 0 items behind"), "{show}");
    let counted = evidence(&db);
    let downloads = server
        .log()
        .iter()
        .filter(|r| r.path.starts_with("/articles/"))
        .count();
    drop(server);

    // A new model, and the whole archive again.
    let second = models.path().join("second.model");
    std::fs::copy(models.path().join("test.model"), &second).unwrap();
    let corpus = std::fs::read_to_string(models.path().join("corpus.tsv")).unwrap();
    let fewer: String = corpus.lines().skip(4).map(|l| format!("{l}\n")).collect();
    std::fs::write(models.path().join("corpus.tsv"), fewer).unwrap();
    let retrained = common::tools::run(&[
        "train",
        models.path().join("corpus.tsv").to_str().unwrap(),
        "--catalog",
        models.path().join("catalog.tsv").to_str().unwrap(),
        "-o",
        second.to_str().unwrap(),
    ]);
    assert!(retrained.status.success());
    let cf = std::fs::read_to_string(&site.config).unwrap();
    std::fs::write(
        &site.config,
        cf.replace(first.to_str().unwrap(), second.to_str().unwrap()),
    )
    .unwrap();
    let rewound = multidoc_cmd(&site, &["rewind"]);
    assert!(
        rewound.contains("analysed again and not counted again"),
        "{rewound}"
    );
    let show = multidoc_cmd(&site, &["show"]);
    assert!(show.contains(&format!("{PAGES} items behind")), "{show}");
    site.once();
    let log = site.log();
    assert!(
        log.contains("segments from 0:1 (counted up to 1:31)"),
        "{log}"
    );
    let checksum = model_checksum_of(&log);

    let after = pages_by_id(&db);
    assert_eq!(after.len(), PAGES);
    for (url, label) in &site_pages {
        let (b, a) = (&before[&id_of(url)], &after[&id_of(url)]);
        assert_eq!(a.model_checksum, Some(checksum), "{url}: analysed again");
        assert_ne!(a.model_checksum, b.model_checksum);
        assert_eq!(a.category_names.as_deref(), Some(*label));
        assert_eq!(a.counted_at, b.counted_at, "{url}: not counted again");
        assert!(a.analysed_at >= b.analysed_at);
        assert_eq!(
            (a.archive_file, a.archive_item),
            (b.archive_file, b.archive_item)
        );
    }
    assert_eq!(evidence(&db), counted, "counted twice");
    assert!(multidoc_cmd(&site, &["show"]).contains("at 1:31, counted up to 1:31"));
    assert_eq!(downloads, PAGES);
    assert_eq!(page_count(&db), PAGES as i64);

    // A running worker sees a rewind at its next step: the last 10 pages again.
    let port = free_port();
    let cf = std::fs::read_to_string(&site.config).unwrap();
    std::fs::write(&site.config, format!("{cf}status_listen = {port}\n")).unwrap();
    let daemon = site.spawn();
    wait_for("the worker", Duration::from_secs(30), || {
        metric(port, "focuser_yacobot_multidoc_lag_items") == Some(0.0)
    });
    let rewound = multidoc_cmd(&site, &["rewind", "--to", "1:21"]);
    assert!(rewound.contains("position 1:31 -> 1:21"), "{rewound}");
    wait_for("the pages analysed again", Duration::from_secs(30), || {
        metric(port, "focuser_yacobot_multidoc_pages_reanalysed_total") == Some(10.0)
    });
    assert_eq!(
        metric(port, "focuser_yacobot_multidoc_pages_counted_total"),
        Some(0.0)
    );
    assert!(
        site.log().contains("from 1:31 to 1:21 (a rewind)"),
        "{}",
        site.log()
    );
    assert_eq!(evidence(&db), counted, "counted twice");
    let nothing = multidoc_cmd(&site, &["rewind", "--to", "2:1"]);
    assert!(nothing.contains("nothing to do"), "{nothing}");
    daemon.stop();
}

#[test]
fn multidoc_follows_pages_fetched_again_and_gone() {
    let db = TestDb::new();
    let site = Site::new(
        db.url(),
        "Loader.Enable = 0\nQargfilter.Enable = 0\nMultiDoc.Enable = 1\n",
    );
    let urls: Vec<String> = (0..4)
        .map(|i| {
            site.page(&format!("{HOST}/{i}.html"), &page(i).1);
            let url = format!("http://{HOST}/{i}.html");
            due_url(&db, &url, 1, 3);
            url
        })
        .collect();
    site.once();
    let before = pages_by_id(&db);
    assert_eq!(before.len(), 4);
    let counted = evidence(&db);
    // Due again; `download`: past its steady level (else re-indexed from its archived copy).
    let due_again = |url: &str, download: bool| {
        let steady = if download { ", steady_level = 0" } else { "" };
        common::sql(
            &db,
            &format!("UPDATE url SET hits = 1, next_indexed = UTC_TIMESTAMP() - INTERVAL 1 SECOND{steady} WHERE url = '{url}'"),
        )
    };

    // Re-indexed from the archive: archived again, analysed again, not counted again.
    due_again(&urls[2], false);
    due_again(&urls[3], false);
    site.once();
    assert!(
        site.log().contains("2 re-indexed from the archive"),
        "{}",
        site.log()
    );
    assert_eq!(site.archive().len(), 6);
    assert!(
        site.log()
            .contains("multidoc: 2 pages analysed (0 counted into the evidence), 0 gone"),
        "{}",
        site.log()
    );
    assert_eq!(
        evidence(&db),
        counted,
        "a copy archived again counted twice"
    );
    let again = pages_by_id(&db);
    let (b, a) = (&before[&id_of(&urls[2])], &again[&id_of(&urls[2])]);
    assert_eq!((&a.main_md5, a.counted_at), (&b.main_md5, b.counted_at));
    assert!((a.archive_file, a.archive_item) > (b.archive_file, b.archive_item));

    // Page 0 changed and downloaded again: analysed again, not counted again; page 1 gone.
    site.page(&format!("{HOST}/0.html"), &page(10).1);
    due_again(&urls[0], true);
    std::fs::remove_file(site.root().join(format!("mirror/{HOST}/1.html"))).unwrap();
    due_again(&urls[1], true);
    site.once();
    assert_eq!(site.archive().len(), 8, "an UPDATE and a DELETE item more");
    let after = pages_by_id(&db);
    assert_eq!(after.len(), 3, "the gone page's row removed");
    assert!(!after.contains_key(&id_of(&urls[1])));
    let (b, a) = (&before[&id_of(&urls[0])], &after[&id_of(&urls[0])]);
    assert_ne!(a.main_md5, b.main_md5, "the new copy analysed");
    assert_eq!(a.counted_at, b.counted_at, "not counted twice");
    assert_eq!(evidence(&db).0, 4);
    assert!(
        site.log()
            .contains("multidoc: 1 pages analysed (0 counted into the evidence), 1 gone"),
        "{}",
        site.log()
    );

    // The gone page back: a new page of its domain.
    site.page(&format!("{HOST}/1.html"), &page(1).1);
    due_again(&urls[1], true);
    site.once();
    assert_eq!(pages_by_id(&db).len(), 4);
    assert_eq!(evidence(&db).0, 5);
}
