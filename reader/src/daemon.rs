//! The two daemons behind `reader`: the sender (default) and the receiver (`--recv`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use focuser_daemon::access::AllowList;
use focuser_daemon::status::{Figure, StatusSource};
use focuser_daemon::{Runtime, Signal};

use crate::config::ReaderConfig;
use crate::recv::{self, RecvShared, RecvStore};
use crate::sender::{self, lag::lag, retention, SendCtx, SenderSpec, SenderState};
use crate::sendfile::{self, FileShipper};
use crate::wire::Secret;

pub fn main_loop(rt: &mut Runtime<ReaderConfig>, recv: bool) -> anyhow::Result<()> {
    if recv {
        receiver(rt)
    } else {
        senders(rt)
    }
}

fn senders(rt: &mut Runtime<ReaderConfig>) -> anyhow::Result<()> {
    let cfg = rt.config().clone();
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
        secret: secret.clone(),
        max_frame: cfg.daemon.max_frame,
        send: cfg.daemon.send.clone(),
        stop: rt.stop_flag(),
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
    let mut shippers = Vec::new();
    for (n, f) in &cfg.daemon.sendfile {
        let sh = Arc::new(FileShipper::new(
            *n,
            f.clone(),
            common.path(&f.dir),
            &state_dir,
        ));
        shippers.push(Arc::clone(&sh));
        let (secret, stop) = (secret.clone(), rt.stop_flag());
        let (max, retry) = (
            cfg.daemon.max_frame,
            (cfg.daemon.send.retry_min, cfg.daemon.send.retry_max),
        );
        threads.push(
            std::thread::Builder::new()
                .name(format!("sendfile-{n}"))
                .spawn(move || sendfile::run(sh, secret, max, retry, stop))?,
        );
    }
    let figures = Arc::new(SenderFigures {
        store: store.clone(),
        senders: states.clone(),
        shippers,
        retention: Default::default(),
    });
    rt.add_status_source(figures.clone());
    log::info!(
        "reader: {} senders, {} sendfile shippers, store {}",
        states.len(),
        cfg.daemon.sendfile.len(),
        store.display()
    );
    let check = Duration::from_secs(cfg.daemon.store.check_interval.max(1));
    let mut last_check = Instant::now();
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
        if last_check.elapsed() >= check {
            last_check = Instant::now();
            match retention::enforce(&store, &states, rt.config().daemon.store.max_bytes) {
                Ok(r) => {
                    if r.deleted > 0 {
                        log::info!("retention: deleted {} segments", r.deleted);
                    }
                    if let Ok(mut t) = figures.retention.lock() {
                        t.deleted += r.deleted;
                        t.overflowed += r.overflowed;
                        t.lost_items += r.lost_items;
                    }
                }
                Err(e) => log::error!("retention: {e}"),
            }
        }
        if rt.once()
            && states.iter().all(|s| s.caught_up.load(Ordering::SeqCst))
            && figures
                .shippers
                .iter()
                .all(|s| s.ready().map(|r| r.is_empty()).unwrap_or(true))
        {
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

fn receiver(rt: &mut Runtime<ReaderConfig>) -> anyhow::Result<()> {
    let cfg = rt.config().clone();
    let common = &cfg.common;
    let secret = Secret::load(&common.path(&cfg.daemon.secret_file))?;
    let allow = match &common.allowdb {
        Some(p) => AllowList::load(&common.path(p))?,
        None => AllowList::loopback(),
    };
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
    let listener = TcpListener::bind(&cfg.daemon.recv.listen)
        .with_context(|| format!("Recv.Listen {}", cfg.daemon.recv.listen))?;
    log::info!(
        "reader --recv listening on {}, store {}",
        listener.local_addr()?,
        dir.display()
    );
    let shared = Arc::new(RecvShared::new(
        store,
        secret,
        allow,
        cfg.daemon.max_frame,
        common.path(&cfg.daemon.recv.inbox_dir),
        Duration::from_secs(cfg.daemon.recv.idle_timeout.max(1)),
        cfg.daemon.recv.max_connections,
        rt.stop_flag(),
    ));
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
                log::error!("receiver store: {e}");
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

#[derive(Default)]
struct RetentionTotals {
    deleted: u64,
    overflowed: u64,
    lost_items: u64,
}

struct SenderFigures {
    store: PathBuf,
    senders: Vec<Arc<SenderState>>,
    shippers: Vec<Arc<FileShipper>>,
    retention: std::sync::Mutex<RetentionTotals>,
}

impl StatusSource for SenderFigures {
    fn figures(&self) -> Vec<Figure> {
        let now = focuser_schema::segment::now_ms();
        let mut f = vec![
            Figure::gauge(
                "reader_store_bytes",
                "bytes of the segment store",
                focuser_schema::segment::store_bytes(&self.store).unwrap_or(0) as f64,
            ),
            Figure::gauge(
                "reader_store_segments",
                "segments in the store",
                focuser_schema::segment::list_segments(&self.store)
                    .map(|v| v.len())
                    .unwrap_or(0) as f64,
            ),
        ];
        if let Ok(t) = self.retention.lock() {
            f.push(Figure::counter(
                "reader_segments_deleted_total",
                "segments deleted by retention",
                t.deleted as f64,
            ));
            f.push(Figure::counter(
                "reader_segments_overflowed_total",
                "segments deleted past Store.MaxBytes while a sender needed them",
                t.overflowed as f64,
            ));
        }
        for s in &self.senders {
            let pos = s.saved();
            let l = lag(&self.store, pos, s.spec.partition).unwrap_or_default();
            let label = |fig: Figure| {
                fig.with_label("group", &s.spec.group)
                    .with_label("receiver", &s.spec.address)
            };
            let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
            f.extend([
                label(Figure::gauge(
                    "reader_sender_connected",
                    "1 while connected",
                    s.connected.load(Ordering::Relaxed) as u8 as f64,
                )),
                label(Figure::gauge(
                    "reader_sender_position_file",
                    "segment of the saved position",
                    pos.file_id as f64,
                )),
                label(Figure::gauge(
                    "reader_sender_position_item",
                    "item of the saved position",
                    pos.item_idx as f64,
                )),
                label(Figure::gauge(
                    "reader_sender_lag_items",
                    "items of its partition not yet acknowledged",
                    l.items as f64,
                )),
                label(Figure::gauge(
                    "reader_sender_lag_seconds",
                    "age of the oldest item not yet acknowledged",
                    l.seconds(now),
                )),
                label(Figure::counter(
                    "reader_sender_acked_items_total",
                    "items acknowledged",
                    n(&s.acked_items),
                )),
                label(Figure::counter(
                    "reader_sender_sent_bytes_total",
                    "bytes sent",
                    n(&s.sent_bytes),
                )),
                label(Figure::counter(
                    "reader_sender_failures_total",
                    "connections failed or refused",
                    n(&s.failures),
                )),
                label(Figure::counter(
                    "reader_sender_lost_items_total",
                    "items deleted past Store.MaxBytes before they were sent",
                    n(&s.lost_items),
                )),
                label(Figure::counter(
                    "reader_sender_corrupt_items_total",
                    "damaged items skipped",
                    n(&s.corrupt_items),
                )),
            ]);
        }
        for sh in &self.shippers {
            let label = |fig: Figure| {
                fig.with_label("inbox", &sh.cfg.inbox)
                    .with_label("receiver", &sh.cfg.address)
            };
            f.push(label(Figure::counter(
                "reader_sendfile_files_total",
                "files shipped",
                sh.shipped.load(Ordering::Relaxed) as f64,
            )));
            f.push(label(Figure::counter(
                "reader_sendfile_failures_total",
                "sendfile attempts failed",
                sh.failures.load(Ordering::Relaxed) as f64,
            )));
            f.push(label(Figure::gauge(
                "reader_sendfile_pending",
                "files waiting to be shipped",
                sh.ready().map(|r| r.len()).unwrap_or(0) as f64,
            )));
        }
        f
    }
}
