//! Real fetching: the `yacobot` binary with its libcurl fetcher (`Fetch.Backend = curl`, the
//! default) against the test HTTP server of focuser-tests, many host names resolved to
//! 127.0.0.1 with `Fetch.Resolve`, and a real database. The server's log is the witness of
//! politeness, retries and aborts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{crawl_together, due_url, number, record, url_row, ArchivedItem, Site};
use focuser_formats::segment::Status;
use focuser_formats::urls;
use focuser_schema::models::FetchState;
use focuser_tests::web::{by_host, page_body, Behaviour, WebServer};
use focuser_tests::TestDb;
use focuser_tests::{free_port, metric, metric_with, wait_for};

/// Allowed below a configured gap, as in focuser-fetch's own tests: the fetcher spaces the
/// starts of its transfers, the server stamps a request when it has read its head, after a
/// connect on a busy machine (a new connection's request lands later than a reused one's).
const JITTER: Duration = Duration::from_millis(50);

/// A site fetching from `server` (every host name resolved to it), the qargfilter off.
fn site(db: &TestDb, server: &WebServer, extra: &str) -> Site {
    Site::with(
        db.url(),
        &format!(
            "Qargfilter.Enable = 0\nFetch.Resolve = {}\nFetch.AllowPrivate = 127.0.0.1\nFetch.ConnectTimeout = 2\nFetch.Timeout = 5\n{extra}",
            server.resolve().join(" ")
        ),
    )
}

fn doc_id(url: &str) -> String {
    urls::doc_id(urls::url_id(url))
}

fn items_of<'a>(items: &'a [ArchivedItem], url: &str) -> Vec<&'a ArchivedItem> {
    items.iter().filter(|i| i.url == url).collect()
}

#[test]
fn queued_urls_are_fetched_politely_into_the_archive() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    // Slow answers, so that a host's requests overlap when `PerHost` lets them.
    server.set(
        "*",
        "*",
        Behaviour::delay(Duration::from_millis(400), Behaviour::page(2000)),
    );
    server.set("*", "/robots.txt", Behaviour::status(404));
    let delay = Duration::from_millis(300);
    let site = site(
        &db,
        &server,
        "Fetch.Connections = 8\nFetch.PerHost = 2\nFetch.HostDelay = 0.3\n",
    );
    let hosts: Vec<String> = (0..6).map(|h| format!("h{h}.test")).collect();
    let mut pages = Vec::new();
    for h in &hosts {
        for p in 0..5 {
            pages.push((
                h.clone(),
                format!("/p{p}"),
                server.url(h, &format!("/p{p}")),
            ));
        }
    }
    let records: Vec<_> = pages.iter().map(|(_, _, u)| record(u, 2, "")).collect();
    site.queue("m1-0000000001.q", &records);
    site.once();

    // Every page requested once, robots.txt once per host.
    let log = server.log();
    for (h, p, _) in &pages {
        let n = log.iter().filter(|r| &r.host == h && &r.path == p).count();
        assert_eq!(n, 1, "{h}{p} requested {n} times");
    }
    for h in &hosts {
        assert_eq!(server.requests_to(h, "/robots.txt").len(), 1, "{h}");
    }
    // Politeness, from the server's side. Every start of a host puts its next one `delay`
    // later, `PerHost = 2` or not: consecutive starts are `delay` apart. A start noted late
    // at the server (a new connection on a loaded machine) shortens the gap after it:
    // 3 × JITTER per gap (without the delay the two transfers a host may have start
    // together). The span of the pages' starts (robots.txt left out: the host's first start,
    // on a new connection) checks the average without that noise: 4 × delay, where without
    // the delay the 400 ms answers two at a time give 800 ms.
    let figures = server.figures();
    let pages_only: Vec<_> = log
        .iter()
        .filter(|r| r.path != "/robots.txt")
        .cloned()
        .collect();
    let page_figures = by_host(&pages_only);
    for (h, f) in &figures {
        assert!(f.max_concurrent <= 2, "{h}: {f:?}");
        assert!(f.min_gap.unwrap() + 3 * JITTER >= delay, "{h}: {f:?}");
        let p = &page_figures[h];
        assert_eq!(p.requests, 5, "{h}: {p:?}");
        assert!(p.span.unwrap() + 3 * JITTER >= 4 * delay, "{h}: {p:?}");
    }
    assert!(
        figures.values().any(|f| f.max_concurrent == 2),
        "Fetch.PerHost = 2 was never used: {figures:?}"
    );
    // Archived: one UPDATE item per page, doc id = hex of the URL id, the page as served.
    let items = site.archive();
    assert_eq!(items.len(), pages.len());
    for (h, p, u) in &pages {
        let it = items_of(&items, u);
        assert_eq!(it.len(), 1, "{u}");
        assert_eq!(it[0].status, Status::Update);
        assert_eq!(it[0].doc_id, doc_id(u));
        assert_eq!(it[0].content.as_bytes(), page_body(h, p, 2000));
        let row = url_row(&db, u).unwrap();
        assert_eq!(
            (row.fetch_state, row.http_status, row.hits),
            (FetchState::Fetched, Some(200), 0),
            "{u}"
        );
        assert!(row.last_fetch.is_some() && row.fetch_ms.is_some() && row.claimed_by.is_none());
        // The fetch time counts the transfer, not the waits before it.
        assert!(row.fetch_ms.unwrap() >= 400, "{u}: {:?}", row.fetch_ms);
    }
}

