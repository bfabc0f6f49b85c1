//! The fetcher against the real test HTTP server over real libcurl: politeness checked from the
//! server's request log, robots.txt, retries, limits, redirects and malformed answers, and what it
//! reports per host.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hosts;
mod limits;
mod malformed;
mod politeness;
mod refused;
mod retries;
mod robots;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use focuser_fetch::{Completed, FetchConfig, Fetcher, Outcome, Request};
use focuser_tests::poll;
use focuser_tests::web::{Logged, WebServer};

/// The server stamps a request when its thread has read the head: on a new connection that is
/// after a thread was spawned for it, on a busy machine milliseconds after the client sent it,
/// while a request on a kept-alive connection is stamped at once. Gaps seen by the server may be
/// this much shorter than the client's.
pub const JITTER: Duration = Duration::from_millis(50);

/// Small delays so that the suite stays fast.
pub fn config(server: &WebServer) -> FetchConfig {
    FetchConfig {
        connections: 32,
        per_host: 1,
        host_delay: Duration::ZERO,
        connect_timeout: Duration::from_secs(2),
        timeout: Duration::from_secs(5),
        max_bytes: 100_000,
        user_agent: "yacobot/1.0 (+http://focuser.test/bot)".into(),
        robots_ttl: Duration::from_secs(60),
        robots_retry: Duration::from_secs(1),
        retries: 3,
        retry_delay: Duration::from_millis(200),
        resolve: server.resolve(),
        // The test server is on 127.0.0.1.
        allow_private: vec!["127.0.0.1".into()],
        ..FetchConfig::default()
    }
}

/// Submits every URL (tokens are their indexes) and drives the fetcher until all are done.
pub fn fetch_all(fetcher: &mut Fetcher, urls: &[String]) -> Vec<Completed> {
    for (i, url) in urls.iter().enumerate() {
        fetcher.submit(Request {
            token: i as u64,
            url: url.clone(),
        });
    }
    let mut done: HashMap<u64, Completed> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while fetcher.pending() > 0 {
        assert!(
            Instant::now() < deadline,
            "fetcher stuck with {} pending",
            fetcher.pending()
        );
        for c in fetcher.perform(Duration::from_millis(100)).unwrap() {
            assert!(
                done.insert(c.request.token, c).is_none(),
                "a request completed twice"
            );
        }
    }
    // Anything completed without waiting (bad URLs) comes with the next call.
    for c in fetcher.perform(Duration::ZERO).unwrap() {
        done.insert(c.request.token, c);
    }
    assert_eq!(done.len(), urls.len());
    (0..urls.len() as u64)
        .map(|t| done.remove(&t).unwrap())
        .collect()
}

pub fn fetch_one(cfg: FetchConfig, url: String) -> Completed {
    let mut f = Fetcher::new(cfg).unwrap();
    fetch_all(&mut f, &[url]).pop().unwrap()
}

pub fn failed(c: &Completed) -> (focuser_fetch::FailKind, &str, Option<u16>) {
    match &c.outcome {
        Outcome::Failed {
            kind,
            reason,
            status,
        } => (*kind, reason.as_str(), *status),
        other => panic!("{}: expected a failure, got {other:?}", c.request.url),
    }
}

/// Waits until the server has finished `n` requests to host and path (a client may be done with
/// an answer before the server's thread is).
pub fn wait_for_log(server: &WebServer, host: &str, path: &str, n: usize) -> Vec<Logged> {
    let mut got = Vec::new();
    poll(Duration::from_secs(30), || {
        got = server.requests_to(host, path);
        got.iter().filter(|l| l.finished).count() >= n
    });
    got
}

/// Start gaps of requests, sorted by start.
pub fn gaps(mut log: Vec<Logged>) -> Vec<Duration> {
    log.sort_by_key(|l| l.start);
    log.windows(2).map(|w| w[1].start - w[0].start).collect()
}
