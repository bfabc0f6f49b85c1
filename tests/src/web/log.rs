//! Every request the test server saw, and the politeness figures tests check against it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    pub host: String,
    /// Path and query, as sent.
    pub path: String,
    /// The User-Agent header (empty without one): which client asked.
    pub user_agent: String,
    /// When its request head was read, and when the last write of its answer began (`None`
    /// before that): the interval lies within the client's transfer.
    pub start: Instant,
    pub end: Option<Instant>,
    /// Requests to this host in progress when it started, itself included.
    pub concurrent: usize,
    /// The connection it came on (numbered in accept order): keep-alive reuse shows here.
    pub connection: u64,
    /// Body bytes written.
    pub sent: u64,
    /// The client went away before the answer was complete (a write failed).
    pub aborted: bool,
    /// The answer is written or given up: `sent` and `aborted` are final.
    pub finished: bool,
}

impl Logged {
    /// Was this request in progress at `at`?
    pub fn spans(&self, at: Instant) -> bool {
        self.start <= at && self.end.is_none_or(|end| at < end)
    }
}

/// What a log says about the politeness of its client, per host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFigures {
    pub requests: usize,
    pub max_concurrent: usize,
    /// The shortest time between the starts of two requests (None for a single request).
    pub min_gap: Option<Duration>,
    /// From the first start to the last. A start the server notes late shortens the gap after
    /// it and lengthens the one before, so the span checks the average gap; only a late first
    /// start (often on a new connection) or an early last one shortens it.
    pub span: Option<Duration>,
}

/// The most requests in progress at once at any start, over the whole log.
pub fn max_concurrent(log: &[Logged]) -> usize {
    log.iter()
        .map(|a| log.iter().filter(|b| b.spans(a.start)).count())
        .max()
        .unwrap_or(0)
}

/// Per-host figures of a log.
pub fn by_host(log: &[Logged]) -> BTreeMap<String, HostFigures> {
    let mut starts: BTreeMap<String, Vec<&Logged>> = BTreeMap::new();
    for r in log {
        starts.entry(r.host.clone()).or_default().push(r);
    }
    starts
        .into_iter()
        .map(|(host, mut rs)| {
            rs.sort_by_key(|r| r.start);
            let min_gap = rs
                .windows(2)
                .map(|w| w[1].start.duration_since(w[0].start))
                .min();
            let span = match (rs.first(), rs.last()) {
                (Some(a), Some(b)) if rs.len() > 1 => Some(b.start.duration_since(a.start)),
                _ => None,
            };
            let figures = HostFigures {
                requests: rs.len(),
                max_concurrent: rs.iter().map(|r| r.concurrent).max().unwrap_or(0),
                min_gap,
                span,
            };
            (host, figures)
        })
        .collect()
}
