//! The URLs in hand (claimed and handed to the downloader) and when to claim more.
//!
//! Claims keep the downloader supplied: `2 × Fetch.Connections` transfers running or ready to
//! start. URLs waiting for their host's delay do not count, so with `Fetch.HostDelay` the hand
//! grows (up to `Fetch.Pending`) until enough hosts are ready. Claims come in batches: none is
//! made for less than half a batch.
//!
//! One domain holds at most `Crawl.PerDomain` URLs in hand: a popular domain whose URLs fill
//! the top of the priority order would otherwise fill the hand, and politeness would then
//! fetch one of its pages per `Fetch.HostDelay` while every other host waits. A claim skips
//! the domains at their share and takes no more of a domain than its share allows. When a
//! claim comes back short for that reason, the next waits (100 ms, doubling to 2 s): the
//! database then looks past every due URL of those domains, which costs.

use std::time::{Duration, Instant};

use focuser_schema::models::Url;
use rustc_hash::FxHashMap;

const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// The claims' settings, from `Fetch.*` and `Crawl.*`.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub connections: usize,
    /// `Fetch.Pending`: URLs in hand at most.
    pub pending: usize,
    pub claim_batch: usize,
    pub per_domain: usize,
}

#[derive(Default)]
pub struct Hand {
    urls: FxHashMap<u64, Url>,
    per_domain: FxHashMap<String, usize>,
    /// Claims wait until then after one came back short for the domains' shares.
    paused_until: Option<Instant>,
    pause: Duration,
}

impl Hand {
    pub fn len(&self) -> usize {
        self.urls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.urls.is_empty()
    }

    pub fn insert(&mut self, u: Url) {
        *self.per_domain.entry(u.domain.clone()).or_default() += 1;
        self.urls.insert(u.id, u);
    }

    pub fn remove(&mut self, id: u64) -> Option<Url> {
        let u = self.urls.remove(&id)?;
        if let Some(n) = self.per_domain.get_mut(&u.domain) {
            *n -= 1;
            if *n == 0 {
                self.per_domain.remove(&u.domain);
            }
        }
        Some(u)
    }

    /// How many URLs to claim now, given what the downloader is doing: a batch when it is
    /// short of at least half a batch, within `Fetch.Pending` in hand and only when there is
    /// room for half a batch (a claim costs a scan past every URL in hand and a commit, so
    /// claims are few and large).
    pub fn to_claim(&self, l: &Limits, in_flight: usize, ready_hosts: usize) -> usize {
        if self.paused_until.is_some_and(|t| Instant::now() < t) && !self.is_empty() {
            return 0;
        }
        let want = 2 * l.connections.max(1);
        let short = want.saturating_sub(in_flight + ready_hosts);
        if 2 * short < l.claim_batch.min(want).max(1) {
            return 0;
        }
        let n = l.claim_batch.min(l.pending.saturating_sub(self.len()));
        if 2 * n < l.claim_batch && !self.is_empty() {
            // The hand is nearly at Fetch.Pending: wait for room for half a batch.
            return 0;
        }
        n
    }

    /// The domains at their share, which a claim skips.
    pub fn full_domains(&self, l: &Limits) -> Vec<String> {
        self.per_domain
            .iter()
            .filter(|(_, n)| **n >= l.per_domain)
            .map(|(d, _)| d.clone())
            .collect()
    }

    /// A claim's filter: whether one more URL of `domain` fits its share, counting those
    /// taken by this claim in `taken`.
    pub fn fits(&self, l: &Limits, taken: &mut FxHashMap<String, usize>, domain: &str) -> bool {
        let held = self.per_domain.get(domain).copied().unwrap_or(0);
        let t = taken.entry(domain.to_string()).or_default();
        if held + *t >= l.per_domain {
            return false;
        }
        *t += 1;
        true
    }

