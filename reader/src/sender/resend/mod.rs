//! Rebuilding a receiver (`reader resend`, the source's "scan xmldb" mode): the live set of the
//! store — per document, its last item, if that is an UPDATE — sent again to one receiver as a
//! stream of its own (`<stream>.resend<id>`), throttled (`Send.ResendRate`), while the normal
//! stream goes on. docs/operations.md ("Rebuilding a receiver") says what it guarantees.
//!
//! Order: the resend takes a snapshot `P`, where the normal stream sends from next (everything
//! from `P` on reaches the receiver that way). It sends the items before `P` that are the last
//! of their document in the whole store as it stands; each batch is built and sent holding the
//! sender's gate ([`super::Gate`]) until its ack, so no newer item of the document can reach
//! the receiver before the older copy: either it is in the store when the batch is built (and
//! the older copy is not sent), or it is sent after the ack.

mod live;
pub mod request;
mod snapshot;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use focuser_daemon::backoff::Backoff;
use focuser_formats::fsutil;
use focuser_formats::segment::{write_position, Cursor, Position, Take};

use super::batch::Batcher;
use super::session::{ack_of, connect, fail, SessionError};
use super::{SendCtx, SenderSpec, SenderState};
use crate::wire::read_frame;
use focuser_formats::snapshot::ASK_SUFFIX;
use live::Live;
use request::{position_path, request_path, Request, RequestError, Source};

/// The resends of one reader, for the status page and retention.
#[derive(Default)]
pub struct Resends {
    pub started: AtomicU64,
    pub done: AtomicU64,
    /// Request files refused (moved aside as `.bad`).
    pub bad_requests: AtomicU64,
    /// Owner's snapshots refused (not whole).
    pub bad_snapshots: AtomicU64,
    /// The resends running now: retention keeps what they still have to send.
    pub running: Mutex<Vec<Arc<SenderState>>>,
}

impl Resends {
    pub fn running(&self) -> Vec<Arc<SenderState>> {
        self.running.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// Looks for requests in `state_dir` each second and runs each in a thread of its own.
pub fn watch(
    state_dir: PathBuf,
    senders: Vec<Arc<SenderState>>,
    ctx: Arc<SendCtx>,
    resends: Arc<Resends>,
) {
    if let Some(dir) = ctx.snapshot_dir() {
        let specs: Vec<SenderSpec> = senders.iter().map(|s| s.spec.clone()).collect();
        snapshot::remove_orphans(&dir, &specs);
    }
    let by_path: HashMap<PathBuf, Arc<SenderState>> = senders
        .into_iter()
        .map(|st| (request_path(&st.spec), st))
        .collect();
    let mut threads: HashMap<PathBuf, JoinHandle<()>> = HashMap::new();
    while !ctx.stop.is_set() {
        threads.retain(|_, t| !t.is_finished());
        for path in requests(&state_dir) {
            if threads.contains_key(&path) {
                continue;
            }
            let Some(normal) = by_path.get(&path) else {
                refuse(&resends, &path, RequestError::NoSender(path.clone()));
                continue;
            };
            let (normal, ctx, resends, p) = (
                Arc::clone(normal),
                Arc::clone(&ctx),
                Arc::clone(&resends),
                path.clone(),
            );
            let spawned = std::thread::Builder::new()
                .name(format!("resend-{}", normal.spec.address))
                .spawn(move || run(&normal, &p, &ctx, &resends));
            match spawned {
                Ok(t) => {
                    threads.insert(path, t);
                }
                Err(e) => log::error!("{}: starting its resend: {e}", path.display()),
            }
        }
        ctx.stop.sleep(Duration::from_secs(1));
    }
    for (_, t) in threads {
        let _ = t.join();
    }
}

/// The request files in `dir`: `resend_*.req`.
fn requests(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("resend_") && n.ends_with(".req"))
        })
        .collect()
}

/// A request that cannot be run: logged, counted, and moved aside so it is not tried again.
fn refuse(resends: &Resends, path: &Path, e: RequestError) {
    resends.bad_requests.fetch_add(1, Ordering::Relaxed);
    let aside = path.with_extension("req.bad");
    match std::fs::rename(path, &aside) {
        Ok(()) => log::error!("resend request refused: {e}; moved to {}", aside.display()),
        Err(r) => log::error!("resend request refused: {e}; moving it aside: {r}"),
    }
}

