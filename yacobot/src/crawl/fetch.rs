//! `Fetch.Backend = curl`: downloads through focuser-fetch (libcurl multi, politeness,
//! robots.txt, retries, limits).

use std::time::Duration;

use focuser_fetch::{Fetcher, ProxyAuth};

use super::downloader::{
    Completed, DownloadError, Downloader, FetchStats, HostReport, Request, RobotsSeed,
};
use crate::config::FetchConfig;

pub struct Curl {
    fetcher: Fetcher,
    /// `Fetch.ProxyAuthFile`'s credentials, read at start.
    proxy_auth: Option<ProxyAuth>,
}

/// The fetcher's settings: `Fetch.*` and the proxy's credentials.
fn settings(
    cfg: &FetchConfig,
    proxy_auth: &Option<ProxyAuth>,
) -> Result<focuser_fetch::FetchConfig, DownloadError> {
    let mut settings = cfg.fetcher().map_err(DownloadError)?;
    settings.proxy_auth = proxy_auth.clone();
    Ok(settings)
}

fn made(settings: focuser_fetch::FetchConfig) -> Result<Fetcher, DownloadError> {
    let mut f = Fetcher::new(settings).map_err(|e| DownloadError(e.to_string()))?;
    f.report_hosts();
    Ok(f)
}

impl Curl {
    pub fn new(cfg: &FetchConfig, proxy_auth: Option<ProxyAuth>) -> Result<Curl, DownloadError> {
        Ok(Curl {
            fetcher: made(settings(cfg, &proxy_auth)?)?,
            proxy_auth,
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
        let settings = settings(cfg, &self.proxy_auth)?;
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
