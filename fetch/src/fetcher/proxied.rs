//! Transfers through the proxy: which go there (all but `Fetch.NoProxy`'s hosts), and the check
//! of their target's name before they start (`crate::lookup`): a transfer whose name is being
//! looked up goes back to its host, which waits for the answer; one whose name is refused (an
//! address not public) or does not resolve ends as a direct transfer would have.

use std::net::IpAddr;

use super::*;
use crate::lookup::{self, Check};

impl Fetcher {
    /// Does the transfer to `url` go through the proxy?
    pub(super) fn via_proxy(&self, url: &str) -> bool {
        self.proxy.is_some() && url::Url::parse(url).is_ok_and(|u| !self.no_proxy.matches(&u))
    }

    /// May host `id`'s transfer to `url` through the proxy start now?
    pub(super) fn check_target(&mut self, id: usize, url: &str, now: Instant) -> Check {
        // Not a URL: `prepare` fails it. An address as host was checked when the URL was
        // taken, and at its redirect hop.
        let Ok(u) = url::Url::parse(url) else {
            return Check::Go;
        };
        let Some(url::Host::Domain(name)) = u.host() else {
            return Check::Go;
        };
        // `Fetch.Resolve` names the address: no lookup.
        if let Some(addr) = self.resolve_addr(&u) {
            let addrs = addr
                .trim_matches(['[', ']'])
                .parse::<IpAddr>()
                .map(|ip| vec![ip])
                .map_err(std::io::Error::other);
            return match lookup::judge(name, addrs, &self.private) {
                Ok(()) => Check::Go,
                Err((kind, why)) => Check::Fail(kind, why),
            };
        }
        self.lookups.check(name, id, now)
    }

    /// A transfer waiting for its name's lookup goes back where it came from; its host is not
    /// armed until the answer ([`Fetcher::wake_checked`]).
    pub(super) fn put_back(&mut self, id: usize, url: String, purpose: Purpose) {
        if let Some(host) = self.hosts.get(id) {
            host.checking = true;
            match purpose {
                Purpose::Page(job) => host.queue.push_front(job),
                Purpose::Robots { hops } => host.robots_next = Some((url, hops)),
            }
        }
    }

    /// The hosts whose lookups were answered may start again.
    pub(super) fn wake_checked(&mut self, now: Instant) {
        if !self.lookups.looking() {
            return;
        }
        let retry = self.cfg.retry_delay;
        for id in self.lookups.answers(&self.private, retry, now) {
            if let Some(host) = self.hosts.get(id) {
                host.checking = false;
            }
            self.arm(id, now);
        }
    }

    /// A transfer whose target's name is refused, or does not resolve, ends without a byte
    /// sent: a page fails with kind `refused` (or is tried again, kind `dns`), robots.txt is
    /// settled as refused (or unreachable).
    pub(super) fn target_failed(
        &mut self,
        id: usize,
        url: String,
        purpose: Purpose,
        kind: FailKind,
        why: String,
        now: Instant,
    ) {
        let reason = format!("{url}: {why}");
        match (purpose, kind) {
            (Purpose::Page(mut job), FailKind::Dns) => {
                job.hop_tries += 1;
                self.retry(id, job, kind, reason, self.cfg.retry_delay, now);
            }
            (Purpose::Page(job), _) => self.fail(job, kind, reason),
            (Purpose::Robots { .. }, FailKind::Refused) => self.robots_refused(id, reason, now),
            (Purpose::Robots { .. }, _) => self.robots_done(id, Err(reason), now, None),
        }
        self.arm(id, now);
    }
}
