//! Password checks for the status endpoint's POSTs, rationed per peer address: one check at a
//! time per address, and after [`MAX_FAILURES`] wrong passwords within [`WINDOW`] the address
//! is answered 429 without a check for [`PAUSE`]. An argon2 check is slow and takes 19 MiB by
//! design; without a ration a peer could keep the machine busy hashing.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Wrong passwords an address may send within [`WINDOW`] ...
pub const MAX_FAILURES: u32 = 5;
pub const WINDOW: Duration = Duration::from_secs(60);
/// ... before its checks pause for this long.
pub const PAUSE: Duration = Duration::from_secs(60);
/// Addresses tracked at most; past it, entries with nothing to remember are dropped first.
const MAX_PEERS: usize = 4096;

#[derive(Debug)]
struct Peer {
    failures: u32,
    since: Instant,
    paused_until: Option<Instant>,
    checking: bool,
}

/// The ration of every peer address.
#[derive(Debug, Default)]
pub struct Ration {
    peers: HashMap<IpAddr, Peer>,
}

impl Ration {
    /// Whether `peer` may have a password checked now. `Err` holds how long it should wait:
    /// its checks are paused, or one of its checks is under way.
    pub fn begin(&mut self, peer: IpAddr, now: Instant) -> Result<(), Duration> {
        if self.peers.len() >= MAX_PEERS && !self.peers.contains_key(&peer) {
            self.peers.retain(|_, p| {
                p.checking
                    || p.paused_until.is_some_and(|t| t > now)
                    || now.duration_since(p.since) < WINDOW
            });
            if self.peers.len() >= MAX_PEERS {
                return Err(PAUSE);
            }
        }
        let entry = self.peers.entry(peer).or_insert(Peer {
            failures: 0,
            since: now,
            paused_until: None,
            checking: false,
        });
        if let Some(until) = entry.paused_until.filter(|t| *t > now) {
            return Err(until - now);
        }
        if entry.checking {
            return Err(Duration::from_secs(1));
        }
        entry.checking = true;
        Ok(())
    }

    /// Ends the check [`Ration::begin`] allowed. Returns whether `peer` is now paused.
    pub fn end(&mut self, peer: IpAddr, now: Instant, right: bool) -> bool {
        if right {
            self.peers.remove(&peer);
            return false;
        }
        let Some(entry) = self.peers.get_mut(&peer) else {
            return false;
        };
        entry.checking = false;
        if now.duration_since(entry.since) >= WINDOW || entry.paused_until.is_some() {
            entry.failures = 0;
            entry.since = now;
            entry.paused_until = None;
        }
        entry.failures += 1;
        if entry.failures >= MAX_FAILURES {
            entry.paused_until = Some(now + PAUSE);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_failures_pause_an_address_and_others_go_on() {
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let t0 = Instant::now();
        let mut r = Ration::default();
        for i in 1..=MAX_FAILURES {
            r.begin(a, t0).unwrap();
            assert!(r.begin(a, t0).is_err(), "one check at a time");
            assert_eq!(r.end(a, t0, false), i == MAX_FAILURES);
        }
        assert_eq!(
            r.begin(a, t0 + Duration::from_secs(10)),
            Err(PAUSE - Duration::from_secs(10))
        );
        r.begin(b, t0).unwrap();
        assert!(!r.end(b, t0, true));
        // The pause ends, and failures count afresh.
        let later = t0 + PAUSE + Duration::from_secs(1);
        r.begin(a, later).unwrap();
        assert!(!r.end(a, later, false));
        r.begin(a, later).unwrap();
        assert!(!r.end(a, later, true));
        assert!(r.peers.is_empty());
    }
}
