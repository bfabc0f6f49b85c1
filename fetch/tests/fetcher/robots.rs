use std::time::Duration;

use focuser_fetch::{FailKind, Fetcher, Outcome};
use focuser_tests::web::{Behaviour, WebServer};

use crate::{config, failed, fetch_all, fetch_one, gaps, JITTER};

#[test]
fn robots_disallow_is_obeyed_for_our_agent() {
    let server = WebServer::start().unwrap();
    server.set_robots(
        "a.test",
        "User-agent: yacobot\nDisallow: /private\n\nUser-agent: *\nDisallow: /\n",
    );
    server.set_robots(
        "b.test",
        "User-agent: otherbot\nAllow: /\n\nUser-agent: *\nDisallow: /\n",
    );
    // c.test has no robots.txt (404): everything is allowed.
    let urls = vec![
        server.url("a.test", "/private/1"),
        server.url("a.test", "/public/1"),
        server.url("a.test", "/private?x=1"),
        server.url("b.test", "/anything"),
        server.url("c.test", "/anything"),
    ];
    let mut f = Fetcher::new(config(&server)).unwrap();
    let done = fetch_all(&mut f, &urls);
    let outcomes: Vec<bool> = done
        .iter()
        .map(|c| match &c.outcome {
            Outcome::Fetched(_) => true,
            Outcome::Disallowed => false,
            other => panic!("{}: {other:?}", c.request.url),
        })
        .collect();
    assert_eq!(outcomes, [false, true, false, false, true]);
    assert_eq!(done[0].tries, 0, "a disallowed URL is never requested");

    let mut paths: Vec<(String, String)> =
        server.log().into_iter().map(|l| (l.host, l.path)).collect();
    paths.sort();
    let expect: Vec<(String, String)> = [
        ("a.test", "/public/1"),
        ("a.test", "/robots.txt"),
        ("b.test", "/robots.txt"),
        ("c.test", "/anything"),
        ("c.test", "/robots.txt"),
    ]
    .iter()
    .map(|(h, p)| (h.to_string(), p.to_string()))
    .collect();
    assert_eq!(paths, expect);
    assert_eq!(f.stats().disallowed, 3);
    assert_eq!(f.stats().robots_fetches, 3);
}

#[test]
fn crawl_delay_is_a_lower_bound_on_the_host_delay() {
    let server = WebServer::start().unwrap();
    server.set_robots("slow.test", "User-agent: *\nCrawl-delay: 0.5\n");
    let urls: Vec<String> = (0..4)
        .map(|p| server.url("slow.test", &format!("/p{p}")))
        .collect();
    let cfg = config(&server).with_politeness(2, Duration::from_millis(100));
    let mut f = Fetcher::new(cfg).unwrap();
    fetch_all(&mut f, &urls);
    let log = server.log();
    assert_eq!(log.len(), 5);
    // robots.txt included: the delay counts from it. (Three jitters: robots.txt and the first
    // page come on new connections, whose notes may be late; HostDelay in place of the
    // Crawl-delay would still fail, at 100 ms.)
    for gap in gaps(log) {
        assert!(
            gap + 3 * JITTER >= Duration::from_millis(500),
            "requests {gap:?} apart"
        );
    }
}

#[test]
fn robots_txt_is_cached_for_its_ttl() {
    let server = WebServer::start().unwrap();
    server.set_robots("ttl.test", "User-agent: *\nDisallow: /no\n");
    // Long enough for the first two rounds on a loaded machine.
    let mut cfg = config(&server);
    cfg.robots_ttl = Duration::from_secs(3);
    let mut f = Fetcher::new(cfg).unwrap();
    let first = fetch_all(
        &mut f,
        &[server.url("ttl.test", "/a"), server.url("ttl.test", "/no")],
    );
    assert!(matches!(first[0].outcome, Outcome::Fetched(_)));
    assert_eq!(first[1].outcome, Outcome::Disallowed);
    // Within the TTL the cached rules hold, even though the file changed.
    server.set_robots("ttl.test", "User-agent: *\nDisallow: /a\n");
    let second = fetch_all(&mut f, &[server.url("ttl.test", "/a")]);
    assert!(matches!(second[0].outcome, Outcome::Fetched(_)));
    assert_eq!(server.requests_to("ttl.test", "/robots.txt").len(), 1);
    // After it, the file is fetched again and the new rules apply.
    std::thread::sleep(Duration::from_millis(3100));
    let third = fetch_all(
        &mut f,
        &[server.url("ttl.test", "/a"), server.url("ttl.test", "/no")],
    );
    assert_eq!(third[0].outcome, Outcome::Disallowed);
    assert!(matches!(third[1].outcome, Outcome::Fetched(_)));
    assert_eq!(server.requests_to("ttl.test", "/robots.txt").len(), 2);
}

#[test]
fn robots_5xx_disallows_for_a_while_and_4xx_allows_all() {
    let server = WebServer::start().unwrap();
    server.set("down.test", "/robots.txt", Behaviour::status(503));
    server.set("closed.test", "/robots.txt", Behaviour::status(403));
    // Long enough for the first two rounds on a loaded machine.
    let mut cfg = config(&server);
    cfg.robots_retry = Duration::from_secs(3);
    let mut f = Fetcher::new(cfg.clone()).unwrap();
    let done = fetch_all(
        &mut f,
        &[
            server.url("down.test", "/a"),
            server.url("down.test", "/b"),
            server.url("closed.test", "/a"),
        ],
    );
    for c in &done[..2] {
        let (kind, reason, _) = failed(c);
        assert_eq!(kind, FailKind::Robots);
        assert!(reason.contains("robots.txt answered 503"), "{reason}");
    }
    assert!(matches!(done[2].outcome, Outcome::Fetched(_)));
    assert!(server.requests_to("down.test", "/a").is_empty());
    assert_eq!(server.requests_to("down.test", "/robots.txt").len(), 1);

    // Within Fetch.RobotsRetry robots.txt is not asked again; after it, it is.
    let again = fetch_all(&mut f, &[server.url("down.test", "/a")]);
    assert_eq!(failed(&again[0]).0, FailKind::Robots);
    assert_eq!(server.requests_to("down.test", "/robots.txt").len(), 1);
    server.set_robots("down.test", "User-agent: *\nAllow: /\n");
    std::thread::sleep(cfg.robots_retry);
    let later = fetch_all(&mut f, &[server.url("down.test", "/a")]);
    assert!(matches!(later[0].outcome, Outcome::Fetched(_)));

    // robots.txt that cannot be reached at all disallows too.
    server.set("gone.test", "/robots.txt", Behaviour::Close);
    let c = fetch_one(cfg, server.url("gone.test", "/a"));
    let (kind, reason, _) = failed(&c);
    assert_eq!(kind, FailKind::Robots);
    assert!(reason.contains("unreachable"), "{reason}");
}
