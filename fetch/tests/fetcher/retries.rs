use std::time::{Duration, Instant, SystemTime};

use focuser_fetch::{FailKind, Outcome};
use focuser_tests::web::{Behaviour, WebServer};

use crate::{config, failed, fetch_one, gaps, wait_for_log};

#[test]
fn server_errors_are_retried_retry_delay_apart() {
    let server = WebServer::start().unwrap();
    server.set(
        "r.test",
        "/p",
        Behaviour::sequence(vec![
            Behaviour::status(503),
            Behaviour::status(500),
            Behaviour::html("ok"),
        ]),
    );
    let cfg = config(&server);
    let c = fetch_one(cfg.clone(), server.url("r.test", "/p"));
    assert!(
        matches!(&c.outcome, Outcome::Fetched(d) if d.body == b"ok"),
        "{c:?}"
    );
    assert_eq!(c.tries, 3);
    assert_eq!(c.status, Some(200));
    let log = wait_for_log(&server, "r.test", "/p", 3);
    assert_eq!(log.len(), 3);
    for gap in gaps(log) {
        assert!(gap >= cfg.retry_delay, "tries {gap:?} apart");
    }
}

#[test]
fn always_5xx_fails_after_the_tries() {
    let server = WebServer::start().unwrap();
    server.set("r.test", "/p", Behaviour::status(502));
    let c = fetch_one(config(&server), server.url("r.test", "/p"));
    let (kind, reason, status) = failed(&c);
    assert_eq!((kind, status), (FailKind::Server, Some(502)));
    assert!(reason.contains("after 3 tries"), "{reason}");
    assert_eq!(c.tries, 3);
    assert_eq!(wait_for_log(&server, "r.test", "/p", 3).len(), 3);
}

#[test]
fn too_many_requests_honours_retry_after() {
    let server = WebServer::start().unwrap();
    server.set(
        "r.test",
        "/secs",
        Behaviour::sequence(vec![
            Behaviour::too_many_requests("1"),
            Behaviour::html("ok"),
        ]),
    );
    let c = fetch_one(config(&server), server.url("r.test", "/secs"));
    assert!(matches!(c.outcome, Outcome::Fetched(_)), "{c:?}");
    assert_eq!(c.tries, 2);
    let gap = gaps(server.requests_to("r.test", "/secs"))[0];
    assert!(gap >= Duration::from_secs(1), "{gap:?}");

    // An HTTP date three seconds ahead (a date has whole seconds: at least two more). The retry
    // must not reach the server before it: the server notes a request when it has read it, never
    // earlier, so this holds however loaded the machine is. The date is mapped to the server's
    // clock through a pair of readings taken together.
    let (now_sys, now) = (SystemTime::now(), Instant::now());
    let at_sys = now_sys + Duration::from_secs(3);
    let at = httpdate::fmt_http_date(at_sys);
    let whole = httpdate::parse_http_date(&at).unwrap();
    let due = now + whole.duration_since(now_sys).unwrap();
    server.set(
        "d.test",
        "/date",
        Behaviour::sequence(vec![
            Behaviour::too_many_requests(&at),
            Behaviour::html("ok"),
        ]),
    );
    let c = fetch_one(config(&server), server.url("d.test", "/date"));
    assert!(matches!(c.outcome, Outcome::Fetched(_)), "{c:?}");
    let mut tries = server.requests_to("d.test", "/date");
    tries.sort_by_key(|l| l.start);
    assert_eq!(tries.len(), 2);
    // (10 ms for the granularity of the fetcher's timers.)
    assert!(
        tries[1].start + Duration::from_millis(10) >= due,
        "retried {:?} before the date",
        due - tries[1].start
    );

    // A wait beyond Fetch.MaxRetryAfter fails at once.
    server.set("r.test", "/long", Behaviour::too_many_requests("3600"));
    let c = fetch_one(config(&server), server.url("r.test", "/long"));
    assert_eq!(failed(&c).0, FailKind::RateLimited);
    assert_eq!((c.tries, c.status), (1, Some(429)));
}

#[test]
fn not_found_and_gone_are_gone() {
    let server = WebServer::start().unwrap();
    server.set("g.test", "/404", Behaviour::status(404));
    server.set("g.test", "/410", Behaviour::status(410));
    server.set("g.test", "/403", Behaviour::status(403));
    let c = fetch_one(config(&server), server.url("g.test", "/404"));
    assert_eq!((c.outcome, c.tries), (Outcome::Gone { status: 404 }, 1));
    let c = fetch_one(config(&server), server.url("g.test", "/410"));
    assert_eq!(c.outcome, Outcome::Gone { status: 410 });
    let c = fetch_one(config(&server), server.url("g.test", "/403"));
    assert_eq!(failed(&c).0, FailKind::Http);
    assert_eq!((c.tries, c.status), (1, Some(403)));
    assert_eq!(wait_for_log(&server, "g.test", "/403", 1).len(), 1);
}