#[test]
fn server_errors_are_retried_apart_then_succeed_or_wait_for_later() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let site = site(
        &db,
        &server,
        "Fetch.HostDelay = 0.05\nFetch.Retries = 3\nFetch.RetryDelay = 0.3\nCrawl.RetryLater = 600\n",
    );
    server.set(
        "s.test",
        "/p",
        Behaviour::sequence(vec![
            Behaviour::status(503),
            Behaviour::status(500),
            Behaviour::page(1000),
        ]),
    );
    server.set("s.test", "/q", Behaviour::status(503));
    let (p, q) = (server.url("s.test", "/p"), server.url("s.test", "/q"));
    site.queue("m1-0000000001.q", &[record(&p, 2, ""), record(&q, 2, "")]);
    site.once();

    for path in ["/p", "/q"] {
        let tries = server.requests_to("s.test", path);
        assert_eq!(tries.len(), 3, "{path}: Fetch.Retries");
        for w in tries.windows(2) {
            let gap = w[1].start.duration_since(w[0].start);
            assert!(
                gap + JITTER >= Duration::from_millis(300),
                "{path}: {gap:?}"
            );
        }
    }
    let ok = url_row(&db, &p).unwrap();
    assert_eq!(
        (ok.fetch_state, ok.http_status, ok.hits, ok.errors),
        (FetchState::Fetched, Some(200), 0, 0)
    );
    assert_eq!(site.archive().len(), 1);
    assert_eq!(site.archive()[0].doc_id, doc_id(&p));
    // Tries used up: recorded, hits kept, due again after Crawl.RetryLater.
    let failed = url_row(&db, &q).unwrap();
    assert_eq!(
        (
            failed.fetch_state,
            failed.http_status,
            failed.hits,
            failed.errors
        ),
        (FetchState::Failed, Some(503), 2, 1)
    );
    assert!(failed
        .fetch_error
        .as_deref()
        .unwrap()
        .starts_with("server: "));
    assert!(failed.claimed_by.is_none());
    let wait = (failed.next_indexed - failed.last_fetch.unwrap()).num_seconds();
    assert_eq!(wait, 600, "Crawl.RetryLater");
}

