//! The write stage: `Resources.Writers` threads take fetched feeds off one queue, cut their
//! items out, and when a run's last feed is in, diff it against `vr_data` and write it with the
//! protocol of docs/formats.md "Resources write protocol":
//!
//! 1. one transaction: the `vr_data` changes, each `status = 0`, and the store position where
//!    the run's items will start (`process_timestamp.emit_file`/`emit_item`);
//! 2. the items appended to the resources store and fsynced;
//! 3. one transaction: `status = 1`, the run's accounting, the claim released (all but its
//!    own `process_timestamp` row only while the run holds its claim).
//!
//! A crash after 1 leaves `status = 0` rows, which [`super::store::Store::recover`] emits (those
//! not already in the store) before the resource's next run.
//!
//! A read-ahead thread reads the stored items of the runs whose feeds are queued
//! ([`super::known`]), so that the diff's read overlaps the parse. Steps 1 and 2 are
//! [`super::changes`], step 3 [`super::account`]. A writer also withdraws the resources an
//! operator disabled or removed ([`super::withdraw`]), with the same protocol.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use focuser_feed::encoding::charset_of_content_type;
use focuser_feed::items::{self, FailedKey, Limits, Outcome as ItemOutcome};
use focuser_fetch::{Completed, Outcome};
use focuser_schema::models::ClaimedRun;

use super::account;
use super::changes::Writer;
use super::known::Reading;
use super::run::{Acc, FeedJob, FeedResult, GoodItem, RunShared};
use super::sitemaps::why;
use super::stats::ResourceStats;
use super::store::Store;
use super::withdraw;
use crate::status::add;
use crate::worker::Ctx;

pub enum WriteMsg {
    Feed(Box<(FeedJob, Completed)>),
    /// A run without feeds to wait for: account it.
    Finish(Arc<RunShared>),
    /// A resource to withdraw or remove ([`super::withdraw`]).
    Withdraw(Box<ClaimedRun>),
}

#[derive(Default)]
struct Shared {
    stats: Arc<ResourceStats>,
    queue: Mutex<VecDeque<WriteMsg>>,
    ready: Condvar,
    /// Feeds queued or being fetched or parsed (back-pressure counts them all).
    queued: AtomicUsize,
    /// Resources claimed and not yet finished.
    running: Mutex<Vec<u32>>,
    stop: AtomicBool,
    error: Mutex<Option<anyhow::Error>>,
    ahead: Mutex<Ahead>,
    ahead_ready: Condvar,
}

