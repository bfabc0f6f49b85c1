//! The two daemons behind `reader`: the sender (default) and the receiver (`--recv`).

use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use focuser_daemon::episode::Episode;
use focuser_daemon::{Runtime, Signal};

use crate::config::ReaderConfig;
use crate::recv::{self, RecvShared, RecvStore};
use crate::sender::resend::{self, Resends};
use crate::sender::{self, retention, SendCtx, SenderSpec, SenderState};
use crate::sendfile::{self, FileShipper};
use crate::status::SenderFigures;
use crate::wire::Secret;

pub fn main_loop(rt: &mut Runtime<ReaderConfig>, recv: bool) -> anyhow::Result<()> {
    if recv {
        receiver(rt)
    } else {
        senders(rt)
    }
}

fn senders(rt: &mut Runtime<ReaderConfig>) -> anyhow::Result<()> {
    let (figures, threads) = start_senders(rt)?;
    let mut last_check = Instant::now();
    let mut failing = Episode::new(format!("retention in {}", figures.store.display()));
    let mut floor_failing = FloorTrouble::default();
    loop {
        match rt.next_signal(Duration::from_millis(250)) {
            Some(Signal::Stop) => break,
            Some(Signal::Rotate) => {
                log::info!("the sender has nothing to rotate; the writer seals segments")
            }
            _ => {}
        }
        if rt.stopping() {
            break;
        }
        let keep = &rt.config().daemon.store;
        if last_check.elapsed() >= Duration::from_secs(keep.check_interval.max(1)) {
            last_check = Instant::now();
            let floor = keep.floor_file.as_ref().map(|f| rt.config().common.path(f));
            if let Some(floor) = floor_failing.floor(&figures, floor.as_deref()) {
                enforce_retention(&figures, keep.max_bytes, floor, &mut failing);
            }
        }
        if rt.once() && all_shipped(&figures) {
            log::info!("--once: everything durable has been shipped");
            rt.stop_flag().store(true, Ordering::SeqCst);
            break;
        }
    }
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

/// A thread for each receiver and each sendfile shipper; their figures on the status page.
fn start_senders(
    rt: &Runtime<ReaderConfig>,
) -> anyhow::Result<(Arc<SenderFigures>, Vec<JoinHandle<()>>)> {
    let cfg = rt.config();
    let common = &cfg.common;
    let secret = Secret::load(&common.path(&cfg.daemon.secret_file))?;
    let store = common.path(&cfg.daemon.store_dir);
    let state_dir = common.path(&cfg.daemon.state_dir);
    std::fs::create_dir_all(&state_dir).with_context(|| format!("{}", state_dir.display()))?;
    let specs = SenderSpec::all(&cfg.daemon, &state_dir).map_err(anyhow::Error::msg)?;
    let states: Vec<Arc<SenderState>> = specs
        .into_iter()
        .map(|s| Arc::new(SenderState::new(s)))
        .collect();
    let ctx = Arc::new(SendCtx {
        store: store.clone(),
        secret,
        config: rt.running_config(),
        stop: rt.stop(),
    });
    let mut threads = Vec::new();
    for st in &states {
        let (st, ctx) = (Arc::clone(st), Arc::clone(&ctx));
        threads.push(
            std::thread::Builder::new()
                .name(format!("sender-{}", st.spec.address))
                .spawn(move || sender::run(st, ctx))?,
        );
    }
    let resends = Arc::new(Resends::default());
    {
        let (senders, ctx, resends) = (states.clone(), Arc::clone(&ctx), Arc::clone(&resends));
        let dir = state_dir.clone();
        threads.push(
            std::thread::Builder::new()
                .name("resends".into())
                .spawn(move || resend::watch(dir, senders, ctx, resends))?,
        );
    }
    let mut shippers = Vec::new();
    for (n, f) in &cfg.daemon.sendfile {
        let sh = Arc::new(FileShipper::new(
            *n,
            f.clone(),
            common.path(&f.dir),
            &state_dir,
        ));
        shippers.push(Arc::clone(&sh));
        let ctx = Arc::clone(&ctx);
        threads.push(
            std::thread::Builder::new()
                .name(format!("sendfile-{n}"))
                .spawn(move || sendfile::run(sh, ctx))?,
        );
    }
    log::info!(
        "reader: {} senders, {} sendfile shippers, store {}",
        states.len(),
        shippers.len(),
        store.display()
    );
    let figures = Arc::new(SenderFigures {
        store,
        senders: states,
        shippers,
        retention: Default::default(),
        resends,
    });
    rt.add_status_source(figures.clone());
    Ok((figures, threads))
}

/// One retention check of the store (`Store.MaxBytes`, below the owner's floor with
/// `Store.FloorFile`), counted on the status page; its failures are an episode.
fn enforce_retention(figures: &SenderFigures, max_bytes: u64, floor: u64, failing: &mut Episode) {
    let shippers: Vec<retention::FileShipperNeed> = figures
        .shippers
        .iter()
        .filter_map(|sh| {
            sh.needs_from(&figures.store)
                .map(|first_needed| retention::FileShipperNeed {
                    name: format!("sendfile {} to {}", sh.n, sh.cfg.address),
                    first_needed,
                })
        })
        .collect();
    // A running resend keeps what it has still to send, like a sender.
    let mut senders = figures.senders.clone();
    senders.extend(figures.resends.running());
    match retention::enforce_below(&figures.store, &senders, &shippers, max_bytes, floor) {
        Ok(r) => {
            failing.resolved(&"works again");
            if r.deleted > 0 {
                log::info!("retention: deleted {} segments", r.deleted);
            }
            if let Ok(mut t) = figures.retention.lock() {
                t.checks += 1;
                t.deleted += r.deleted;
                t.overflowed += r.overflowed;
                t.lost_items += r.lost_items;
            }
        }
        Err(e) => {
            failing.occurred(log::Level::Error, &e);
        }
    }
}

/// A floor file that cannot be read: a check that deletes nothing, counted; an episode per
/// kind of trouble (missing, a symlink, damaged), so that a new kind is logged at once.
#[derive(Default)]
struct FloorTrouble {
    open: Option<(&'static str, Episode)>,
}

impl FloorTrouble {
    /// The floor to delete below (none configured: no limit); `None`: delete nothing.
    fn floor(&mut self, figures: &SenderFigures, file: Option<&std::path::Path>) -> Option<u64> {
        match file.map(retention::read_floor).transpose() {
            Ok(floor) => {
                self.resolved();
                Some(floor.unwrap_or(u64::MAX))
            }
            Err(e) => {
                self.occurred(figures, e);
                None
            }
        }
    }

    fn occurred(&mut self, figures: &SenderFigures, e: retention::FloorError) {
        if self
            .open
            .as_ref()
            .is_some_and(|(kind, _)| *kind != e.kind())
        {
            self.resolved();
        }
        let (_, episode) = self.open.get_or_insert_with(|| {
            let what = format!("retention in {}", figures.store.display());
            (e.kind(), Episode::new(what))
        });
        episode.occurred(log::Level::Error, &e);
        if let Ok(mut t) = figures.retention.lock() {
            t.checks += 1;
            t.floor_errors += 1;
        }
    }

    fn resolved(&mut self) {
        if let Some((_, mut episode)) = self.open.take() {
            episode.resolved(&"the floor file is readable again");
        }
    }
}

/// `--once`: every sender is caught up and no shipper has a file waiting.
fn all_shipped(figures: &SenderFigures) -> bool {
    figures
        .senders
        .iter()
        .all(|s| s.caught_up.load(Ordering::SeqCst))
        && figures
            .shippers
            .iter()
            .all(|s| s.ready().map(|r| r.is_empty()).unwrap_or(true))
}

fn receiver(rt: &mut Runtime<ReaderConfig>) -> anyhow::Result<()> {
    let cfg = rt.config().clone();
    let common = &cfg.common;
    let secret = Secret::load(&common.path(&cfg.daemon.secret_file))?;
    let dir = common.path(&cfg.daemon.recv.store_dir);
    let (store, rec) = RecvStore::open(&dir, cfg.daemon.segment.writer_options())?;
    if rec.cut_bytes > 0 || rec.index_rebuilt {
        log::warn!(
            "{}: recovered segment {}: cut {} bytes ({}), index rebuilt: {}",
            dir.display(),
            rec.file_id,
            rec.cut_bytes,
            rec.cut_reason.unwrap_or("-"),
            rec.index_rebuilt
        );
    }
    if let Some(bad) = &rec.left_behind {
        log::error!("{bad}: left behind; new segment {} opened", rec.file_id);
    }
    let inbox_dir = common.path(&cfg.daemon.recv.inbox_dir);
    match recv::files::remove_temporaries(&inbox_dir) {
        Ok(0) => {}
        Ok(n) => log::warn!(
            "{}: removed {n} temporary files of transfers a stop cut short (their senders send them again)",
            inbox_dir.display()
        ),
        Err(e) => log::error!("{}: cleaning temporary files: {e}", inbox_dir.display()),
    }
    let listener = TcpListener::bind(&cfg.daemon.recv.listen)
        .with_context(|| format!("Recv.Listen {}", cfg.daemon.recv.listen))?;
    log::info!(
        "reader --recv listening on {}, store {}",
        listener.local_addr()?,
        dir.display()
    );
    let shared = Arc::new(
        RecvShared::new(
            store,
            secret,
            rt.allowed_peers(),
            rt.running_config(),
            inbox_dir,
            Duration::from_secs(cfg.daemon.recv.idle_timeout.max(1)),
            cfg.daemon.recv.max_connections,
            rt.stop_flag(),
        )
        .with_limits(
            cfg.daemon.recv.max_per_address,
            Duration::from_secs(cfg.daemon.recv.handshake_timeout),
        ),
    );
    rt.add_status_source(shared.clone());
    let acceptor = recv::serve(listener, Arc::clone(&shared))?;
    loop {
        let signal = rt.next_signal(Duration::from_millis(100));
        if matches!(signal, Some(Signal::Stop)) || rt.stopping() {
            break;
        }

        if let Ok(mut store) = shared.store.lock() {
            let r = if matches!(signal, Some(Signal::Rotate)) {
                store.rotate()
            } else {
                store.sync_if_due()
            };
            if let Err(e) = r {
                // The store logs its failures as an episode; not a line every 100 ms here.
                log::debug!("receiver store: {e}");
            }
        }
    }
    rt.stop_flag().store(true, Ordering::SeqCst);
    shared.close_all();
    let _ = acceptor.join();
    if let Ok(mut store) = shared.store.lock() {
        store.checkpoint()?;
    }
    Ok(())
}