#[test]
fn refusals_and_failures_are_recorded_on_the_url_and_counted() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let port = free_port();
    let site = site(
        &db,
        &server,
        &format!(
            "status_listen = {port}\nstatus_sample = 1\nFetch.HostDelay = 0.05\nFetch.MaxBytes = 100000\n\
             Fetch.MaxRedirects = 5\nCrawl.RetryLater = 600\n"
        ),
    );
    let h = "o.test";
    server.set_robots(h, "User-agent: *\nDisallow: /private\n");
    server.set(h, "/gone", Behaviour::status(404));
    server.set(h, "/gone410", Behaviour::status(410));
    server.set(h, "/huge", Behaviour::huge(50_000_000));
    server.set(
        h,
        "/huge-unsized",
        Behaviour::Huge {
            size: 50_000_000,
            content_length: false,
        },
    );
    server.set(
        h,
        "/pdf",
        Behaviour::fixed(200, "application/pdf", "%PDF-1.4"),
    );
    server.set(h, "/loop", Behaviour::redirect(302, "/loop2"));
    server.set(h, "/loop2", Behaviour::redirect(302, "/loop"));
    let paths = [
        "/private/x",
        "/gone",
        "/gone410",
        "/huge",
        "/huge-unsized",
        "/pdf",
        "/loop",
        "/ok",
    ];
    let url = |p: &str| server.url(h, p);
    let records: Vec<_> = paths.iter().map(|p| record(&url(p), 3, "")).collect();
    site.queue("m1-0000000001.q", &records);
    let daemon = site.spawn();
    // Booked: fetched, failed or gone (the loader sets last_fetch from the queue already).
    wait_for("every URL booked", Duration::from_secs(60), || {
        number(
            &db,
            "SELECT COUNT(*) AS n FROM url WHERE fetch_state IN (2, 3, 4)",
        ) == 8
    });
    wait_for("the figures", Duration::from_secs(30), || {
        metric(port, "focuser_yacobot_pages_total") == Some(1.0)
    });
    let row = |p: &str| url_row(&db, &url(p)).unwrap();
    let error = |p: &str| row(p).fetch_error.unwrap();

    // robots.txt: never requested, recorded, waits for its next turn.
    assert!(server.requests_to(h, "/private/x").is_empty());
    assert_eq!(error("/private/x"), "disallowed: disallowed by robots.txt");
    assert_eq!(
        (row("/private/x").fetch_state, row("/private/x").hits),
        (FetchState::Failed, 0)
    );
    // Gone: marked, and a DELETE item announces it.
    let items = site.archive();
    for (p, status) in [("/gone", 404), ("/gone410", 410)] {
        let r = row(p);
        assert_eq!(
            (r.fetch_state, r.http_status, r.hits),
            (FetchState::Gone, Some(status), 0),
            "{p}: {:?}\n{}",
            r.fetch_error,
            site.log()
        );
        let it = items_of(&items, &url(p));
        assert_eq!(it.len(), 1, "{p}");
        assert_eq!(
            (it[0].status, it[0].doc_id.clone()),
            (Status::Delete, doc_id(&url(p)))
        );
    }
    // Too large: aborted (the server could not send it all), recorded.
    for p in ["/huge", "/huge-unsized"] {
        assert_eq!(error(p), "too_large: longer than 100000 bytes");
        let sent: u64 = server.requests_to(h, p).iter().map(|r| r.sent).sum();
        assert!(sent < 50_000_000, "{p}: {sent} bytes sent");
    }
    assert_eq!(error("/pdf"), "wrong_type: content type application/pdf");
    // A redirect loop: an error, tried again later.
    let lp = row("/loop");
    assert!(
        error("/loop").starts_with("redirect: "),
        "{}",
        error("/loop")
    );
    assert_eq!(
        (lp.fetch_state, lp.hits, lp.errors),
        (FetchState::Failed, 3, 1)
    );
    assert!(server.requests_to(h, "/loop").len() <= 6);
    // Only /ok is archived as a page.
    let updates: Vec<_> = items
        .iter()
        .filter(|i| i.status == Status::Update)
        .collect();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].url, url("/ok"));
    // Counted by kind.
    for (kind, n) in [
        ("disallowed", 1.0),
        ("too_large", 2.0),
        ("wrong_type", 1.0),
        ("redirect", 1.0),
    ] {
        let label = format!("kind=\"{kind}\"");
        assert_eq!(
            metric_with(port, "focuser_yacobot_fetch_errors_total", &label),
            Some(n),
            "{kind}"
        );
    }
    assert_eq!(metric(port, "focuser_yacobot_gone_total"), Some(2.0));
    assert_eq!(
        metric(port, "focuser_yacobot_robots_fetches_total"),
        Some(1.0)
    );
    assert!(metric(port, "focuser_yacobot_transfers_total").unwrap() >= 9.0);
    assert!(metric(port, "focuser_yacobot_redirects_total").unwrap() >= 1.0);
    assert!(metric(port, "focuser_yacobot_host_waits_total").unwrap() >= 1.0);
    assert_eq!(metric(port, "focuser_yacobot_in_flight"), Some(0.0));
    daemon.stop();
}

