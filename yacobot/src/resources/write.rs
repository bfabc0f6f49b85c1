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
//! ([`super::known`]), so that the diff's read overlaps the parse.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use focuser_feed::detail::MAX_DETAIL_BYTES;
use focuser_feed::diff::Valve;
use focuser_feed::encoding::charset_of_content_type;
use focuser_feed::items::{self, FailedKey, Limits, Outcome as ItemOutcome};
use focuser_fetch::{Completed, Outcome};
use focuser_schema::models::{
    FetchStatus, NewVrUpdateInfo, ProcessTimestamp, ProcessTimestampChanges, ResourceStatus,
    ResourceStatusChanges, VrData, VrResource,
};

use super::changes;
use super::digests::DigestFile;
use super::run::{Acc, FeedJob, FeedResult, GoodItem, RunShared};
use super::sitemaps::why;
use super::stats::{self, RunRow};
use super::store::Store;
use crate::worker::{self, Ctx};

pub enum WriteMsg {
    Feed(Box<(FeedJob, Completed)>),
    /// A run without feeds to wait for: account it.
    Finish(Arc<RunShared>),
}

#[derive(Default)]
struct Shared {
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
    pub fn start(ctx: &Arc<Ctx>, store: Arc<Store>, n: usize) -> anyhow::Result<WritePool> {
        let shared = Arc::new(Shared::default());
        let owner = format!(
            "{}/{}",
            ctx.config()
                .ok_or_else(|| anyhow!("config lock poisoned"))?
                .daemon
                .node,
            std::process::id()
        );
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
        run.known.read_ahead(ctx, &run, store.digests());
    }
}

fn writer(ctx: &Ctx, store: &Store, shared: &Shared, owner: &str) {
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
                feed(ctx, &job, &c)
            }
            WriteMsg::Finish(run) => Some((run, Acc::default())),
        };
        let result = match run {
            Some((run, acc)) => {
                let r = finish(ctx, store, &run, acc, owner).map(|()| run.res_id());
                // Its items are taken: the read-ahead may read the next run's.
                shared.ahead_ready.notify_one();
                r
            }
            None => Ok(0),
        };
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
fn feed(ctx: &Ctx, job: &FeedJob, c: &Completed) -> Option<(Arc<RunShared>, Acc)> {
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
    stats::add(
        if parsed.error.is_some() {
            &ctx.resources.feed_errors
        } else {
            &ctx.resources.feeds
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

/// The run's diff, written with the protocol above, and its accounting.
fn finish(ctx: &Ctx, store: &Store, run: &RunShared, acc: Acc, owner: &str) -> anyhow::Result<()> {
    // A `Finish` message carries nothing: what the fetch side gathered is in the run.
    let mut acc = {
        let mut held = lock(&run.acc);
        if acc.feeds_done == 0 && acc.results.is_empty() && !acc.aborted {
            std::mem::take(&mut *held)
        } else {
            acc
        }
    };
    let res_id = run.res_id();
    let run_id = run.claimed.run.id;
    let now = worker::now();
    let cfg = ctx
        .config()
        .ok_or_else(|| anyhow!("config lock poisoned"))?;
    let valve = Valve {
        min_kept_percent: cfg.daemon.resources.min_kept_percent,
        max_failed_percent: cfg.daemon.resources.max_failed_percent,
    };
    let mut stamp = ProcessTimestampChanges {
        fetch_end: Some(Some(now)),
        write_start: Some(Some(now)),
        items: Some(acc.items.len() as u32),
        failed_keys: Some(acc.failed as u32),
        ..Default::default()
    };
    let mut live = (0u32, 0u32);
    let mut unchanged = 0;
    let mut next = None;
    if !acc.aborted {
        let w = changes::write_items(ctx, store, run, &mut acc, valve, &mut stamp, owner)?;
        live = (w.before, w.after);
        unchanged = w.unchanged;
        next = w.next;
    }
    let status = if acc.detail.is_error() {
        FetchStatus::Error
    } else {
        FetchStatus::Ok
    };
    let detail = acc.detail.render(MAX_DETAIL_BYTES);
    stamp.status = Some(status);
    stamp.write_end = Some(Some(worker::now()));
    let manual = run.claimed.manual;
    let results = &acc.results;
    let t3 = Instant::now();
    let kept = ctx.db_run("finishing a resource run", |c| {
        diesel::Connection::transaction(c, |c| {
            // The run's own row always; the resource's rows only under its claim: another
            // worker that took the resource may be between its own steps 1 and 3.
            ProcessTimestamp::update(c, run_id, &stamp)?;
            if !VrResource::lock_claim(c, res_id, owner)? {
                return Ok(false);
            }
            VrData::mark_emitted(c, res_id)?;
            for r in results {
                ResourceStatus::update(
                    c,
                    r.status_id,
                    &ResourceStatusChanges {
                        last_fetch: Some(Some(now)),
                        http_status: Some(r.http_status),
                        items: Some(r.items),
                        error: Some(r.error.as_deref().map(|e| cut(e, 255))),
                        ..Default::default()
                    },
                )?;
            }
            if live.0 != live.1 {
                NewVrUpdateInfo {
                    res_id,
                    status,
                    item_count: live.1,
                    last_item_count: live.0,
                    detail: cut(&detail, 1024),
                }
                .insert(c)?;
            }
            VrResource::finish_run(c, res_id, owner, status, &detail, worker::now(), manual)
        })
    })?;
    log::debug!(
        "resource {res_id}: run {run_id} accounted in {} ms",
        t3.elapsed().as_millis()
    );
    if !kept {
        log::warn!("resource {res_id}: the claim was lost before the run ended");
    } else if let Some(entries) = next {
        // After the run is accounted: a file is trusted only for the run that wrote it.
        let file = DigestFile {
            res_id,
            run_id,
            run_start: run.claimed.run.fetch_start,
            entries,
        };
        if let Err(e) = store.digests().save(&file) {
            log::warn!("resource {res_id}: its item digest file could not be saved: {e}");
        }
    }
    let started = run.claimed.run.fetch_start.unwrap_or(now);
    ctx.resources.run_done(
        RunRow {
            time: worker::now().format("%Y-%m-%d %H:%M:%S").to_string(),
            resource: run.claimed.resource.res_name.clone(),
            ok: status == FetchStatus::Ok,
            inserted: stamp.inserted.unwrap_or(0).into(),
            updated: stamp.updated.unwrap_or(0).into(),
            deleted: stamp.deleted.unwrap_or(0).into(),
            seconds: (worker::now() - started).num_milliseconds() as f64 / 1000.0,
            detail: detail.replace('\n', " | "),
        },
        unchanged,
        acc.failed,
    );
    log::info!(
        "resource {res_id}: run {run_id} ended {}: {}",
        if status == FetchStatus::Ok {
            "ok"
        } else {
            "in error"
        },
        detail.replace('\n', " | ")
    );
    Ok(())
}

/// At most `max` bytes, on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut at = max;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[..at]
}
