use std::time::Duration;

use focuser_fetch::{FailKind, Fetcher, Outcome};
use focuser_tests::web::{Behaviour, WebServer};

use crate::{config, failed, fetch_all, fetch_one, wait_for_log};

#[test]
fn oversize_documents_are_aborted() {
    let server = WebServer::start().unwrap();
    let size = 256 << 20;
    server.set("big.test", "/declared", Behaviour::huge(size));
    server.set(
        "big.test",
        "/streamed",
        Behaviour::Huge {
            size,
            content_length: false,
        },
    );
    for path in ["/declared", "/streamed"] {
        let c = fetch_one(config(&server), server.url("big.test", path));
        assert_eq!(c.outcome, Outcome::TooLarge { limit: 100_000 }, "{path}");
        assert_eq!(c.tries, 1);
        // The server sees the client go away long before the end of the body.
        let log = wait_for_log(&server, "big.test", path, 1);
        assert_eq!(log.len(), 1, "{path}");
        assert!(
            log[0].aborted && log[0].sent < size / 4,
            "{path}: {:?}",
            log[0]
        );
    }
}

#[test]
fn redirects_are_followed_and_loops_fail() {
    let server = WebServer::start().unwrap();
    server.set("a.test", "/r1", Behaviour::redirect(301, "/r2"));
    let final_url = server.url("b.test", "/final");
    server.set("a.test", "/r2", Behaviour::redirect(302, &final_url));
    server.set("b.test", "/final", Behaviour::html("final"));
    let c = fetch_one(config(&server), server.url("a.test", "/r1"));
    match &c.outcome {
        Outcome::Fetched(d) => {
            assert_eq!(d.body, b"final");
            assert_eq!(
                d.redirects,
                [server.url("a.test", "/r1"), server.url("a.test", "/r2")]
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        (c.final_url.as_str(), c.tries, c.status),
        (final_url.as_str(), 3, Some(200))
    );
    // The target host's robots.txt was asked before its page.
    assert_eq!(server.requests_to("b.test", "/robots.txt").len(), 1);

    server.set("a.test", "/l1", Behaviour::redirect(301, "/l2"));
    server.set("a.test", "/l2", Behaviour::redirect(307, "/l1"));
    let c = fetch_one(config(&server), server.url("a.test", "/l1"));
    let (kind, reason, status) = failed(&c);
    assert_eq!((kind, status), (FailKind::Redirect, Some(307)));
    assert!(
        reason.contains("redirect loop") && reason.contains("/l1 -> ") && reason.contains("/l2"),
        "{reason}"
    );

    for i in 0..10 {
        server.set(
            "a.test",
            &format!("/c{i}"),
            Behaviour::redirect(302, &format!("/c{}", i + 1)),
        );
    }
    let c = fetch_one(config(&server), server.url("a.test", "/c0"));
    let (kind, reason, _) = failed(&c);
    assert_eq!(kind, FailKind::Redirect);
    assert!(
        reason.starts_with("more than 5 redirects") && reason.contains("/c6"),
        "{reason}"
    );
    assert_eq!(c.tries, 6);
}

#[test]
fn wrong_types_are_refused() {
    let server = WebServer::start().unwrap();
    server.set(
        "t.test",
        "/png",
        Behaviour::fixed(200, "image/png", vec![0x89; 5000]),
    );
    server.set("t.test", "/none", Behaviour::fixed(200, "", "no type"));
    let c = fetch_one(config(&server), server.url("t.test", "/png"));
    assert_eq!(
        c.outcome,
        Outcome::WrongType {
            content_type: "image/png".into()
        }
    );
    let mut cfg = config(&server);
    cfg.allowed_types = vec!["text/*".into()];
    let c = fetch_one(cfg.clone(), server.url("t.test", "/none"));
    assert!(matches!(c.outcome, Outcome::WrongType { .. }), "{c:?}");
    cfg.allowed_types.clear();
    let c = fetch_one(cfg, server.url("t.test", "/png"));
    assert!(
        matches!(&c.outcome, Outcome::Fetched(d) if d.body.len() == 5000),
        "{c:?}"
    );
}

#[test]
fn connect_refused_and_timeouts_fail_with_their_kind() {
    // A host that answered robots.txt and then went away: its pages are refused.
    let server = WebServer::start().unwrap();
    let cfg = config(&server);
    let mut f = Fetcher::new(cfg.clone()).unwrap();
    let first = fetch_all(&mut f, &[server.url("gone.test", "/a")]);
    assert!(matches!(first[0].outcome, Outcome::Fetched(_)));
    let url = server.url("gone.test", "/b");
    drop(server);
    let c = fetch_all(&mut f, &[url]).pop().unwrap();
    let (kind, reason, status) = failed(&c);
    assert_eq!(
        (kind, status, c.tries),
        (FailKind::Connect, None, 3),
        "{reason}"
    );
    assert!(reason.contains("gone.test"), "{reason}");
    assert_eq!(f.stats().failed(FailKind::Connect), 1);
    assert_eq!(f.stats().retries, 2);

    let server = WebServer::start().unwrap();
    // Fetch.Timeout also bounds the robots.txt each fetch_one asks for first: 2 s, so that a
    // loaded machine does not time that out instead.
    let mut cfg = config(&server);
    cfg.timeout = Duration::from_secs(2);
    cfg.retries = 2;
    server.set(
        "slow.test",
        "/x",
        Behaviour::delay(Duration::from_secs(10), Behaviour::html("late")),
    );
    let c = fetch_one(cfg.clone(), server.url("slow.test", "/x"));
    let (kind, reason, _) = failed(&c);
    assert_eq!((kind, c.tries), (FailKind::Timeout, 2), "{reason}");
    assert!(reason.contains("slow.test"), "{reason}");

    // Fetch.Timeout bounds the whole transfer, a slow body included.
    let slow_body = Behaviour::SlowBody {
        size: 3000,
        chunks: 6,
        interval: Duration::from_millis(500),
    };
    server.set("slow.test", "/body", slow_body);
    let c = fetch_one(cfg.clone(), server.url("slow.test", "/body"));
    assert_eq!(failed(&c).0, FailKind::Timeout);
    cfg.timeout = Duration::from_secs(30);
    let c = fetch_one(cfg, server.url("slow.test", "/body"));
    assert!(
        matches!(&c.outcome, Outcome::Fetched(d) if d.body.len() == 3000),
        "{c:?}"
    );
    assert!(
        c.fetch_time >= Duration::from_millis(2500),
        "{:?}",
        c.fetch_time
    );
}

#[test]
fn bad_urls_fail_at_once() {
    let server = WebServer::start().unwrap();
    let mut f = Fetcher::new(config(&server)).unwrap();
    let done = fetch_all(
        &mut f,
        &[
            "not a url".into(),
            "ftp://x.test/a".into(),
            "http:///".into(),
        ],
    );
    for c in done {
        assert_eq!((failed(&c).0, c.tries), (FailKind::Url, 0), "{c:?}");
    }
    assert!(server.log().is_empty());
}