/// The read-ahead's work.
#[derive(Default)]
struct Ahead {
    /// Runs whose stored items are to be read, in the order their feeds were queued.
    queue: VecDeque<Arc<RunShared>>,
    /// Runs whose items are being read or read, until their writers take them.
    held: Vec<Weak<RunShared>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct WritePool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl WritePool {
    pub fn start(
        ctx: &Arc<Ctx>,
        stats: Arc<ResourceStats>,
        store: Arc<Store>,
        n: usize,
    ) -> anyhow::Result<WritePool> {
        let shared = Arc::new(Shared {
            stats,
            ..Shared::default()
        });
        let owner = format!("{}/{}", ctx.config().daemon.node, std::process::id());
        let mut threads = Vec::with_capacity(n + 1);
        // One read-ahead thread: more made the reads contend with the writers' statements
        // (bench-resources, bench/README.md).
        {
            let (ctx, store, shared) = (Arc::clone(ctx), Arc::clone(&store), Arc::clone(&shared));
            threads.push(
                std::thread::Builder::new()
                    .name("vr-read-ahead".into())
                    .spawn(move || read_ahead(&ctx, &store, &shared, 2 * n.max(1)))?,
            );
        }
        for i in 0..n.max(1) {
            let (ctx, store, shared, owner) = (
                Arc::clone(ctx),
                Arc::clone(&store),
                Arc::clone(&shared),
                owner.clone(),
            );
            threads.push(
                std::thread::Builder::new()
                    .name(format!("vr-write-{i}"))
                    .spawn(move || writer(&ctx, &store, &shared, &owner))?,
            );
        }
        Ok(WritePool { shared, threads })
    }

    pub fn send(&self, msg: WriteMsg) {
        self.reserve();
        self.send_reserved(msg);
    }

    /// A run whose feeds are queued: its stored items are read ahead of its write.
    pub fn read_ahead(&self, run: Arc<RunShared>) {
        lock(&self.shared.ahead).queue.push_back(run);
        self.shared.ahead_ready.notify_one();
    }

    pub fn reserve(&self) {
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
    }

    pub fn send_reserved(&self, msg: WriteMsg) {
        lock(&self.shared.queue).push_back(msg);
        self.shared.ready.notify_one();
    }

    pub fn queued(&self) -> usize {
        self.shared.queued.load(Ordering::SeqCst)
    }

    pub fn started(&self, res_id: u32) {
        lock(&self.shared.running).push(res_id);
    }

    pub fn active_runs(&self) -> usize {
        lock(&self.shared.running).len()
    }

    pub fn running(&self) -> Vec<u32> {
        lock(&self.shared.running).clone()
    }

    /// A writer's fatal error (a store that cannot be written), once.
    pub fn check(&self) -> anyhow::Result<()> {
        match lock(&self.shared.error).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    pub fn take_error(&self) -> anyhow::Result<()> {
        self.check()
    }

    /// Writers finish what they hold and stop; queued feeds are dropped (their runs are given
    /// back by the caller).
    pub fn stop(self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.ready.notify_all();
        self.shared.ahead_ready.notify_all();
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// The read-ahead thread: reads the stored items of the runs next in line, while at most
/// `limit` runs' worth are read or being read and not yet taken by their writers (a memory
/// bound).
fn read_ahead(ctx: &Ctx, store: &Store, shared: &Shared, limit: usize) {
    loop {
        let run = {
            let mut a = lock(&shared.ahead);
            loop {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                a.held
                    .retain(|w| w.upgrade().is_some_and(|r| r.known.held()));
                if a.held.len() < limit {
                    if let Some(run) = a.queue.pop_front() {
                        a.held.push(Arc::downgrade(&run));
                        break run;
                    }
                }
                a = shared
                    .ahead_ready
                    .wait_timeout(a, Duration::from_millis(200))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
        };
        let from = Reading {
            ctx,
            stats: &shared.stats,
            digests: store.digests(),
        };
        run.known.read_ahead(&from, &run.claimed);
    }
}

fn writer(ctx: &Ctx, store: &Store, shared: &Shared, owner: &str) {
    let w = Writer {
        ctx,
        stats: &shared.stats,
        store,
        owner,
    };
    loop {
        let msg = {
            let mut q = lock(&shared.queue);
            loop {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(m) = q.pop_front() {
                    break m;
                }
                q = shared
                    .ready
                    .wait_timeout(q, Duration::from_millis(200))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
        };
        let run = match msg {
            WriteMsg::Feed(b) => {
                let (job, c) = *b;
                feed(&shared.stats, &job, &c)
            }
            // A `Finish` message carries nothing: what the fetch side gathered is in the run.
            WriteMsg::Finish(run) => {
                let acc = std::mem::take(&mut *lock(&run.acc));
                Some((run, acc))
            }
            WriteMsg::Withdraw(claimed) => {
                let r = withdraw::withdraw(&w, &claimed, &shared.stop);
                ended(shared, r.map(|()| claimed.resource.id));
                continue;
            }
        };
        let result = match run {
            Some((run, acc)) => {
                let r = account::finish(&w, &run, acc).map(|()| run.res_id());
                // Its items are taken: the read-ahead may read the next run's.
                shared.ahead_ready.notify_one();
                r
            }
            None => Ok(0),
        };
        ended(shared, result);
    }
}

/// A message handled: the resource it finished (0: none) is no longer running, or the
/// writer's error stops the write stage.
fn ended(shared: &Shared, result: anyhow::Result<u32>) {
    match result {
        Ok(0) => {}
        Ok(res_id) => lock(&shared.running).retain(|&r| r != res_id),
        Err(e) => {
            log::error!("resources write stage: {e:#}");
            *lock(&shared.error) = Some(e);
            shared.stop.store(true, Ordering::SeqCst);
        }
    }
    shared.queued.fetch_sub(1, Ordering::SeqCst);
}

/// What one feed gave.
struct Parsed {
    items: Vec<GoodItem>,
    failed: Vec<FailedKey>,
    error: Option<String>,
}

fn parse(job: &FeedJob, c: &Completed, rules: &items::Rules, limits: &Limits) -> Parsed {
    let mut p = Parsed {
        items: Vec::new(),
        failed: Vec::new(),
        error: None,
    };
    let doc = match &c.outcome {
        Outcome::Fetched(doc) => doc,
        other => {
            p.error = Some(format!("could not be fetched: {}", why(other)));
            return p;
        }
    };
    let charset = charset_of_content_type(&doc.content_type);
    let result = items::extract(&doc.body[..], charset, rules, limits, |o| {
        match o {
            ItemOutcome::Item(it) => p.items.push(GoodItem {
                keyword: it.key().to_string(),
                md5: String::new(),
                digest: it.digest(),
                canonical: it.canonical().to_string(),
                status_id: job.status_id,
                ds_id: job.ds_id,
            }),
            ItemOutcome::Failed(f) => p.failed.push(f.clone()),
        }
        ControlFlow::Continue(())
    });
    if let Err(e) = result {
        p.error = Some(e.to_string());
    }
    p
}

/// Adds one feed to its run; the run and all it gathered when this was its last feed.
fn feed(stats: &ResourceStats, job: &FeedJob, c: &Completed) -> Option<(Arc<RunShared>, Acc)> {
    let run = &job.run;
    let limits = Limits {
        max_items: u64::from(run.claimed.resource.max_items),
        ..Limits::default()
    };
    let t = Instant::now();
    let parsed = match &run.rules {
        Some(rules) => parse(job, c, rules, &limits),
        None => Parsed {
            items: Vec::new(),
            failed: Vec::new(),
            error: Some("no rules".into()),
        },
    };
    log::debug!(
        "resource {}: {}: {} items parsed in {} ms",
        run.res_id(),
        job.url,
        parsed.items.len(),
        t.elapsed().as_millis()
    );
    let mut acc = lock(&run.acc);
    let result = FeedResult {
        status_id: job.status_id,
        http_status: c.status,
        items: parsed.items.len() as u32,
        error: parsed.error.clone(),
    };
    add(
        if parsed.error.is_some() {
            &stats.feed_errors
        } else {
            &stats.feeds
        },
        1,
    );
    match parsed.error {
        Some(e) => {
            log::info!("resource {}: {}: {e}", run.res_id(), job.url);
            acc.detail.feed_failed(&job.ds_name, &job.url, &e);
            acc.protected.insert(job.status_id);
        }
        None => {
            for f in &parsed.failed {
                acc.detail.failed_key(f);
            }
            acc.failed += parsed.failed.len() as u64;
            acc.items.extend(parsed.items);
        }
    }
    acc.results.push(result);
    acc.feeds_done += 1;
    if acc.feeds_done < run.total_feeds {
        return None;
    }
    let taken = std::mem::take(&mut *acc);
    drop(acc);
    Some((Arc::clone(run), taken))
}