/// Runs the resend `path` asks for, to `normal`'s receiver, until it is done, cancelled (its
/// request file removed) or the daemon stops (a restart goes on from its position file).
fn run(normal: &Arc<SenderState>, path: &Path, ctx: &SendCtx, resends: &Resends) {
    let owner = ctx.snapshot_dir();
    let Some((req, snapshot)) = take_up(normal, path, owner.is_some(), resends) else {
        return;
    };
    let name = format!("resend to {} {}", normal.spec.group, normal.spec.address);
    let st = Arc::new(SenderState::named(spec_of(&normal.spec, &req), name));
    let from_owner = owner
        .as_ref()
        .map(|dir| (dir.clone(), snapshot::name(&normal.spec, req.id)));
    if from_owner.is_some() {
        // Its own position is in the snapshot; the store is read from the snapshot on.
        st.set_store_position(snapshot);
    }
    resends.started.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut r) = resends.running.lock() {
        r.push(Arc::clone(&st));
    }
    let outcome = match &from_owner {
        None => Some(ctx.store.clone()),
        Some((dir, name)) => owner_snapshot(&st, ctx, path, dir, name, resends),
    };
    let outcome = outcome.map(|source| {
        log::info!(
            "resend to {} {} (stream {}): the live items before {snapshot}, from {}{}",
            st.spec.group,
            st.spec.address,
            st.spec.stream,
            st.saved(),
            if from_owner.is_some() {
                format!(" of snapshot {}", source.display())
            } else {
                String::new()
            }
        );
        let owner = from_owner.is_some().then_some(snapshot);
        resend(&st, normal, ctx, path, snapshot, &source, owner)
    });
    if let Ok(mut r) = resends.running.lock() {
        r.retain(|x| !Arc::ptr_eq(x, &st));
    }
    if let Some(outcome) = outcome {
        ended(&st, path, outcome, from_owner.as_ref(), resends);
    }
}

/// Reads the request and, the first time, fixes its snapshot position (where the normal
/// stream sends from next) and where the live set is read; `None` if it is refused or
/// cannot be written yet.
fn take_up(
    normal: &SenderState,
    path: &Path,
    owner: bool,
    resends: &Resends,
) -> Option<(Request, Position)> {
    let mut req = match Request::read(path, &normal.spec) {
        Ok(r) => r,
        Err(e) => {
            refuse(resends, path, e);
            return None;
        }
    };
    let source = if owner { Source::Owner } else { Source::Store };
    if let Some(was) = req.from.filter(|&f| f != source) {
        refuse(
            resends,
            path,
            RequestError::Source(path.into(), was, source),
        );
        return None;
    }
    if let Some(p) = req.snapshot {
        return Some((req, p));
    }
    let p = normal.gate.lock().map(|g| g.next).unwrap_or_default();
    req.snapshot = Some(p);
    req.from = Some(source);
    if let Err(e) = req.write(path) {
        log::error!(
            "resend to {}: {e}; tried again in a second",
            normal.spec.address
        );
        return None;
    }
    Some((req, p))
}

/// Waits for the owner's snapshot; `None` if the resend ends before (stopped, cancelled, or
/// refused: a snapshot that is not whole).
fn owner_snapshot(
    st: &SenderState,
    ctx: &SendCtx,
    path: &Path,
    dir: &Path,
    name: &str,
    resends: &Resends,
) -> Option<PathBuf> {
    let who = format!("resend to {} {}", st.spec.group, st.spec.address);
    match snapshot::ready(dir, name, st, ctx, path) {
        snapshot::Ready::Snapshot(folder) => return Some(folder),
        snapshot::Ready::Stopped => log::info!("{who}: stopped; a restart goes on"),
        snapshot::Ready::Cancelled => {
            if let Err(e) = snapshot::remove(dir, name) {
                log::error!("{who}: removing its snapshot: {e}");
            }
            log::info!("{who} cancelled (its request file was removed)");
        }
        snapshot::Ready::Bad(why) => {
            resends.bad_snapshots.fetch_add(1, Ordering::Relaxed);
            let aside = match snapshot::set_aside(dir, name) {
                Ok(p) => format!("moved to {}", p.display()),
                Err(e) => format!("moving it aside: {e}"),
            };
            let _ = fsutil::remove_if_exists(&st.spec.position_file);
            refuse(resends, path, RequestError::Snapshot(why, aside));
        }
    }
    None
}

/// A resend's end: its files removed when it is done or cancelled; logged.
fn ended(
    st: &SenderState,
    path: &Path,
    outcome: Outcome,
    owner: Option<&(PathBuf, String)>,
    resends: &Resends,
) {
    let n = st.acked_items.load(Ordering::Relaxed);
    let (group, address) = (&st.spec.group, &st.spec.address);
    if matches!(outcome, Outcome::Stopped) {
        log::info!(
            "resend to {group} {address}: stopped at {} after {n} items this run; a restart goes on",
            st.saved()
        );
        return;
    }
    // The owner's ask first (it must not write the snapshot again), then the position file:
    // a crash between the two leaves a request that finds everything acknowledged by the
    // receiver, and ends. The snapshot goes last, once no request can need it.
    let gone = owner
        .map_or(Ok(()), |(dir, name)| {
            fsutil::remove_if_exists(&dir.join(format!("{name}{ASK_SUFFIX}")))
        })
        .and_then(|()| fsutil::remove_if_exists(&st.spec.position_file))
        .and_then(|()| fsutil::remove_if_exists(&st.spec.lost_file))
        .and_then(|()| fsutil::remove_if_exists(path))
        .and_then(|()| owner.map_or(Ok(()), |(dir, name)| snapshot::remove(dir, name)));
    if let Err(e) = gone {
        log::error!("resend to {address}: removing its files: {e}");
    }
    let how = if matches!(outcome, Outcome::Done) {
        resends.done.fetch_add(1, Ordering::Relaxed);
        "done"
    } else {
        "cancelled (its request file was removed)"
    };
    log::info!("resend to {group} {address} {how}: {n} items this run");
}