#[test]
fn two_yacobots_on_one_database_request_each_url_once() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    server.set(
        "*",
        "*",
        Behaviour::delay(Duration::from_millis(50), Behaviour::page(500)),
    );
    let extra =
        "Loader.Enable = 0\nCrawl.ClaimBatch = 3\nFetch.Connections = 4\nFetch.HostDelay = 0.02\n";
    let a = site(&db, &server, extra);
    let b = site(&db, &server, extra);
    let n = 120;
    let mut all = BTreeSet::new();
    for i in 0..n {
        let u = server.url(&format!("t{}.test", i % 6), &format!("/{i}"));
        due_url(&db, &u, 1, 1);
        all.insert(doc_id(&u));
    }
    for (mut child, s) in crawl_together(&db, &[&a, &b]).into_iter().zip([&a, &b]) {
        assert!(child.wait().unwrap().success(), "{}", s.log());
    }

    let pages: Vec<_> = server
        .log()
        .into_iter()
        .filter(|r| r.path != "/robots.txt")
        .collect();
    let distinct: BTreeSet<_> = pages.iter().map(|r| (&r.host, &r.path)).collect();
    assert_eq!(pages.len(), n, "each URL requested once");
    assert_eq!(distinct.len(), n);
    let ids =
        |s: &Site| -> BTreeSet<String> { s.archive().into_iter().map(|i| i.doc_id).collect() };
    let (ia, ib) = (ids(&a), ids(&b));
    assert!(
        !ia.is_empty() && !ib.is_empty(),
        "{} and {}",
        ia.len(),
        ib.len()
    );
    assert!(ia.is_disjoint(&ib));
    assert_eq!(ia.union(&ib).cloned().collect::<BTreeSet<_>>(), all);
    assert_eq!(
        number(
            &db,
            "SELECT COUNT(*) AS n FROM url WHERE hits > 0 OR claimed_by IS NOT NULL"
        ),
        0
    );
}

#[test]
fn bad_fetch_keys_are_clear_errors_and_a_reload_takes_new_ones() {
    let db = TestDb::new();
    for (extra, expected) in [
        ("Fetch.HostDelay = -1\n", "Fetch.HostDelay"),
        ("Fetch.PerHost = 0\n", "Fetch.PerHost"),
        ("Fetch.Resolve = nowhere\n", "Fetch.Resolve"),
        (
            "Fetch.AllowPrivate = 1\n",
            "Fetch.AllowPrivate: \"1\" is not an address",
        ),
        ("Fetch.Backend = wget\n", "Fetch.Backend"),
    ] {
        let s = Site::with(db.url(), extra);
        let err = s.config_refused(extra);
        assert!(err.contains(expected), "{extra}: {err}");
    }

    let server = WebServer::start().unwrap();
    let site = site(&db, &server, "Loader.Enable = 0\nFetch.HostDelay = 0.05\n");
    let daemon = site.spawn();
    let fetched = |n: i64| number(&db, "SELECT COUNT(*) AS n FROM url WHERE fetch_state = 2") == n;
    let batch = |from: usize| {
        for i in from..from + 4 {
            due_url(&db, &server.url("r.test", &format!("/{i}")), 1, 1);
        }
    };
    batch(0);
    wait_for("the first batch", Duration::from_secs(10), || fetched(4));
    let config = std::fs::read_to_string(&site.config).unwrap();
    let reload = |delay: &str| {
        let text = config.replace(
            "Fetch.HostDelay = 0.05",
            &format!("Fetch.HostDelay = {delay}"),
        );
        std::fs::write(&site.config, text).unwrap();
        daemon.signal(nix::sys::signal::Signal::SIGUSR2);
    };
    reload("-1");
    wait_for("the bad reload refused", Duration::from_secs(30), || {
        site.log().contains("reload rejected")
    });
    reload("0.6");
    wait_for("the reload", Duration::from_secs(30), || {
        site.log().contains("config reloaded")
    });
    server.clear_log();
    batch(4);
    wait_for("the second batch", Duration::from_secs(15), || fetched(8));
    let pages: Vec<_> = server
        .log()
        .into_iter()
        .filter(|r| r.path != "/robots.txt")
        .collect();
    assert_eq!(pages.len(), 4);
    let figures = server.figures();
    let gap = figures["r.test"].min_gap.unwrap();
    // 200 ms for a start noted late on a loaded machine: the old delay would give ~50 ms.
    assert!(
        gap + Duration::from_millis(200) >= Duration::from_millis(600),
        "{gap:?}"
    );
    daemon.stop();
}
