//! The sender side: one thread per receiver address, each with its own position file.

mod batch;
pub mod identity;
pub mod lag;
pub mod resend;
pub mod retention;
mod saver;
mod session;
pub mod trouble;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use focuser_daemon::backoff::Backoff;
use focuser_daemon::config::RunningConfig;
use focuser_daemon::episode::Episode;
use focuser_daemon::stop::Stop;
use focuser_formats::segment::{read_position, Partition, Position, PositionError, Status};

use crate::config::{ReaderConfig, SendConfig};
use crate::wire::Secret;
use trouble::Trouble;

/// One sender: receiver `index` of the `count` addresses of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SenderSpec {
    /// `Index.0`, `Summary.1`, ...
    pub group: String,
    pub address: String,
    pub partition: Partition,
    pub statuses: Vec<Status>,
    /// The name the receiver knows this stream by: `<reader name>.<group>`, and
    /// `.epoch<N>` after it from `stream_epoch = N` on (a new stream to the receivers).
    pub stream: String,
    pub position_file: PathBuf,
    /// How many of its items `Store.MaxBytes` deleted before they were sent, in decimal: kept
    /// across restarts so that `reader stat` shows it too.
    pub lost_file: PathBuf,
}

impl SenderSpec {
    /// Every sender the config describes, in group order.
    pub fn all(cfg: &ReaderConfig, state_dir: &Path) -> Result<Vec<SenderSpec>, String> {
        let mut out = Vec::new();
        // A new epoch is a new stream: its positions start over in files of their own.
        let epoch = match cfg.stream_epoch {
            0 => String::new(),
            n => format!(".epoch{n}"),
        };
        for (kind, groups) in [("Index", &cfg.index), ("Summary", &cfg.summary)] {
            for (n, g) in groups {
                let group = format!("{kind}.{n}");
                let statuses = g.wanted()?;
                for (k, address) in g.addresses.iter().enumerate() {
                    let safe: String = address
                        .chars()
                        .map(|c| {
                            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                                c
                            } else {
                                '_'
                            }
                        })
                        .collect();
                    out.push(SenderSpec {
                        group: group.clone(),
                        address: address.clone(),
                        partition: Partition {
                            count: g.addresses.len() as u32,
                            index: k as u32,
                        },
                        statuses: statuses.clone(),
                        stream: format!("{}.{group}{epoch}", cfg.name),
                        position_file: state_dir.join(format!("pos_{group}_{k}_{safe}{epoch}.dat")),
                        lost_file: state_dir.join(format!("lost_{group}_{k}_{safe}{epoch}.txt")),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The saved position; a missing file means the oldest segment, and so does a damaged one
    /// (reported): resending is safe, skipping is not.
    pub fn load_position(&self) -> (Position, Option<PositionError>) {
        match read_position(&self.position_file) {
            Ok(Some(p)) => (p, None),
            Ok(None) => (Position::START, None),
            Err(e) => (Position::START, Some(e)),
        }
    }

    /// Items lost so far; a missing or unreadable file counts as none.
    pub fn load_lost(&self) -> u64 {
        std::fs::read_to_string(&self.lost_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    pub fn save_lost(&self, n: u64) -> std::io::Result<()> {
        focuser_formats::fsutil::write_atomically(&self.lost_file, |w| writeln!(w, "{n}"))
    }
}

/// Between a sender and a resend to the same receiver: the sender builds and sends each batch
/// holding it, a resend holds it from reading the store's end until its batch is acknowledged
/// (`held`): no newer item of a document can then reach the receiver before the older copy the
/// resend sends.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Gate {
    pub held: bool,
    /// Where the sender sends from next: what is before it was sent, the rest will be.
    pub next: Position,
}

/// A sender's state, shared with the status page and retention.
pub struct SenderState {
    pub spec: SenderSpec,
    /// The durable position (what the position file holds).
    pub saved: Mutex<Position>,
    pub connected: AtomicBool,
    /// Everything durable has been sent and acknowledged.
    pub caught_up: AtomicBool,
    pub sent_items: AtomicU64,
    pub acked_items: AtomicU64,
    pub sent_bytes: AtomicU64,
    pub connects: AtomicU64,
    pub failures: AtomicU64,
    pub corrupt_items: AtomicU64,
    pub bad_position_files: AtomicU64,
    pub lost_items: AtomicU64,
    pub last_error: Mutex<Option<String>>,
    /// While the receiver's position, or the saved one, cannot be this store's
    /// ([`identity`]): why. Nothing is sent and retention keeps everything for it.
    pub mismatch: Mutex<Option<String>>,
    /// Connections given up on a stream identity mismatch.
    pub mismatches: AtomicU64,
    /// Set when a session fails: up to here the next sessions send ITEMS (see `batch`).
    verify_until: Mutex<Position>,
    /// Shared with a resend to this receiver ([`resend`]).
    pub(crate) gate: Mutex<Gate>,
    /// A resend from the owner's snapshot: where it reads the store from (its saved position
    /// is in the snapshot), for retention.
    reads_store_from: Mutex<Option<Position>>,
    trouble: Mutex<Trouble>,
    mismatch_episode: Mutex<Episode>,
}

impl SenderState {
    /// Where the ITEMS stretch left by failed sessions ends.
    pub(crate) fn verify_until(&self) -> Position {
        self.verify_until.lock().map(|p| *p).unwrap_or_default()
    }

    pub(crate) fn verify_to(&self, p: Position) {
        if let Ok(mut v) = self.verify_until.lock() {
            *v = (*v).max(p);
        }
    }

    pub fn new(spec: SenderSpec) -> SenderState {
        let name = format!("sender {} {}", spec.group, spec.address);
        SenderState::named(spec, name)
    }

    /// `name` leads its log lines (a resend's: `resend to GROUP ADDRESS`).
    pub fn named(spec: SenderSpec, name: String) -> SenderState {
        let (pos, err) = spec.load_position();
        let lost = spec.load_lost();
        let st = SenderState {
            spec,
            saved: Mutex::new(pos),
            connected: AtomicBool::new(false),
            caught_up: AtomicBool::new(false),
            sent_items: AtomicU64::new(0),
            acked_items: AtomicU64::new(0),
            sent_bytes: AtomicU64::new(0),
            connects: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            corrupt_items: AtomicU64::new(0),
            bad_position_files: AtomicU64::new(0),
            lost_items: AtomicU64::new(lost),
            last_error: Mutex::new(None),
            mismatch: Mutex::new(None),
            mismatches: AtomicU64::new(0),
            verify_until: Mutex::new(Position::default()),
            gate: Mutex::new(Gate {
                held: false,
                next: pos,
            }),
            reads_store_from: Mutex::new(None),
            mismatch_episode: Mutex::new(Episode::new(format!("{name}: stream identity mismatch"))),
            trouble: Mutex::new(Trouble::new(name)),
        };
        if let Some(e) = err {
            log::error!(
                "{e}; sender {} starts from the oldest segment",
                st.spec.address
            );
            st.bad_position_files.fetch_add(1, Ordering::Relaxed);
        }
        st
    }

    pub fn saved(&self) -> Position {
        self.saved.lock().map(|p| *p).unwrap_or_default()
    }

    /// Where this sender still reads the store from: its saved position, unless it reads
    /// another store (a resend from the owner's snapshot) and the store from elsewhere.
    pub fn store_position(&self) -> Position {
        self.reads_store_from
            .lock()
            .ok()
            .and_then(|p| *p)
            .unwrap_or_else(|| self.saved())
    }

    pub(crate) fn set_store_position(&self, p: Position) {
        if let Ok(mut r) = self.reads_store_from.lock() {
            *r = Some(p);
        }
    }

    pub fn in_mismatch(&self) -> bool {
        self.mismatch.lock().map(|m| m.is_some()).unwrap_or(false)
    }

    /// The positions agree with the store (again).
    pub(crate) fn identity_confirmed(&self) {
        let was = self.mismatch.lock().ok().and_then(|mut m| m.take());
        if was.is_some() {
            if let Ok(mut e) = self.mismatch_episode.lock() {
                e.resolved(&"the positions agree with the store again");
            }
        }
    }

    /// A session delivers (an ack came, or there is nothing to send).
    pub(crate) fn delivering(&self) {
        if let Ok(mut t) = self.trouble.lock() {
            t.recovered();
        }
    }

    fn failed(&self, e: &session::SessionError, retry: Duration) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut l) = self.last_error.lock() {
            *l = Some(e.to_string());
        }
        if !e.mismatch {
            if let Ok(mut t) = self.trouble.lock() {
                t.failed(e, retry);
            }
            return;
        }
        self.mismatches.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut m) = self.mismatch.lock() {
            *m = Some(e.to_string());
        }
        if let Ok(mut ep) = self.mismatch_episode.lock() {
            ep.occurred(log::Level::Error, e);
        }
    }
}

/// What every sender (and sendfile shipper) of one reader shares.
pub struct SendCtx {
    /// `store_dir` and `secret_file` (read once): restart-only keys.
    pub store: PathBuf,
    pub secret: Secret,
    /// Where `MaxFrame` and `Send.*` are taken from, as they are now ([`SendCtx::settings`]).
    pub config: RunningConfig<ReaderConfig>,
    pub stop: Stop,
}

/// The keys a reload applies to a sender: taken from the running config at each connection
/// and each turn of its loop, each failure for the backoff.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub max_frame: usize,
    pub send: SendConfig,
}

impl SendCtx {
    pub fn settings(&self) -> Settings {
        let config = self.config.get();
        Settings {
            max_frame: config.daemon.max_frame,
            send: config.daemon.send.clone(),
        }
    }

    /// `Store.SnapshotDir` as it is now: where the store's owner writes a resend's live set.
    pub fn snapshot_dir(&self) -> Option<PathBuf> {
        let config = self.config.get();
        let dir = config.daemon.store.snapshot_dir.as_ref()?;
        Some(config.common.path(dir))
    }

    /// The reconnection backoff as `Send.RetryMin` and `Send.RetryMax` are now: `backoff`
    /// itself while they have not changed.
    pub(crate) fn backoff(&self, backoff: &mut Backoff, limits: &mut (f64, f64)) {
        let send = self.settings().send;
        if (send.retry_min, send.retry_max) != *limits {
            *limits = (send.retry_min, send.retry_max);
            *backoff = Backoff::new(
                Duration::from_secs_f64(send.retry_min),
                Duration::from_secs_f64(send.retry_max),
            );
        }
    }
}

/// Runs one sender until the stop flag is set: connect, send, reconnect with backoff.
pub fn run(st: Arc<SenderState>, ctx: Arc<SendCtx>) {
    let mut limits = (f64::NAN, f64::NAN);
    let mut backoff = Backoff::new(Duration::ZERO, Duration::ZERO);
    while !ctx.stop.is_set() {
        let outcome = session::run(&st, &ctx);
        st.connected.store(false, Ordering::SeqCst);
        ctx.backoff(&mut backoff, &mut limits);
        match outcome {
            Ok(()) => break,
            Err(e) if e.idle_close => {
                log::debug!(
                    "sender {} {}: {e} while idle; connecting again",
                    st.spec.group,
                    st.spec.address
                );
                backoff.succeeded();
                ctx.stop.sleep(backoff.next_wait());
            }
            Err(e) => {
                if e.made_progress {
                    backoff.succeeded();
                }
                let wait = backoff.failed();
                st.failed(&e, wait);
                ctx.stop.sleep(wait);
            }
        }
    }
}
