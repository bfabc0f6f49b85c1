//! The sender side: one thread per receiver address, each with its own position file.

mod batch;
pub mod lag;
pub mod retention;
mod saver;
mod session;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use focuser_schema::segment::{read_position, Partition, Position, PositionError, Status};

use crate::config::{ReaderConfig, SendConfig};
use crate::wire::Secret;

/// One sender: receiver `index` of the `count` addresses of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SenderSpec {
    /// `Index.0`, `Summary.1`, ...
    pub group: String,
    pub address: String,
    pub partition: Partition,
    pub statuses: Vec<Status>,
    /// The name the receiver knows this stream by: `<reader name>.<group>`.
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
                        stream: format!("{}.{group}", cfg.name),
                        position_file: state_dir.join(format!("pos_{group}_{k}_{safe}.dat")),
                        lost_file: state_dir.join(format!("lost_{group}_{k}_{safe}.txt")),
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
        focuser_schema::fsutil::write_atomically(&self.lost_file, |w| writeln!(w, "{n}"))
    }
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
    /// Set when a session fails: up to here the next sessions send ITEMS (see `batch`).
    verify_until: Mutex<Position>,
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
            verify_until: Mutex::new(Position::default()),
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
}

/// What every sender of one reader shares.
pub struct SendCtx {
    pub store: PathBuf,
    pub secret: Secret,
    pub max_frame: usize,
    pub send: SendConfig,
    pub stop: Arc<AtomicBool>,
}

/// Runs one sender until the stop flag is set: connect, send, reconnect with backoff.
pub fn run(st: Arc<SenderState>, ctx: Arc<SendCtx>) {
    let min = Duration::from_secs_f64(ctx.send.retry_min);
    let max = Duration::from_secs_f64(ctx.send.retry_max);
    let mut backoff = min;
    let mut failures_in_row = 0u32;
    while !ctx.stop.load(Ordering::SeqCst) {
        let outcome = session::run(&st, &ctx);
        st.connected.store(false, Ordering::SeqCst);
        match outcome {
            Ok(()) => break,
            Err(e) => {
                st.failures.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut l) = st.last_error.lock() {
                    *l = Some(e.to_string());
                }
                if e.made_progress {
                    backoff = min;
                    failures_in_row = 0;
                }
                failures_in_row += 1;
                // The first failure is news; the same one every few seconds is noise.
                if failures_in_row <= 1 || failures_in_row.is_power_of_two() {
                    log::warn!(
                        "sender {} {}: {} (retrying in {:.1} s)",
                        st.spec.group,
                        st.spec.address,
                        e,
                        backoff.as_secs_f64()
                    );
                }
                sleep_unless_stopped(backoff, &ctx.stop);
                backoff = (backoff * 2).min(max);
            }
        }
    }
}

pub(crate) fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) {
    let end = std::time::Instant::now() + d;
    while !stop.load(Ordering::SeqCst) {
        let now = std::time::Instant::now();
        if now >= end {
            break;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}