    /// After a claim of `limit` that got `got` URLs; `limited`: domains were skipped or
    /// refused for their share.
    pub fn claimed(&mut self, limit: usize, got: usize, limited: bool) {
        if limited && 2 * got < limit {
            self.pause = (self.pause * 2).clamp(FIRST_PAUSE, MAX_PAUSE);
            self.paused_until = Some(Instant::now() + self.pause);
        } else {
            self.pause = Duration::ZERO;
            self.paused_until = None;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn url(id: u64, domain: &str) -> Url {
        let t = chrono::DateTime::from_timestamp(0, 0).unwrap().naive_utc();
        Url {
            id,
            url: format!("http://{domain}/{id}"),
            domain: domain.into(),
            path_hash: 0,
            hits: 1,
            download_prio: 1,
            updatetag: String::new(),
            first_seen: t,
            last_hit: t,
            last_downloaded: None,
            last_indexed: None,
            next_indexed: t,
            steady_level: 1.0,
            http_status: None,
            content_md5: None,
            doc_id: None,
            fetch_state: focuser_schema::models::FetchState::Claimed,
            claimed_by: None,
            claim_expires: None,
            errors: 0,
            fetch_ms: None,
            archive_file: None,
            archive_item: None,
            last_fetch: None,
            fetch_error: None,
        }
    }

    const L: Limits = Limits {
        connections: 64,
        pending: 4096,
        claim_batch: 100,
        per_domain: 2,
    };

    #[test]
    fn claims_keep_the_downloader_supplied_in_batches() {
        let mut h = Hand::default();
        assert_eq!(h.to_claim(&L, 0, 0), 100, "empty: a full batch");
        for id in 0..128 {
            h.insert(url(id, &format!("d{id}")));
        }
        assert_eq!(h.to_claim(&L, 64, 64), 0, "128 running or ready");
        assert_eq!(h.to_claim(&L, 64, 30), 0, "34 short: under half a batch");
        assert_eq!(h.to_claim(&L, 64, 10), 100, "54 short: a batch");
        // Everything else waits for its host's delay: the hand grows, up to Fetch.Pending.
        assert_eq!(h.to_claim(&L, 5, 0), 100);
        let room = Limits { pending: 190, ..L };
        assert_eq!(h.to_claim(&room, 5, 0), 62);
        let nearly_full = Limits { pending: 170, ..L };
        assert_eq!(
            h.to_claim(&nearly_full, 5, 0),
            0,
            "room for under half a batch"
        );
        // Few connections: half of 2 × Connections short is enough.
        let few = Limits {
            connections: 2,
            ..L
        };
        assert_eq!(h.to_claim(&few, 2, 1), 0);
        assert_eq!(h.to_claim(&few, 1, 1), 100);
    }

    #[test]
    fn a_domain_holds_its_share_at_most() {
        let mut h = Hand::default();
        h.insert(url(1, "hot.test"));
        let mut taken = FxHashMap::default();
        assert!(h.fits(&L, &mut taken, "hot.test"));
        assert!(!h.fits(&L, &mut taken, "hot.test"), "1 held + 1 taken");
        assert!(h.fits(&L, &mut taken, "other.test"));
        h.insert(url(2, "hot.test"));
        assert_eq!(h.full_domains(&L), ["hot.test"]);
        h.remove(1);
        assert!(h.full_domains(&L).is_empty());
        assert!(h.remove(1).is_none());
    }

    #[test]
    fn short_claims_for_shares_pause_the_next_doubling() {
        let mut h = Hand::default();
        h.insert(url(1, "hot.test"));
        h.claimed(100, 3, true);
        assert_eq!(h.to_claim(&L, 0, 0), 0, "paused");
        assert_eq!(h.pause, FIRST_PAUSE);
        h.claimed(100, 0, true);
        assert_eq!(h.pause, 2 * FIRST_PAUSE);
        for _ in 0..10 {
            h.claimed(100, 0, true);
        }
        assert_eq!(h.pause, MAX_PAUSE);
        h.claimed(100, 80, true);
        assert_eq!(h.to_claim(&L, 0, 0), 100, "a full claim ends the pause");
        h.claimed(100, 0, false);
        assert!(
            h.paused_until.is_none(),
            "short for lack of due URLs: no pause"
        );
        // An empty hand is never paused (nothing in hand means no domain is full).
        h.claimed(100, 0, true);
        h.remove(1);
        assert_eq!(h.to_claim(&L, 0, 0), 100);
    }
}
