//! The target check of transfers through a proxy. A proxy resolves the target's name itself
//! (`http://`, `https://` and `socks5h://` proxies; libcurl does for `socks5://`, but connects
//! only to the proxy), so libcurl's open-socket callback never sees the target's address. The
//! fetcher therefore looks the name up first — on a few threads of its own, since
//! `getaddrinfo` blocks — and refuses it when any of its addresses is not public and not in
//! `Fetch.AllowPrivate` (the proxy may pick any of them). A verdict is kept for [`CHECK_TTL`];
//! a name that does not resolve is looked up again after `Fetch.RetryDelay`.

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::guard::{AllowedPrivate, Refusal};
use crate::outcome::FailKind;

/// How long a name's verdict is trusted.
pub(crate) const CHECK_TTL: Duration = Duration::from_secs(60);
/// Lookups at once at most.
const THREADS: usize = 4;

/// What a transfer through the proxy may do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Check {
    Go,
    /// Its name is being looked up: the host waits (it is armed again with the answer).
    Wait,
    /// `refused` (an address not public) or `dns` (no address), and why.
    Fail(FailKind, String),
}

enum Entry {
    /// Looking up; the hosts waiting for the answer.
    Looking(Vec<usize>),
    Known {
        until: Instant,
        verdict: Result<(), (FailKind, String)>,
    },
}

type Answer = (String, std::io::Result<Vec<IpAddr>>);

#[derive(Default)]
pub(crate) struct Lookups {
    entries: HashMap<String, Entry>,
    /// Names to look up, for the threads (made with the first lookup).
    asks: Option<mpsc::Sender<String>>,
    answers: Option<mpsc::Receiver<Answer>>,
    looking: usize,
}

impl Lookups {
    /// The verdict on `name` for host `id`'s transfer; asks for a lookup when there is none.
    pub fn check(&mut self, name: &str, id: usize, now: Instant) -> Check {
        match self.entries.get_mut(name) {
            Some(Entry::Known { until, verdict }) if *until > now => {
                return match verdict {
                    Ok(()) => Check::Go,
                    Err((kind, why)) => Check::Fail(*kind, why.clone()),
                };
            }
            Some(Entry::Looking(waiting)) => {
                if !waiting.contains(&id) {
                    waiting.push(id);
                }
                return Check::Wait;
            }
            _ => {}
        }
        match self.ask(name) {
            Ok(()) => {
                self.looking += 1;
                self.entries
                    .insert(name.to_string(), Entry::Looking(vec![id]));
                Check::Wait
            }
            Err(e) => Check::Fail(FailKind::Dns, format!("{name}: no lookup thread: {e}")),
        }
    }

    /// Whether lookups are in progress (the fetcher polls for their answers).
    pub fn looking(&self) -> bool {
        self.looking > 0
    }

    /// The answers that came: each name's verdict is kept, and the hosts that waited for it
    /// are returned to be armed again.
    pub fn answers(
        &mut self,
        allowed: &AllowedPrivate,
        retry: Duration,
        now: Instant,
    ) -> Vec<usize> {
        let Some(rx) = &self.answers else {
            return Vec::new();
        };
        let mut woken = Vec::new();
        while let Ok((name, addrs)) = rx.try_recv() {
            let verdict = judge(&name, addrs, allowed);
            // A failure is looked up again after the retry delay (at least a second: the
            // hosts waiting for it must see it once).
            let ttl = match verdict {
                Err((FailKind::Dns, _)) => retry.clamp(Duration::from_secs(1), CHECK_TTL),
                _ => CHECK_TTL,
            };
            let entry = Entry::Known {
                until: now + ttl,
                verdict,
            };
            if let Some(Entry::Looking(waiting)) = self.entries.insert(name, entry) {
                self.looking -= 1;
                woken.extend(waiting);
            }
        }
        woken
    }

    /// Forgets verdicts that ran out.
    pub fn sweep(&mut self, now: Instant) {
        self.entries
            .retain(|_, e| !matches!(e, Entry::Known { until, .. } if *until <= now));
    }

