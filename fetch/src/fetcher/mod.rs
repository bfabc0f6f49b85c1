//! The fetcher: a libcurl multi handle, the host table that decides which transfer may start,
//! and the queues between them; `answer` turns a finished transfer into an outcome, a retry or a
//! redirect hop.

mod answer;
mod record;
mod schedule;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use curl::easy::Easy2;
use curl::multi::{Easy2Handle, Multi};

use crate::config::{parse_resolve, FetchConfig};
use crate::guard::{self, AllowedPrivate, Refusal, SocketGuard};
use crate::hosts::{HostTable, Job};
use crate::outcome::{Completed, FailKind, Outcome, Request};
use crate::report::Reports;
use crate::robots::{self, Current};
use crate::stats::FetchStats;
use crate::transfer::{self, Abort, Collector};
use crate::FetchError;

/// robots.txt beyond this is cut (RFC 9309 asks for at least 500 KiB to be read).
const ROBOTS_MAX_BYTES: u64 = 512 << 10;
/// How often idle hosts are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// What a transfer in flight is for.
enum Purpose {
    Page(Job),
    Robots { hops: u32 },
}

struct Active {
    handle: Easy2Handle<Collector>,
    purpose: Purpose,
    host: usize,
    url: String,
    started: Instant,
}

/// What a finished transfer left behind, once its handle is back in the pool.
struct Finished {
    result: Result<(), curl::Error>,
    status: Option<u16>,
    content_type: Option<String>,
    location: Option<String>,
    retry_after: Option<String>,
    server: Option<String>,
    body: Vec<u8>,
    received: u64,
    abort: Option<Abort>,
    /// An address the transfer did not connect to (not public).
    refused: Option<Refusal>,
    took: Duration,
}

pub struct Fetcher {
    cfg: FetchConfig,
    agent: String,
    allowed: Option<Vec<String>>,
    /// `Fetch.AllowPrivate`, for URLs and for every handle's socket guard.
    private: Arc<AllowedPrivate>,
    multi: Multi,
    /// `(host, port)` → address, and port → address for `*` entries.
    resolve: HashMap<(String, u16), String>,
    resolve_any: HashMap<u16, String>,
    hosts: HostTable,
    /// Jobs waiting out a retry delay: `(due, seq)` → job and its host.
    delayed: BinaryHeap<Reverse<(Instant, u64)>>,
    delayed_jobs: HashMap<u64, (usize, Job)>,
    seq: u64,
    active: Vec<Option<Active>>,
    free_slots: Vec<usize>,
    idle: Vec<Easy2<Collector>>,
    done: Vec<Completed>,
    jobs: usize,
    in_flight: usize,
    stats: FetchStats,
    last_sweep: Instant,
    /// Per-host news for a caller that keeps a record of hosts (off unless asked for).
    reports: Reports,
}

impl Fetcher {
    pub fn new(cfg: FetchConfig) -> Result<Self, FetchError> {
        cfg.validate()?;
        let mut multi = Multi::new();
        multi.set_max_connects(cfg.keep_alive.max(cfg.connections))?;
        let mut resolve = HashMap::new();
        let mut resolve_any = HashMap::new();
        for entry in &cfg.resolve {
            if let Some((host, port, addr)) = parse_resolve(entry) {
                if host == "*" {
                    resolve_any.insert(port, addr.to_string());
                } else {
                    resolve.insert((host.to_ascii_lowercase(), port), addr.to_string());
                }
            }
        }
        let allowed = (!cfg.allowed_types.is_empty()).then(|| cfg.allowed_types.clone());
        let private = AllowedPrivate::parse(&cfg.allow_private).map_err(FetchError::Config)?;
        Ok(Fetcher {
            private: Arc::new(private),
            agent: cfg.robots_agent().to_string(),
            allowed,
            multi,
            resolve,
            resolve_any,
            hosts: HostTable::default(),
            delayed: BinaryHeap::new(),
            delayed_jobs: HashMap::new(),
            seq: 0,
            active: Vec::new(),
            free_slots: Vec::new(),
            idle: Vec::new(),
            done: Vec::new(),
            jobs: 0,
            in_flight: 0,
            stats: FetchStats::default(),
            last_sweep: Instant::now(),
            reports: Reports::default(),
            cfg,
        })
    }

    pub fn config(&self) -> &FetchConfig {
        &self.cfg
    }

    /// Queues a request. The caller keeps [`Fetcher::pending`] below [`Fetcher::capacity`]; a
    /// request that is not an absolute http(s) URL completes at once with kind `url`, one the
    /// fetcher refuses to fetch (user info, an IP-literal host) with kind `refused`.
    pub fn submit(&mut self, request: Request) {
        let now = Instant::now();
        let url = match url::Url::parse(&request.url)
            .map_err(|e| e.to_string())
            .and_then(checked)
        {
            Ok(url) => url,
            Err(why) => return self.fail_at_once(request, FailKind::Url, &why),
        };
        if let Some(why) = guard::refused_url(&url, &self.private) {
            return self.fail_at_once(request, FailKind::Refused, &why);
        }
        self.jobs += 1;
        let job = Job {
            request,
            url,
            submitted: now,
            hop_tries: 0,
            tries: 0,
            redirects: Vec::new(),
            fetch_time: Duration::ZERO,
            bytes: 0,
            status: None,
        };
        self.enqueue(job, now);
    }

