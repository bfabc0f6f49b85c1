//! Per-host state and the ready queue: a host with work is "armed" in a min-heap at the instant
//! it may start its next transfer, so a host waiting on its delay never holds up another host,
//! and finding the next startable host costs O(log hosts).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::robots::RobotsState;

/// A request on its way: the URL it is at now and what it has cost so far.
#[derive(Debug)]
pub(crate) struct Job {
    pub request: crate::Request,
    pub url: url::Url,
    pub submitted: Instant,
    /// Tries of the current URL (retries count up to `Fetch.Retries`).
    pub hop_tries: u32,
    /// Every transfer of this request.
    pub tries: u32,
    pub redirects: Vec<String>,
    pub fetch_time: Duration,
    pub bytes: u64,
    pub status: Option<u16>,
}

#[derive(Debug)]
pub(crate) struct Host {
    pub queue: VecDeque<Job>,
    pub in_flight: usize,
    /// Earliest start of its next transfer, and the start of the last one.
    pub next_start: Instant,
    pub last_start: Instant,
    pub armed: bool,
    pub robots: RobotsState,
    /// A robots.txt transfer waiting to start (the first one, or a redirect hop), with its hops.
    pub robots_next: Option<(String, u32)>,
    /// Jobs of this host waiting out a retry delay elsewhere.
    pub delayed: usize,
    key: String,
}

impl Host {
    /// Could this host start a transfer, ignoring its delay?
    fn has_startable_work(&self, per_host: usize) -> bool {
        if self.in_flight >= per_host {
            return false;
        }
        self.robots_next.is_some()
            || (!self.queue.is_empty() && !matches!(self.robots, RobotsState::Fetching))
    }

    /// `name:port`: the key a caller files the host's reports under (see
    /// [`crate::report::host_name`]).
    pub fn name(&self) -> &str {
        self.key
            .split_once("://")
            .map_or(&self.key, |(_, rest)| rest)
    }

    fn idle(&self, now: Instant) -> bool {
        self.queue.is_empty()
            && self.in_flight == 0
            && self.delayed == 0
            && !self.armed
            && self.robots_next.is_none()
            && self.next_start <= now
    }
}

#[derive(Debug, Default)]
pub(crate) struct HostTable {
    hosts: Vec<Option<Host>>,
    ids: HashMap<String, usize>,
    free: Vec<usize>,
    ready: BinaryHeap<Reverse<(Instant, usize)>>,
    live: usize,
}

impl HostTable {
    /// The id of the host with this key (`scheme://host:port`), made if new.
    pub fn id(&mut self, key: &str, now: Instant) -> usize {
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let host = Host {
            queue: VecDeque::new(),
            in_flight: 0,
            next_start: now,
            last_start: now,
            armed: false,
            robots: RobotsState::Unknown,
            robots_next: None,
            delayed: 0,
            key: key.to_string(),
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.hosts[id] = Some(host);
                id
            }
            None => {
                self.hosts.push(Some(host));
                self.hosts.len() - 1
            }
        };
        self.ids.insert(key.to_string(), id);
        self.live += 1;
        id
    }

    /// The id of the host with this key, if it is remembered.
    pub fn lookup(&self, key: &str) -> Option<usize> {
        self.ids.get(key).copied()
    }

    /// The host of an id handed out by [`HostTable::id`] and not forgotten since. Ids are only
    /// forgotten when nothing refers to them any more, so a miss is a bug; it is reported by
    /// `None` rather than a panic.
    pub fn get(&mut self, id: usize) -> Option<&mut Host> {
        self.hosts.get_mut(id).and_then(Option::as_mut)
    }

    /// The host of an id, to look at.
    pub fn peek(&self, id: usize) -> Option<&Host> {
        self.hosts.get(id).and_then(Option::as_ref)
    }

    pub fn live(&self) -> usize {
        self.live
    }

    /// Puts the host in the ready heap if it has startable work and is not there yet. Returns
    /// how long it will wait for its delay (zero when it may start now).
    pub fn arm(&mut self, id: usize, per_host: usize, now: Instant) -> Option<Duration> {
        let host = self.hosts.get_mut(id).and_then(Option::as_mut)?;
        if host.armed || !host.has_startable_work(per_host) {
            return None;
        }
        host.armed = true;
        self.ready.push(Reverse((host.next_start, id)));
        Some(host.next_start.saturating_duration_since(now))
    }

    /// The next host whose start instant has come, taken out of the heap (disarmed).
    pub fn pop_ready(&mut self, now: Instant) -> Option<usize> {
        let Reverse((at, _)) = self.ready.peek()?;
        if *at > now {
            return None;
        }
        let Reverse((_, id)) = self.ready.pop()?;
        if let Some(host) = self.get(id) {
            host.armed = false;
        }
        Some(id)
    }

    /// Armed hosts whose start instant has come: hosts that could start a transfer now.
    pub fn ready_now(&self, now: Instant) -> usize {
        self.ready
            .iter()
            .filter(|Reverse((at, _))| *at <= now)
            .count()
    }

    /// When the earliest armed host may start.
    pub fn next_ready(&self) -> Option<Instant> {
        self.ready.peek().map(|Reverse((at, _))| *at)
    }

    /// Forgets hosts that hold nothing and whose robots.txt has run out; when more than `cap`
    /// hosts are remembered, forgets idle hosts whose robots.txt is still fresh too.
    pub fn sweep(&mut self, now: Instant, cap: usize) {
        for id in 0..self.hosts.len() {
            let forget = match &self.hosts[id] {
                Some(h) => h.idle(now) && (h.robots.expired(now) || self.live > cap),
                None => false,
            };
            if forget {
                if let Some(h) = self.hosts[id].take() {
                    self.ids.remove(&h.key);
                }
                self.free.push(id);
                self.live -= 1;
            }
        }
    }
}
