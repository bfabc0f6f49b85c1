//! `Fetch.Backend = curl`: downloads through focuser-fetch (libcurl multi, politeness,
//! robots.txt, retries, limits).

use std::time::Duration;

use focuser_fetch::Fetcher;

use super::downloader::{
    Completed, DownloadError, Downloader, FetchStats, HostReport, Request, RobotsSeed,
};
use crate::config::FetchConfig;

pub struct Curl {
    fetcher: Fetcher,
}

/// A fetcher that reports its hosts (the record per host takes the reports at every step).
fn fetcher(cfg: &FetchConfig) -> Result<Fetcher, DownloadError> {
    let settings = cfg.fetcher().map_err(DownloadError)?;
    made(settings)
}

fn made(settings: focuser_fetch::FetchConfig) -> Result<Fetcher, DownloadError> {
    let mut f = Fetcher::new(settings).map_err(|e| DownloadError(e.to_string()))?;
    f.report_hosts();
    Ok(f)
}

impl Curl {
    pub fn new(cfg: &FetchConfig) -> Result<Curl, DownloadError> {
        Ok(Curl {
            fetcher: fetcher(cfg)?,
        })
    }
}

impl Downloader for Curl {
    fn submit(&mut self, request: Request) {
        self.fetcher.submit(request);
    }

    fn pending(&self) -> usize {
        self.fetcher.pending()
    }

    fn in_flight(&self) -> usize {
        self.fetcher.in_flight()
    }

    fn ready_hosts(&self) -> usize {
        self.fetcher.ready_hosts()
    }

    fn perform(&mut self, max_wait: Duration) -> Result<Vec<Completed>, DownloadError> {
        if self.fetcher.pending() == 0 {
            // Nothing to drive: libcurl would return at once.
            std::thread::sleep(max_wait);
            return Ok(Vec::new());
        }
        self.fetcher
            .perform(max_wait)
            .map_err(|e| DownloadError(e.to_string()))
    }

    fn stats(&self) -> FetchStats {
        self.fetcher.stats().clone()
    }

    /// A new fetcher once the old one has nothing pending (robots.txt is seeded again from the
    /// record per host, or fetched).
    fn reconfigure(&mut self, cfg: &FetchConfig) -> Result<bool, DownloadError> {
        let settings = cfg.fetcher().map_err(DownloadError)?;
        if &settings == self.fetcher.config() {
            return Ok(true);
        }
        if self.fetcher.pending() > 0 {
            return Ok(false);
        }
        self.fetcher = made(settings)?;
        log::info!("fetcher: new Fetch.* settings in use");
        Ok(true)
    }

    fn host_reports(&mut self) -> Vec<HostReport> {
        self.fetcher.take_host_reports()
    }

    fn robots_unknown(&self, url: &str) -> bool {
        self.fetcher.robots_unknown(url)
    }

    fn seed_robots(&mut self, url: &str, seed: RobotsSeed<'_>) -> bool {
        self.fetcher.seed_robots(url, seed)
    }
}