    /// A request that completes without a transfer.
    fn fail_at_once(&mut self, request: Request, kind: FailKind, why: &str) {
        let outcome = Outcome::Failed {
            kind,
            reason: format!("{}: {why}", request.url),
            status: None,
        };
        self.stats.count(&outcome);
        self.done.push(Completed {
            final_url: request.url.clone(),
            status: None,
            elapsed: Duration::ZERO,
            fetch_time: Duration::ZERO,
            bytes: 0,
            tries: 0,
            request,
            outcome,
        });
    }

    /// Requests submitted and not yet returned by [`Fetcher::perform`].
    pub fn pending(&self) -> usize {
        self.jobs
    }

    /// `Fetch.Pending`: how many requests the caller may keep pending.
    pub fn capacity(&self) -> usize {
        self.cfg.pending
    }

    /// Transfers in flight (robots.txt fetches included).
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Hosts with requests that could start a transfer now (their delay over, below
    /// `Fetch.PerHost`); the other pending requests wait for their host. A caller keeping the
    /// fetcher supplied counts these, not [`Fetcher::pending`]: with a host delay, most
    /// pending requests may be waiting.
    pub fn ready_hosts(&self) -> usize {
        self.hosts.ready_now(Instant::now())
    }

    pub fn stats(&self) -> &FetchStats {
        &self.stats
    }

    /// Drives the transfers for at most `max_wait` and returns the requests that finished (early,
    /// as soon as some have). Errors are failures of libcurl's multi handle itself.
    pub fn perform(&mut self, max_wait: Duration) -> Result<Vec<Completed>, FetchError> {
        let deadline = Instant::now() + max_wait;
        loop {
            let now = Instant::now();
            self.release_delayed(now);
            self.start_ready(now)?;
            if self.in_flight > 0 {
                self.multi.perform()?;
                self.collect()?;
            }
            let now = Instant::now();
            if !self.done.is_empty() || now >= deadline {
                // Start the successors now, so they run while the caller works.
                self.release_delayed(now);
                self.start_ready(now)?;
                if self.in_flight > 0 {
                    self.multi.perform()?;
                }
                break;
            }
            self.wait(now, deadline)?;
        }
        let now = Instant::now();
        if now.duration_since(self.last_sweep) >= SWEEP_EVERY {
            self.hosts.sweep(now, self.cfg.robots_cache);
            self.last_sweep = now;
        }
        self.stats.hosts = self.hosts.live();
        Ok(std::mem::take(&mut self.done))
    }

    /// Sleeps until libcurl, a host's delay or a retry wants attention, or the deadline.
    fn wait(&mut self, now: Instant, deadline: Instant) -> Result<(), FetchError> {
        let mut until = deadline;
        if self.in_flight < self.cfg.connections {
            if let Some(at) = self.hosts.next_ready() {
                until = until.min(at);
            }
        }
        if let Some(Reverse((at, _))) = self.delayed.peek() {
            until = until.min(*at);
        }
        let mut timeout = until.saturating_duration_since(now);
        if self.in_flight > 0 {
            if let Some(t) = self.multi.get_timeout()? {
                timeout = timeout.min(t);
            }
            if !timeout.is_zero() {
                self.multi.wait(&mut [], timeout)?;
            }
        } else if !timeout.is_zero() {
            std::thread::sleep(timeout);
        }
        Ok(())
    }

    /// Takes the finished transfers out of the multi handle and acts on each.
    fn collect(&mut self) -> Result<(), FetchError> {
        let mut finished = Vec::new();
        let active = &self.active;
        self.multi.messages(|msg| {
            let Ok(slot) = msg.token() else { return };
            if let Some(Some(a)) = active.get(slot) {
                if let Some(result) = msg.result_for2(&a.handle) {
                    finished.push((slot, result));
                }
            }
        });
        let now = Instant::now();
        for (slot, result) in finished {
            let Some(active) = self.active.get_mut(slot).and_then(Option::take) else {
                continue;
            };
            self.free_slots.push(slot);
            self.in_flight -= 1;
            let mut easy = self.multi.remove2(active.handle)?;
            let c = easy.get_mut();
            let done = Finished {
                result,
                status: c.status,
                content_type: c.content_type.take(),
                location: c.location.take(),
                retry_after: c.retry_after.take(),
                server: c.server.take(),
                body: c.take_body(),
                received: c.received,
                abort: c.abort.take(),
                refused: c.guard.take_refusal(),
                took: now.saturating_duration_since(active.started),
            };
            if self.idle.len() < self.cfg.connections {
                self.idle.push(easy);
            }
            self.stats.bytes += done.received;
            if let Some(host) = self.hosts.get(active.host) {
                host.in_flight -= 1;
            }
            match active.purpose {
                Purpose::Page(job) => self.page_done(active.host, &active.url, job, done, now),
                Purpose::Robots { hops } => {
                    self.robots_answer(active.host, &active.url, hops, done, now)
                }
            }
            self.arm(active.host, now);
        }
        Ok(())
    }

    fn finish(&mut self, job: Job, outcome: Outcome) {
        self.report_request(&job, &outcome);
        self.jobs -= 1;
        self.stats.count(&outcome);
        self.done.push(Completed {
            final_url: job.url.to_string(),
            status: job.status,
            elapsed: job.submitted.elapsed(),
            fetch_time: job.fetch_time,
            bytes: job.bytes,
            tries: job.tries,
            request: job.request,
            outcome,
        });
    }
}

/// Only absolute http(s) URLs with a host are fetched; the fragment is not part of a request.
fn checked(mut url: url::Url) -> Result<url::Url, String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("scheme {:?} is not fetched", url.scheme()));
    }
    if url.host().is_none() {
        return Err("no host".into());
    }
    url.set_fragment(None);
    Ok(url)
}

/// Politeness is per `scheme://host:port`.
fn host_key(url: &url::Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}