    /// Hands `name` to a lookup thread, starting the threads with the first name.
    fn ask(&mut self, name: &str) -> std::io::Result<()> {
        if self.asks.is_none() {
            let (ask_tx, ask_rx) = mpsc::channel::<String>();
            let (answer_tx, answer_rx) = mpsc::channel::<Answer>();
            let asks = Arc::new(Mutex::new(ask_rx));
            for i in 0..THREADS {
                let (asks, answers) = (Arc::clone(&asks), answer_tx.clone());
                std::thread::Builder::new()
                    .name(format!("fetch-lookup-{i}"))
                    .spawn(move || look_up(&asks, &answers))?;
            }
            self.asks = Some(ask_tx);
            self.answers = Some(answer_rx);
        }
        match &self.asks {
            Some(tx) => tx
                .send(name.to_string())
                .map_err(|_| std::io::Error::other("the lookup threads ended")),
            None => Err(std::io::Error::other("no lookup threads")),
        }
    }
}

/// A lookup thread: names in, addresses out, until the fetcher is gone.
fn look_up(asks: &Mutex<mpsc::Receiver<String>>, answers: &mpsc::Sender<Answer>) {
    loop {
        let name = match asks.lock() {
            Ok(rx) => match rx.recv() {
                Ok(name) => name,
                Err(_) => return,
            },
            Err(_) => return,
        };
        let addrs = (name.as_str(), 0)
            .to_socket_addrs()
            .map(|a| a.map(|s| s.ip()).collect());
        if answers.send((name, addrs)).is_err() {
            return;
        }
    }
}

/// A name's verdict from its addresses: every one must be public or allowed.
pub(crate) fn judge(
    name: &str,
    addrs: std::io::Result<Vec<IpAddr>>,
    allowed: &AllowedPrivate,
) -> Result<(), (FailKind, String)> {
    let addrs = match addrs {
        Ok(a) if !a.is_empty() => a,
        Ok(_) => return Err((FailKind::Dns, format!("{name} has no address"))),
        Err(e) => return Err((FailKind::Dns, format!("{name} does not resolve: {e}"))),
    };
    for addr in addrs {
        if let Some(kind) = allowed.refuses(addr) {
            let refusal = Refusal { addr, kind };
            return Err((FailKind::Refused, refusal.to_string()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_name_with_any_private_address_is_refused() {
        let none = AllowedPrivate::default();
        let ips = |a: &[&str]| Ok(a.iter().map(|s| s.parse().unwrap()).collect());
        assert_eq!(judge("a.test", ips(&["93.184.216.34"]), &none), Ok(()));
        let (kind, why) = judge("a.test", ips(&["93.184.216.34", "10.0.0.1"]), &none).unwrap_err();
        assert_eq!(kind, FailKind::Refused);
        assert_eq!(
            why,
            "its address 10.0.0.1 is not public (private): not fetched, see Fetch.AllowPrivate"
        );
        let ten = AllowedPrivate::parse(&["10.0.0.0/8"]).unwrap();
        assert_eq!(judge("a.test", ips(&["10.0.0.1"]), &ten), Ok(()));
        assert_eq!(
            judge("a.test", ips(&[]), &none).unwrap_err().0,
            FailKind::Dns
        );
        let gone = Err(std::io::Error::other("no such name"));
        assert_eq!(judge("a.test", gone, &none).unwrap_err().0, FailKind::Dns);
    }

    #[test]
    fn names_are_looked_up_once_and_waiting_hosts_woken() {
        let mut l = Lookups::default();
        let now = Instant::now();
        assert_eq!(l.check("localhost", 1, now), Check::Wait);
        assert_eq!(l.check("localhost", 2, now), Check::Wait);
        assert!(l.looking());
        let allowed = AllowedPrivate::default();
        let mut woken = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while l.looking() && Instant::now() < deadline {
            woken.extend(l.answers(&allowed, Duration::ZERO, Instant::now()));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(woken, [1, 2]);
        // localhost is loopback: refused, and remembered.
        match l.check("localhost", 3, Instant::now()) {
            Check::Fail(FailKind::Refused, why) => assert!(why.contains("loopback"), "{why}"),
            other => panic!("{other:?}"),
        }
        l.sweep(Instant::now() + CHECK_TTL);
        assert_eq!(l.check("localhost", 3, Instant::now()), Check::Wait);
    }
}
