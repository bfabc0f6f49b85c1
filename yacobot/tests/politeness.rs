//! Politeness through the `yacobot` binary against the test HTTP server (the server's log is
//! the witness): a 429's Retry-After, a robots.txt answering 5xx, and one popular domain
//! among many.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{due_url, number, sql, url_row, Site};
use focuser_schema::models::FetchState;
use focuser_tests::wait_for;
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

/// See fetch.rs: the fetcher spaces starts, the server stamps the request once read.
const JITTER: Duration = Duration::from_millis(50);

fn site(db: &TestDb, server: &WebServer, extra: &str) -> Site {
    Site::with(
        db.url(),
        &format!(
            "Loader.Enable = 0\nQargfilter.Enable = 0\nFetch.Resolve = {}\nFetch.AllowPrivate = 127.0.0.1\nFetch.ConnectTimeout = 2\n\
             Fetch.Timeout = 5\n{extra}",
            server.resolve().join(" ")
        ),
    )
}

#[test]
fn a_429_waits_for_its_retry_after_and_holds_back_the_host() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let h = "r.test";
    server.set(
        h,
        "/p",
        Behaviour::sequence(vec![
            Behaviour::too_many_requests("2"),
            Behaviour::page(1000),
        ]),
    );
    server.set(h, "/long", Behaviour::too_many_requests("3600"));
    let site = site(
        &db,
        &server,
        "Fetch.HostDelay = 0.05\nFetch.RetryDelay = 0.1\nFetch.MaxRetryAfter = 30\n\
         Crawl.RetryLater = 600\n",
    );
    let (p, q, long) = (
        server.url(h, "/p"),
        server.url(h, "/q"),
        server.url(h, "/long"),
    );
    // /p first (highest priority), then /q on the same host, then /long.
    due_url(&db, &p, 1, 30);
    due_url(&db, &q, 1, 20);
    due_url(&db, &long, 1, 10);
    site.once();

    let tries = server.requests_to(h, "/p");
    assert_eq!(tries.len(), 2, "{}", site.log());
    let gap = tries[1].start.duration_since(tries[0].start);
    assert!(
        gap + JITTER >= Duration::from_secs(2),
        "Retry-After: {gap:?}"
    );
    // The whole host waited: nothing else of it was asked for within the two seconds.
    let first = tries[0].start;
    for r in server
        .log()
        .iter()
        .filter(|r| r.host == h && r.start > first)
    {
        assert!(
            r.start.duration_since(first) + JITTER >= Duration::from_secs(2),
            "{} asked {:?} after the 429",
            r.path,
            r.start.duration_since(first)
        );
    }
    let row = url_row(&db, &p).unwrap();
    assert_eq!(
        (row.fetch_state, row.http_status, row.hits, row.errors),
        (FetchState::Fetched, Some(200), 0, 0)
    );
    // A Retry-After beyond Fetch.MaxRetryAfter: failed at once, kept for later.
    assert_eq!(server.requests_to(h, "/long").len(), 1);
    let row = url_row(&db, &long).unwrap();
    assert_eq!(
        (row.fetch_state, row.http_status, row.hits, row.errors),
        (FetchState::Failed, Some(429), 1, 1)
    );
    assert!(
        row.fetch_error
            .as_deref()
            .unwrap()
            .starts_with("rate_limited: "),
        "{:?}",
        row.fetch_error
    );
    assert_eq!(
        (row.next_indexed - row.last_fetch.unwrap()).num_seconds(),
        600,
        "Crawl.RetryLater"
    );
}