/// The resend as a sender of its own: the normal sender's receiver and partition, a stream
/// and a position file of its own.
fn spec_of(normal: &SenderSpec, req: &Request) -> SenderSpec {
    let position_file = position_path(normal);
    SenderSpec {
        stream: format!("{}.resend{}", normal.stream, req.id),
        lost_file: position_file.with_extension("lost"),
        position_file: position_file.with_extension(format!("{}.dat", req.id)),
        ..normal.clone()
    }
}

enum Outcome {
    Done,
    Cancelled,
    Stopped,
}

/// Connects, sends, reconnects with backoff, until the resend ends. It sends from `source`:
/// the store, or the owner's snapshot (`owner`: the store is read from there on).
fn resend(
    st: &SenderState,
    normal: &SenderState,
    ctx: &SendCtx,
    path: &Path,
    snapshot: Position,
    source: &Path,
    owner: Option<Position>,
) -> Outcome {
    let (partition, statuses) = (st.spec.partition, &st.spec.statuses);
    let mut live = match owner {
        None => Live::new(&ctx.store, partition, snapshot, statuses),
        Some(from) => Live::of_owner(source, &ctx.store, partition, from, statuses),
    };
    let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(30));
    loop {
        if ctx.stop.is_set() {
            return Outcome::Stopped;
        }
        // The whole store is read once, outside the gate; then only what was added.
        let result = live
            .catch_up(st)
            .and_then(|()| session(st, normal, ctx, path, source, &mut live));
        st.connected.store(false, Ordering::SeqCst);
        match result {
            Ok(o) => return o,
            Err(e) => {
                let wait = backoff.failed();
                st.failed(&e, wait);
                ctx.stop.sleep(wait);
            }
        }
    }
}

/// One connection of a resend: throttled batches, each acknowledged before the next.
fn session(
    st: &SenderState,
    normal: &SenderState,
    ctx: &SendCtx,
    path: &Path,
    source: &Path,
    live: &mut Live,
) -> Result<Outcome, SessionError> {
    let timeout = Duration::from_secs(ctx.settings().send.timeout.max(1));
    let (mut s, last) = connect(st, ctx, timeout)?;
    let mut from = st.saved();
    if last != Position::default() {
        from = from.max(Position {
            file_id: last.file_id,
            item_idx: last.item_idx.saturating_add(1),
        });
    }
    st.connected.store(true, Ordering::SeqCst);
    let mut batch = Batcher::new(Cursor::new(source, from, Some(st.spec.partition)));
    let started = Instant::now();
    let mut sent = 0u64;
    loop {
        if ctx.stop.is_set() {
            return Ok(Outcome::Stopped);
        }
        if !path.exists() {
            return Ok(Outcome::Cancelled);
        }
        let mut settings = ctx.settings();
        let rate = settings.send.resend_rate.max(1);
        // Throttle: `sent` items take `sent / rate` seconds at least.
        let due = started + Duration::from_secs_f64(sent as f64 / rate as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            ctx.stop.sleep(wait.min(Duration::from_secs(1)));
            continue;
        }
        settings.send.batch_items = settings.send.batch_items.min(rate as usize).max(1);
        let hold = Hold::take(normal)?;
        live.catch_up(st)?;
        let built = batch.items_picked(st, &settings, &|h| live.pick(h))?;
        if built.count == 0 {
            drop(hold);
            return Ok(Outcome::Done);
        }
        batch.send(&mut s)?;
        let n = u64::from(built.count);
        st.sent_items.fetch_add(n, Ordering::Relaxed);
        st.sent_bytes.fetch_add(built.bytes, Ordering::Relaxed);
        let acked = ack_of(read_frame(&mut s, settings.max_frame)).map_err(fail)?;
        if acked != built.upto {
            return Err(fail(format!("ack for {acked}, expected {}", built.upto)));
        }
        drop(hold);
        st.acked_items.fetch_add(n, Ordering::Relaxed);
        st.delivering();
        write_position(&st.spec.position_file, acked).map_err(fail)?;
        if let Ok(mut p) = st.saved.lock() {
            *p = acked;
        }
        sent += n;
    }
}

/// The sender's gate held: its normal stream sends nothing until this is dropped.
struct Hold<'a>(&'a SenderState);

impl<'a> Hold<'a> {
    fn take(normal: &'a SenderState) -> Result<Hold<'a>, SessionError> {
        let mut g = normal
            .gate
            .lock()
            .map_err(|_| fail("the resend gate failed"))?;
        g.held = true;
        Ok(Hold(normal))
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        if let Ok(mut g) = self.0.gate.lock() {
            g.held = false;
        }
    }
}

/// What [`Live::pick`] tells the batcher: used by tests of the order rule.
pub(crate) fn pick_at(keep: bool, at: Position, snapshot: Position) -> Take {
    if at >= snapshot {
        Take::Stop
    } else if keep {
        Take::Read
    } else {
        Take::Skip
    }
}
