//! Counters of a fetcher's life, for logs, the status page and `/metrics`.

use std::time::Duration;

use crate::outcome::{FailKind, Outcome};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FetchStats {
    /// Transfers started: tries, redirect hops and robots.txt fetches.
    pub transfers: u64,
    pub robots_fetches: u64,
    /// robots.txt taken from the caller's record instead of being fetched
    /// ([`crate::Fetcher::seed_robots`]).
    pub robots_seeded: u64,
    /// Tries after the first (network errors, 5xx, 429).
    pub retries: u64,
    pub redirects: u64,
    /// Requests finished, by outcome.
    pub fetched: u64,
    pub gone: u64,
    pub disallowed: u64,
    pub too_large: u64,
    pub wrong_type: u64,
    /// Failed requests by kind, indexed as [`FailKind::ALL`].
    pub failed: [u64; FailKind::ALL.len()],
    /// Body bytes received by every transfer.
    pub bytes: u64,
    /// Times a host had work but had to wait for its delay, and the time it waited in all.
    pub host_waits: u64,
    pub host_wait_time: Duration,
    /// Hosts currently remembered (queues, politeness, robots.txt cache).
    pub hosts: usize,
}

impl FetchStats {
    pub fn failed(&self, kind: FailKind) -> u64 {
        self.failed[kind as usize]
    }

    pub fn completed(&self) -> u64 {
        self.fetched
            + self.gone
            + self.disallowed
            + self.too_large
            + self.wrong_type
            + self.failed.iter().sum::<u64>()
    }

    pub(crate) fn count(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Fetched(_) => self.fetched += 1,
            Outcome::Gone { .. } => self.gone += 1,
            Outcome::Disallowed => self.disallowed += 1,
            Outcome::TooLarge { .. } => self.too_large += 1,
            Outcome::WrongType { .. } => self.wrong_type += 1,
            Outcome::Failed { kind, .. } => self.failed[*kind as usize] += 1,
        }
    }
}