/// The rule (Google's, and RFC 9309 §2.3.1.4): a robots.txt answering 5xx, or not at all,
/// disallows the whole host for `Fetch.RobotsRetry`; its URLs fail with kind `robots`, keep
/// their hits and are tried again after `Crawl.RetryLater`; robots.txt is asked again only
/// after `Fetch.RobotsRetry`. (4xx means no rules: everything allowed.)
#[test]
fn a_robots_txt_answering_5xx_disallows_the_host_for_a_while() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let (down, up) = ("down.test", "up.test");
    server.set(down, "/robots.txt", Behaviour::status(503));
    server.set(up, "/robots.txt", Behaviour::status(404));
    // Long enough for the checks, the other host, an SQL update, the daemon's next claim and
    // its booking to fit in it on a loaded machine (they take well over 3 s there).
    let retry = Duration::from_secs(10);
    let site = site(
        &db,
        &server,
        &format!(
            "Fetch.HostDelay = 0.05\nFetch.RobotsRetry = {}\nCrawl.RetryLater = 600\n",
            retry.as_secs()
        ),
    );
    let pages: Vec<String> = ["/a", "/b"].iter().map(|p| server.url(down, p)).collect();
    for p in &pages {
        due_url(&db, p, 2, 5);
    }
    let fine = server.url(up, "/a");
    due_url(&db, &fine, 1, 1);
    let daemon = site.spawn();
    let booked = |state: FetchState| {
        number(
            &db,
            &format!(
                "SELECT COUNT(*) AS n FROM url WHERE domain = 'down.test' AND fetch_state = {} \
                 AND claimed_by IS NULL",
                state.code()
            ),
        )
    };
    wait_for("the host's URLs failed", Duration::from_secs(10), || {
        booked(FetchState::Failed) == 2
    });
    let failed_at = Instant::now();
    // The server's stamp on the robots.txt request: before the fetcher had its answer, so
    // robots.txt is not due again before `asked + retry`.
    let asked = server.requests_to(down, "/robots.txt")[0].start;
    for p in &pages {
        let row = url_row(&db, p).unwrap();
        let error = row.fetch_error.clone().unwrap();
        assert!(
            error.starts_with("robots: ") && error.contains("robots.txt answered 503"),
            "{error}"
        );
        assert_eq!((row.hits, row.errors), (2, 1), "hits kept for later");
        assert_eq!(
            (row.next_indexed - row.last_fetch.unwrap()).num_seconds(),
            600
        );
    }
    assert!(server.requests_to(down, "/a").is_empty());
    assert!(server.requests_to(down, "/b").is_empty());
    assert_eq!(server.requests_to(down, "/robots.txt").len(), 1);
    wait_for("the other host fetched", Duration::from_secs(10), || {
        url_row(&db, &fine).unwrap().fetch_state == FetchState::Fetched
    });

    // Due again at once: still disallowed, robots.txt not asked again within RobotsRetry.
    server.set_robots(down, "User-agent: *\nAllow: /\n");
    sql(
        &db,
        "UPDATE url SET next_indexed = UTC_TIMESTAMP() - INTERVAL 1 SECOND WHERE domain = 'down.test'",
    );
    wait_for("failed again", Duration::from_secs(10), || {
        number(
            &db,
            "SELECT COUNT(*) AS n FROM url WHERE domain = 'down.test' AND errors = 2 \
             AND claimed_by IS NULL",
        ) == 2
    });
    assert!(
        asked.elapsed() < retry,
        "too slow to test RobotsRetry: {:?}",
        asked.elapsed()
    );
    assert_eq!(server.requests_to(down, "/robots.txt").len(), 1);
    assert!(server.requests_to(down, "/a").is_empty());

    // After RobotsRetry, robots.txt is asked again, and now allows. (Counted from `failed_at`,
    // after the fetcher had its answer: the retry is surely due then.)
    std::thread::sleep(retry.saturating_sub(failed_at.elapsed()));
    sql(
        &db,
        "UPDATE url SET next_indexed = UTC_TIMESTAMP() - INTERVAL 1 SECOND WHERE domain = 'down.test'",
    );
    wait_for("fetched after RobotsRetry", Duration::from_secs(10), || {
        booked(FetchState::Fetched) == 2
    });
    assert_eq!(server.requests_to(down, "/robots.txt").len(), 2);
    assert_eq!(server.requests_to(down, "/a").len(), 1);
    daemon.stop();
}

/// A popular domain at the top of the priority order takes at most `Crawl.PerDomain` places
/// in hand: the other hosts are fetched meanwhile, not after its backlog. (Without the share,
/// its 25 URLs would fill the hand of `Fetch.Pending` = 10, and the other hosts would wait
/// for 24 × 0.2 s: this test fails with `Crawl.PerDomain = 1000`.)
#[test]
fn one_popular_domain_does_not_take_the_whole_hand() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    server.set("*", "/robots.txt", Behaviour::status(404));
    let site = site(
        &db,
        &server,
        "Fetch.Connections = 4\nFetch.Pending = 10\nFetch.HostDelay = 0.2\nCrawl.ClaimBatch = 10\nCrawl.PerDomain = 2\n",
    );
    let hot = "hot.test";
    for i in 0..25 {
        due_url(&db, &server.url(hot, &format!("/{i}")), 100, 1000 + i);
    }
    let others: Vec<String> = (0..8).map(|i| format!("o{i}.test")).collect();
    for o in &others {
        due_url(&db, &server.url(o, "/"), 1, 1);
    }
    site.once();

    let log: Vec<_> = server
        .log()
        .into_iter()
        .filter(|r| r.path != "/robots.txt")
        .collect();
    assert_eq!(log.len(), 33, "every URL once");
    let hot_starts: Vec<Instant> = log
        .iter()
        .filter(|r| r.host == hot)
        .map(|r| r.start)
        .collect();
    assert_eq!(hot_starts.len(), 25);
    // The hot host's 25 pages take 24 × 0.2 s; the others wait for none of that. Behind its
    // backlog (`Crawl.PerDomain = 1000`) they start after its 21st page or so; before its
    // 10th leaves them 1.8 s, enough on a loaded machine.
    let tenth = hot_starts[9];
    for o in &others {
        let r = log.iter().find(|r| &r.host == o).unwrap();
        assert!(
            r.start < tenth,
            "{o} was fetched {:?} after the hot host's first page, behind its backlog",
            r.start.duration_since(hot_starts[0])
        );
    }
    // Over 24 gaps, with connections replaced, a start noted late at the server shortens the
    // gap after it: 3 × JITTER per gap (without the delay the gaps are a few ms). The span
    // checks the average without that noise, from the second page: the first follows
    // robots.txt, on a connection maybe new, and may be noted late.
    let delay = Duration::from_millis(200);
    for w in hot_starts.windows(2) {
        let gap = w[1].duration_since(w[0]);
        assert!(gap + 3 * JITTER >= delay, "{gap:?}");
    }
    let span = hot_starts[24].duration_since(hot_starts[1]);
    assert!(span + 3 * JITTER >= 23 * delay, "{span:?}");
}
