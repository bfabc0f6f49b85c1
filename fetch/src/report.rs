//! What the fetcher tells its caller about each host, so that the caller can keep a record per
//! host (yacobot's `host` table) without the fetcher doing any I/O: the answers since the last
//! [`crate::Fetcher::take_host_reports`], summed up per host, and robots.txt as it came. The
//! caller gives robots.txt back after a restart with [`crate::Fetcher::seed_robots`].

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

/// Where the delay between two requests to a host comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelaySource {
    /// `Fetch.HostDelay`.
    Config,
    /// The host's robots.txt `Crawl-delay`, longer than `Fetch.HostDelay`.
    CrawlDelay,
}

/// A robots.txt answer, as the fetcher took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotsReport {
    pub fetched_at: SystemTime,
    /// How long the answer is trusted: `Fetch.RobotsTtl`, or `Fetch.RobotsRetry` for a 5xx or
    /// no answer.
    pub ttl: Duration,
    /// The HTTP status; `None` when there was no answer (unreachable, or an address refused).
    pub status: Option<u16>,
    /// The file as read (up to 512 KiB), for a 2xx; empty otherwise.
    pub body: Vec<u8>,
}

/// One host's news since the last report.
#[derive(Debug, Clone, PartialEq)]
pub struct HostReport {
    /// `name:port`, the port always written (`a.example:80`): the key a caller files it under
    /// ([`host_name`]).
    pub host: String,
    /// Pages fetched (outcome *fetched*).
    pub documents: u64,
    /// Page transfers that got an answer, their body bytes and their time: the host's speed.
    pub answers: u64,
    pub bytes: u64,
    pub transfer_time: Duration,
    /// The `Server` header of the last answer that had one.
    pub server: Option<String>,
    /// Requests that failed (outcome *failed*), and how many of them came after the last one
    /// the host answered (all of them when `answered` is false).
    pub errors: u64,
    pub errors_in_row: u64,
    /// Whether a request was answered (fetched, gone, too large, wrong type): the errors in
    /// a row start again from `errors_in_row`.
    pub answered: bool,
    pub last_error: Option<String>,
    /// The politeness in force at the last transfer.
    pub delay: Duration,
    pub delay_source: DelaySource,
    /// robots.txt, when it was fetched (the last answer if several).
    pub robots: Option<RobotsReport>,
}

impl HostReport {
    fn new(host: String, delay: Duration, delay_source: DelaySource) -> HostReport {
        HostReport {
            host,
            documents: 0,
            answers: 0,
            bytes: 0,
            transfer_time: Duration::ZERO,
            server: None,
            errors: 0,
            errors_in_row: 0,
            answered: false,
            last_error: None,
            delay,
            delay_source,
            robots: None,
        }
    }
}

/// `name:port` of a URL's host, the port always written: `http://A.example/x` →
/// `a.example:80`, `https://[::1]:8443/` → `[::1]:8443`.
pub fn host_name(url: &url::Url) -> Option<String> {
    let host = url.host_str().filter(|h| !h.is_empty())?;
    Some(format!("{host}:{}", url.port_or_known_default()?))
}

/// [`host_name`] of a URL given as text.
pub fn host_name_of(url: &str) -> Option<String> {
    host_name(&url::Url::parse(url).ok()?)
}

/// The reports gathered since the caller last took them (only while the caller asked for
/// them: a fetcher whose reports nobody takes keeps none).
#[derive(Debug, Default)]
pub(crate) struct Reports {
    pub on: bool,
    hosts: HashMap<String, HostReport>,
}

impl Reports {
    /// The report of `host` (`name:port`), with the politeness in force now.
    pub fn of(
        &mut self,
        host: &str,
        delay: Duration,
        source: DelaySource,
    ) -> Option<&mut HostReport> {
        if !self.on {
            return None;
        }
        let r = self
            .hosts
            .entry(host.to_string())
            .or_insert_with(|| HostReport::new(host.to_string(), delay, source));
        r.delay = delay;
        r.delay_source = source;
        Some(r)
    }

    pub fn take(&mut self) -> Vec<HostReport> {
        let mut out: Vec<HostReport> = self.hosts.drain().map(|(_, r)| r).collect();
        out.sort_by(|a, b| a.host.cmp(&b.host));
        out
    }
}

impl HostReport {
    /// A page transfer that got an answer of `bytes` in `took`.
    pub(crate) fn answer(&mut self, bytes: u64, took: Duration, server: Option<&str>) {
        self.answers += 1;
        self.bytes += bytes;
        self.transfer_time += took;
        if let Some(s) = server {
            self.server = Some(s.to_string());
        }
    }

    /// A request that ended: answered, or failed with `error`.
    pub(crate) fn request(&mut self, fetched: bool, error: Option<&str>) {
        self.documents += u64::from(fetched);
        match error {
            Some(e) => {
                self.errors += 1;
                self.errors_in_row += 1;
                self.last_error = Some(e.to_string());
            }
            None => {
                self.answered = true;
                self.errors_in_row = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn host_names_always_have_their_port() {
        assert_eq!(
            host_name_of("http://A.example/x").as_deref(),
            Some("a.example:80")
        );
        assert_eq!(
            host_name_of("https://a.example/").as_deref(),
            Some("a.example:443")
        );
        assert_eq!(
            host_name_of("https://[::1]:8443/").as_deref(),
            Some("[::1]:8443")
        );
        assert_eq!(host_name_of("not a url"), None);
    }

    #[test]
    fn errors_in_a_row_start_again_after_an_answer() {
        let mut reports = Reports {
            on: true,
            ..Reports::default()
        };
        let d = Duration::from_secs(1);
        let r = reports.of("a:80", d, DelaySource::Config).unwrap();
        r.request(false, Some("timeout"));
        r.request(true, None);
        r.request(false, Some("reset"));
        r.request(false, Some("reset again"));
        r.answer(1000, Duration::from_millis(500), Some("nginx"));
        let r = reports.of("a:80", 2 * d, DelaySource::CrawlDelay).unwrap();
        assert_eq!(r.delay_source, DelaySource::CrawlDelay);
        let taken = reports.take();
        assert_eq!(taken.len(), 1);
        let r = &taken[0];
        assert_eq!(
            (r.documents, r.errors, r.errors_in_row, r.answered),
            (1, 3, 2, true)
        );
        assert_eq!(r.last_error.as_deref(), Some("reset again"));
        assert_eq!(
            (r.answers, r.bytes, r.server.as_deref()),
            (1, 1000, Some("nginx"))
        );
        assert!(reports.take().is_empty(), "taken");
        let mut off = Reports::default();
        assert!(off.of("a:80", d, DelaySource::Config).is_none());
    }
}
