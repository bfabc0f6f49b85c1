//! Start-up, the main loop's view of signals, reload and stop.
//!
//! Start-up order matters: the config is read and checked first, with the files it names
//! ([`checks::preflight`]; errors go to the terminal); then the daemon detaches (before any
//! thread exists), takes the pidfile, opens its log and listening socket, chroots and drops
//! privileges, starts threads and hands over to the daemon's main loop (`start.rs`). The
//! waiting starter is told the daemon is ready only once the main loop has done its own
//! start-up too (its first [`Runtime::next_signal`], or [`Runtime::ready`]), or is given the
//! error it failed with. A reload is `reload.rs`, the stop's watchdog `stopper.rs`.
//!
//! [`checks::preflight`]: crate::checks::preflight

mod reload;
mod start;
mod stopper;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use crate::cli::CommonArgs;
use crate::config::{Config, DaemonConfig, RunningConfig};
#[cfg(feature = "database")]
use crate::db::Database;
use crate::logging::Logging;
use crate::pidfile::Pidfile;
use crate::privileges::{Identity, Readiness};
use crate::signals::Signal;
use crate::status::{Figures, StatusServer, StatusShared, StatusSource};
use reload::Started;
pub use start::run;
use stopper::Stopper;

/// A started daemon, as its main loop sees it.
pub struct Runtime<T: DaemonConfig> {
    name: &'static str,
    args: CommonArgs,
    /// What runs: the main loop's copy of [`Runtime::running_config`].
    config: Arc<Config<T>>,
    running: RunningConfig<T>,
    logging: Logging,
    pidfile: Option<Pidfile>,
    status: Option<StatusServer>,
    shared: Arc<StatusShared>,
    figures: Arc<Figures>,
    signals_rx: Receiver<Signal>,
    signals_tx: Sender<Signal>,
    signal_handle: signal_hook::iterator::Handle,
    stop: Arc<AtomicBool>,
    stopper: Stopper,
    #[cfg(feature = "database")]
    database: Option<Database>,
    identity: Identity,
    /// Tells the maintainer of panics and fatal errors (docs/operations.md#crash-reports).
    notifier: crate::crash::Notifier,
    /// The config and start-only files the daemon started with (see [`Started`]).
    started: Started<T>,
    /// The starter waiting for `ready` (with `--daemon`, until the main loop is ready).
    readiness: Option<Readiness>,
}

impl<T: DaemonConfig> Runtime<T> {
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The running config (a reload replaces it).
    pub fn config(&self) -> &Config<T> {
        &self.config
    }

    /// The peers `allowdb` lets in, for a daemon's own listener: what the status endpoint
    /// allows, read again by every reload.
    pub fn allowed_peers(&self) -> crate::access::AllowedPeers {
        let shared = Arc::clone(&self.shared);
        // A copy of the list, so that a name lookup does not hold the status endpoint's lock.
        crate::access::AllowedPeers::running(move || {
            shared.access.lock().ok().map(|a| a.allow.clone())
        })
    }

    /// The running config for the daemon's threads: each takes the current one at every
    /// unit of work, so that a reload reaches it.
    pub fn running_config(&self) -> RunningConfig<T> {
        self.running.clone()
    }

    /// `--once`: do one unit of work and return.
    pub fn once(&self) -> bool {
        self.args.once
    }

    /// The registry the daemon's figures go in (status page, `/status.json`, `/metrics`).
    pub fn figures(&self) -> Arc<Figures> {
        Arc::clone(&self.figures)
    }

    /// Adds a source of figures computed when the page is asked for.
    /// Adds a source of figures (and cards, tables, charts) to the status endpoint; its
    /// charted figures are sampled at once, so that the work done before the next beat of
    /// `status_sample` shows in the charts.
    pub fn add_status_source(&self, source: Arc<dyn StatusSource>) {
        if let Ok(mut sources) = self.shared.sources.lock() {
            sources.push(source);
        }
        self.shared.sample_new();
    }

    pub fn status_addr(&self) -> Option<SocketAddr> {
        self.status.as_ref().map(StatusServer::addr)
    }

    /// The database of `database`/`DATABASE_URL`, with reconnection; `None` if not configured.
    #[cfg(feature = "database")]
    pub fn database(&self) -> Option<&Database> {
        self.database.as_ref()
    }

    /// The database, for a daemon that cannot work without one.
    #[cfg(feature = "database")]
    pub fn require_database(&self) -> anyhow::Result<Database> {
        self.database
            .clone()
            .ok_or_else(|| anyhow::anyhow!(crate::db::NO_DATABASE))
    }

    /// The daemon's stop, for threads that sleep between units of work.
    pub fn stop(&self) -> crate::stop::Stop {
        crate::stop::Stop::from_flag(Arc::clone(&self.stop))
    }

    /// Set once a stop was asked for; worker threads poll it.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// For worker threads that need to ask the main loop for something (a stop after a fatal
    /// error, say).
    pub fn signal_sender(&self) -> Sender<Signal> {
        self.signals_tx.clone()
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Tells the starter (`--daemon`) that the daemon is ready: call it once the main loop's
    /// own start-up (secrets read, stores opened, listeners bound) is done. The first
    /// [`Runtime::next_signal`] calls it too.
    pub fn ready(&mut self) {
        self.settle_start(Ok(()));
    }

    /// Tells a starter still waiting how the start went (`Err`: the message it prints).
    fn settle_start(&mut self, outcome: Result<(), String>) {
        match (self.readiness.take(), outcome) {
            (Some(r), Ok(())) => r.ready(),
            (Some(r), Err(message)) => r.fail(&message),
            (None, _) => {}
        }
    }

    /// Waits up to `timeout` for a signal. The generic part is done before it is returned:
    /// `ReopenLog` has reopened the log, `Reload` has replaced [`Runtime::config`] (a rejected
    /// reload is logged and not returned), `Stop` has set the stop flag and armed the
    /// `stop_timeout` watchdog. `Rotate` is the daemon's to act on.
    pub fn next_signal(&mut self, timeout: Duration) -> Option<Signal> {
        self.ready();
        let signal = match self.signals_rx.recv_timeout(timeout) {
            Ok(s) => s,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
        };
        match signal {
            Signal::ReopenLog => match self.logging.reopen() {
                Ok(()) => log::info!("log reopened"),
                Err(e) => log::error!("cannot reopen the log, still writing the old file: {e}"),
            },
            Signal::Reload => {
                if let Err(e) = self.reload() {
                    log::error!("reload rejected, the running config stays: {e:#}");
                    return None;
                }
            }
            Signal::Rotate => log::info!("rotate requested"),
            // The signal thread has set the stop flag and armed the watchdog already.
            Signal::Stop => {}
        }
        Some(signal)
    }

    /// Clean exit: stops the endpoint and signal thread, removes the pidfile.
    pub fn shutdown(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(status) = self.status.take() {
            status.stop();
        }
        self.signal_handle.close();
        log::info!("{} stopped", self.name);
        if let Some(p) = self.pidfile.take() {
            let path = p.path().display().to_string();
            if let Err(e) = p.remove() {
                log::warn!("cannot remove pidfile {path}: {e}");
            }
        }
        log::logger().flush();
    }
}
