//! The seam between the crawler and whatever downloads pages: requests go in with a token (the
//! URL id), completions come out, in focuser-fetch's types. [`super::fetch::Curl`] is the
//! libcurl fetcher; [`super::mirror::Mirror`] reads a local mirror tree.

use std::time::Duration;

pub use focuser_fetch::{
    Completed, Document, FailKind, FetchStats, HostReport, Outcome, Request, RobotsSeed,
};

#[derive(Debug, thiserror::Error)]
#[error("downloader: {0}")]
pub struct DownloadError(pub String);

/// A downloader: at most its own number of transfers in flight, the rest pending. Not `Send`:
/// a libcurl multi handle stays on the thread that made it (the crawl worker's).
pub trait Downloader {
    fn submit(&mut self, request: Request);
    /// Requests submitted and not yet returned.
    fn pending(&self) -> usize;
    fn in_flight(&self) -> usize;
    /// Hosts that could start a transfer now (see `Fetcher::ready_hosts`).
    fn ready_hosts(&self) -> usize {
        self.pending()
    }
    /// Works for at most `max_wait` and returns what completed meanwhile.
    fn perform(&mut self, max_wait: Duration) -> Result<Vec<Completed>, DownloadError>;
    /// The downloader's counters since it was made.
    fn stats(&self) -> FetchStats {
        FetchStats::default()
    }
    /// Its news of each host since the last call, for the record per host (none by default).
    fn host_reports(&mut self) -> Vec<HostReport> {
        Vec::new()
    }
    /// Whether it knows no robots.txt for `url`'s host (see `Fetcher::robots_unknown`).
    fn robots_unknown(&self, _url: &str) -> bool {
        false
    }
    /// Takes a kept robots.txt for `url`'s host (see `Fetcher::seed_robots`).
    fn seed_robots(&mut self, _url: &str, _seed: RobotsSeed<'_>) -> bool {
        false
    }
    /// Takes `Fetch.*` settings from a reloaded config: `Ok(false)` while requests are still
    /// pending (the caller stops submitting and asks again).
    fn reconfigure(&mut self, _cfg: &crate::config::FetchConfig) -> Result<bool, DownloadError> {
        Ok(true)
    }
}
