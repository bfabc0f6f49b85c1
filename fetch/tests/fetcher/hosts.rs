//! What the fetcher reports per host for its caller's record (answers, speed, `Server`, errors,
//! politeness, robots.txt), and robots.txt given back by the caller (seeds): not fetched again
//! while it is trusted.

use std::time::{Duration, Instant};

use focuser_fetch::{DelaySource, Fetcher, HostReport, Outcome, RobotsSeed};
use focuser_tests::web::{Behaviour, WebServer};

use crate::{config, fetch_all};

fn report<'a>(reports: &'a [HostReport], host: &str) -> &'a HostReport {
    reports
        .iter()
        .find(|r| r.host == host)
        .unwrap_or_else(|| panic!("no report of {host}: {reports:?}"))
}

#[test]
fn each_host_is_reported_with_its_answers_errors_politeness_and_robots_txt() {
    let server = WebServer::start().unwrap();
    let robots = "User-agent: *\nCrawl-delay: 0.2\nDisallow: /private\n";
    server.set(
        "a.test",
        "/robots.txt",
        Behaviour::text(robots).with_header("Server", "robots-server"),
    );
    server.set(
        "a.test",
        "/p1",
        Behaviour::html(&"x".repeat(5000)).with_header("Server", "TestServer/1.0"),
    );
    server.set("a.test", "/bad", Behaviour::status(500));
    server.set("b.test", "/robots.txt", Behaviour::status(404));
    let mut f = Fetcher::new(config(&server)).unwrap();
    f.report_hosts();
    let before = std::time::SystemTime::now();
    let done = fetch_all(
        &mut f,
        &[
            server.url("a.test", "/p1"),
            server.url("a.test", "/bad"),
            server.url("a.test", "/private"),
            server.url("b.test", "/x"),
        ],
    );
    assert!(matches!(done[0].outcome, Outcome::Fetched(_)));
    assert_eq!(done[2].outcome, Outcome::Disallowed);
    let reports = f.take_host_reports();
    assert_eq!(reports.len(), 2, "{reports:?}");
    let port = server.port();
    let a = report(&reports, &format!("a.test:{port}"));
    // /p1 once, /bad three times (Fetch.Retries); /private never asked.
    assert_eq!((a.documents, a.answers, a.errors), (1, 4, 1));
    assert!(a.bytes >= 5000 && a.transfer_time > Duration::ZERO, "{a:?}");
    assert_eq!((a.errors_in_row, a.answered), (1, true));
    assert!(
        a.last_error
            .as_deref()
            .unwrap()
            .contains("server error 500"),
        "{a:?}"
    );
    // The last answer with a Server header was /p1's (the 500s had none).
    assert_eq!(a.server.as_deref(), Some("TestServer/1.0"));
    // (Crawl-delay is read as an f32: 0.2 s is 200.000003 ms.)
    assert_eq!(
        (a.delay.as_millis(), a.delay_source),
        (200, DelaySource::CrawlDelay)
    );
    let r = a.robots.as_ref().unwrap();
    assert_eq!(
        (r.status, r.body.as_slice()),
        (Some(200), robots.as_bytes())
    );
    assert_eq!(r.ttl, Duration::from_secs(60), "Fetch.RobotsTtl");
    assert!(r.fetched_at >= before);

    let b = report(&reports, &format!("b.test:{port}"));
    assert_eq!(
        (b.documents, b.errors, b.delay_source),
        (1, 0, DelaySource::Config)
    );
    let r = b.robots.as_ref().unwrap();
    assert_eq!((r.status, r.body.len()), (Some(404), 0));
    assert!(f.take_host_reports().is_empty(), "taken");

    // A fetcher not asked for reports keeps none.
    let mut quiet = Fetcher::new(config(&server)).unwrap();
    fetch_all(&mut quiet, &[server.url("b.test", "/y")]);
    assert!(quiet.take_host_reports().is_empty());
}

#[test]
fn a_seeded_robots_txt_is_obeyed_and_not_fetched_until_it_runs_out() {
    let server = WebServer::start().unwrap();
    server.set_robots("s.test", "User-agent: *\nDisallow: /yes\n");
    let mut cfg = config(&server);
    // The seed says an hour; the fetcher trusts it no longer than its own RobotsTtl.
    cfg.robots_ttl = Duration::from_secs(2);
    let mut f = Fetcher::new(cfg).unwrap();
    let (yes, no) = (server.url("s.test", "/yes"), server.url("s.test", "/no"));
    assert!(f.robots_unknown(&yes));
    let hour = Duration::from_secs(3600);
    let seed = |status, body: &'static [u8], remaining| RobotsSeed {
        status,
        body,
        remaining,
    };
    assert!(
        !f.seed_robots(&yes, seed(503, b"", hour)),
        "a 5xx is not taken"
    );
    assert!(
        !f.seed_robots(&yes, seed(200, b"", Duration::ZERO)),
        "run out"
    );
    let seeded_at = Instant::now();
    assert!(f.seed_robots(&yes, seed(200, b"User-agent: *\nDisallow: /no\n", hour)));
    assert!(!f.robots_unknown(&yes));
    assert!(
        !f.seed_robots(&no, seed(404, b"", hour)),
        "known: a second seed is not taken"
    );
    let done = fetch_all(&mut f, &[yes.clone(), no.clone()]);
    assert!(
        matches!(done[0].outcome, Outcome::Fetched(_)),
        "the seed's rules"
    );
    assert_eq!(done[1].outcome, Outcome::Disallowed);
    assert!(server.requests_to("s.test", "/robots.txt").is_empty());
    assert_eq!((f.stats().robots_seeded, f.stats().robots_fetches), (1, 0));
    assert!(
        seeded_at.elapsed() < Duration::from_secs(2),
        "too slow to test the TTL"
    );

    // After Fetch.RobotsTtl the seed has run out: robots.txt is fetched, and its rules hold.
    std::thread::sleep(Duration::from_secs(2).saturating_sub(seeded_at.elapsed()));
    assert!(f.robots_unknown(&yes));
    let done = fetch_all(&mut f, &[yes, no]);
    assert_eq!(done[0].outcome, Outcome::Disallowed);
    assert!(matches!(done[1].outcome, Outcome::Fetched(_)));
    assert_eq!(server.requests_to("s.test", "/robots.txt").len(), 1);
}
