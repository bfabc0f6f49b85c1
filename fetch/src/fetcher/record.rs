//! The fetcher's side of a caller's record per host: what each finished transfer and request
//! adds to its host's report, and robots.txt given back by the caller (seeds) so that a
//! restart does not fetch every robots.txt again.

use super::*;
use crate::outcome::Outcome;
use crate::report::{DelaySource, HostReport, RobotsReport};
use crate::robots::RobotsSeed;

impl Fetcher {
    /// Keeps a [`HostReport`] per host from now on, to be taken with
    /// [`Fetcher::take_host_reports`] (often: reports are kept until taken).
    pub fn report_hosts(&mut self) {
        self.reports.on = true;
    }

    /// The reports gathered since the last call, one per host, by host name.
    pub fn take_host_reports(&mut self) -> Vec<HostReport> {
        self.reports.take()
    }

    /// Whether the fetcher knows no robots.txt for `url`'s host (never fetched, forgotten, or
    /// run out): a caller that kept one may [`Fetcher::seed_robots`] it.
    pub fn robots_unknown(&self, url: &str) -> bool {
        let Ok(u) = url::Url::parse(url) else {
            return false;
        };
        match self
            .hosts
            .lookup(&host_key(&u))
            .and_then(|id| self.hosts.peek(id))
        {
            Some(host) => matches!(host.robots.current(Instant::now()), Current::Fetch),
            None => true,
        }
    }

    /// Takes `seed` as the robots.txt of `url`'s host, unless the fetcher knows one or is
    /// fetching it. A seed is trusted no longer than `Fetch.RobotsTtl`; only a 2xx or 4xx is
    /// taken. Returns whether it was.
    pub fn seed_robots(&mut self, url: &str, mut seed: RobotsSeed<'_>) -> bool {
        let Ok(u) = url::Url::parse(url)
            .map_err(|e| e.to_string())
            .and_then(checked)
        else {
            return false;
        };
        let now = Instant::now();
        seed.remaining = seed.remaining.min(self.cfg.robots_ttl);
        let Some(state) = robots::from_seed(&self.agent, seed, now) else {
            return false;
        };
        let id = self.hosts.id(&host_key(&u), now);
        let Some(host) = self.hosts.get(id) else {
            return false;
        };
        if !matches!(host.robots.current(now), Current::Fetch) || host.robots_next.is_some() {
            return false;
        }
        host.robots = state;
        self.stats.robots_seeded += 1;
        true
    }

    /// The politeness in force for host `id`, and where it comes from.
    fn politeness(&mut self, id: usize) -> (Duration, DelaySource) {
        let base = self.cfg.host_delay;
        match self.hosts.get(id).and_then(|h| h.robots.crawl_delay()) {
            Some(d) if d > base => (d, DelaySource::CrawlDelay),
            _ => (base, DelaySource::Config),
        }
    }

    /// The report of host `id`, if reports are kept.
    fn report(&mut self, id: usize) -> Option<&mut HostReport> {
        if !self.reports.on {
            return None;
        }
        let (delay, source) = self.politeness(id);
        let name = self.hosts.get(id)?.name().to_string();
        self.reports.of(&name, delay, source)
    }

    /// A page transfer of host `id` ended with an answer (a status line came back).
    pub(super) fn report_answer(&mut self, id: usize, done: &Finished) {
        if done.status.is_none() {
            return;
        }
        let (received, took) = (done.received, done.took);
        let server = done.server.clone();
        if let Some(r) = self.report(id) {
            r.answer(received, took, server.as_deref());
        }
    }

    /// A request ended (at its last hop's host): answered, or failed. A URL the fetcher could
    /// not even take, or one robots.txt disallows, says nothing of the host.
    pub(super) fn report_request(&mut self, job: &Job, outcome: &Outcome) {
        let (fetched, error) = match outcome {
            Outcome::Fetched(_) => (true, None),
            Outcome::Gone { .. } | Outcome::TooLarge { .. } | Outcome::WrongType { .. } => {
                (false, None)
            }
            Outcome::Disallowed
            | Outcome::Failed {
                kind: FailKind::Url,
                ..
            } => return,
            Outcome::Failed { reason, .. } => (false, Some(reason.as_str())),
        };
        let Some(id) = self.hosts.lookup(&host_key(&job.url)) else {
            return;
        };
        if let Some(r) = self.report(id) {
            r.request(fetched, error);
        }
    }

    /// robots.txt of host `id` was answered (`status`), or not at all (`None`); trusted for
    /// `ttl`.
    pub(super) fn report_robots(
        &mut self,
        id: usize,
        status: Option<u16>,
        body: Vec<u8>,
        ttl: Duration,
        server: Option<&str>,
    ) {
        let fetched_at = std::time::SystemTime::now();
        if let Some(r) = self.report(id) {
            if let Some(s) = server {
                r.server = Some(s.to_string());
            }
            r.robots = Some(RobotsReport {
                fetched_at,
                ttl,
                status,
                body,
            });
        }
    }
}
