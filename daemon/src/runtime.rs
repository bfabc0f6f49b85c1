//! Start-up, the main loop's view of signals, reload and stop.
//!
//! Start-up order matters: the config is read and checked first, with the files it names
//! ([`checks::preflight`]; errors go to the terminal); then the daemon detaches (before any
//! thread exists), takes the pidfile, opens its log and listening socket, chroots and drops
//! privileges, starts threads and hands over to the daemon's main loop. The waiting starter
//! is told the daemon is ready only once the main loop has done its own start-up too (its
//! first [`Runtime::next_signal`], or [`Runtime::ready`]), or is given the error it failed with.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};

use crate::checks::{self, load_access};
use crate::cli::CommonArgs;
use crate::config::{CommonConfig, Config, DaemonConfig};
#[cfg(feature = "database")]
use crate::db::Database;
use crate::logging::{LogSettings, Logging};
use crate::pidfile::{self, Pidfile};
use crate::privileges::{self, Identity, Readiness};
use crate::reload::Started;
use crate::signals::{self, Signal};
use crate::status::{Figures, History, StatusServer, StatusShared, StatusSource};

/// Runs a daemon: parses its config, starts the runtime, hands it to `body` (the daemon's main
/// loop) and shuts down. This is all a daemon's `main` needs besides its own subcommands.
pub fn run<T, F>(name: &'static str, args: CommonArgs, body: F) -> ExitCode
where
    T: DaemonConfig,
    F: FnOnce(&mut Runtime<T>) -> anyhow::Result<()>,
{
    let file = args.config_file(name);
    let config = match Config::<T>::load(&file, std::env::var("DATABASE_URL").ok()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.check_config {
        // Printed even when a file fails its check: init scripts find the pidfile here.
        for (key, value) in config.effective() {
            println!("{key} = {value}");
        }
        return match checks::preflight(&config) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{name}: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let mut runtime = match Runtime::start(name, args, config) {
        Ok(rt) => rt,
        Err(e) => {
            // A detached daemon has sent its error to the starter, which prints it.
            if e.downcast_ref::<SentToStarter>().is_none() {
                eprintln!("{name}: {e:#}");
            }
            return ExitCode::FAILURE;
        }
    };
    let result = body(&mut runtime);
    match &result {
        Err(e) => {
            log::error!("{e:#}");
            // A main loop that failed before it was ready: the starter says why and exits 1.
            runtime.settle_start(Err(format!("{name}: {e:#}\n")));
        }
        Ok(()) => runtime.settle_start(Ok(())),
    }
    runtime.shutdown();
    if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Marks a start-up error that a detached daemon already sent to the command that started it.
#[derive(Debug)]
struct SentToStarter;

impl std::fmt::Display for SentToStarter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("start-up failed (reported to the starter)")
    }
}

/// A started daemon, as its main loop sees it.
pub struct Runtime<T: DaemonConfig> {
    name: &'static str,
    args: CommonArgs,
    config: Config<T>,
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
    /// The config and start-only files the daemon started with (see [`Started`]).
    started: Started<T>,
    /// The starter waiting for `ready` (with `--daemon`, until the main loop is ready).
    readiness: Option<Readiness>,
}

fn settings(name: &str, common: &CommonConfig) -> LogSettings {
    LogSettings {
        progname: common.progname.clone().unwrap_or_else(|| name.to_string()),
        logfile: common.logfile.clone(),
        logconfig: common.logconfig.clone(),
        debuglevel: common.debuglevel,
    }
}

impl<T: DaemonConfig> Runtime<T> {
    /// Starts the daemon as `args` and `config` say. With `--daemon` this returns in the
    /// detached process; the starter exits 0 once the main loop is ready, or 1 with its error.
    pub fn start(
        name: &'static str,
        args: CommonArgs,
        config: Config<T>,
    ) -> anyhow::Result<Runtime<T>> {
        if args.daemon && config.common.logfile.is_none() && config.common.logconfig.is_none() {
            return Err(anyhow!(
                "--daemon needs `logfile` (or `logconfig`): standard error goes to /dev/null"
            ));
        }
        checks::preflight(&config)?;
        let readiness = if args.daemon {
            privileges::daemonize(&config.common.rootdir)?
        } else {
            std::env::set_current_dir(&config.common.rootdir)
                .with_context(|| format!("rootdir {}", config.common.rootdir.display()))?;
            Readiness::foreground()
        };
        let daemonized = args.daemon;
        match Self::start_here(name, args, config) {
            Ok(mut rt) => {
                if daemonized {
                    if let Err(e) = privileges::detach_stdio() {
                        log::warn!("{e}");
                    }
                }
                rt.readiness = Some(readiness);
                Ok(rt)
            }
            Err(e) if daemonized => {
                readiness.fail(&format!("{name}: {e:#}\n"));
                Err(e.context(SentToStarter))
            }
            Err(e) => Err(e),
        }
    }

    /// Everything after detaching. Relative paths are used as they are: the working
    /// directory is `rootdir`, before a chroot and (as `/`) after it.
    fn start_here(
        name: &'static str,
        args: CommonArgs,
        config: Config<T>,
    ) -> anyhow::Result<Runtime<T>> {
        let common = &config.common;
        let owner = privileges::owner(common)?;
        let pidfile = common
            .pidfile
            .as_deref()
            .map(|p| Pidfile::acquire(p, &owner))
            .transpose()?;
        let logging = Logging::init_owned(settings(name, common), owner.clone())?;
        let access = load_access(common, Path::to_path_buf)?;
        let listener = common
            .status_addr()
            .map_err(|e| anyhow!(e))?
            .map(StatusServer::bind)
            .transpose()
            .map_err(|e| anyhow!(e))?;
        let identity = privileges::drop_privileges(common)?;

        let (signals_tx, signals_rx) = channel();
        let stopper = Stopper {
            stop: Arc::new(AtomicBool::new(false)),
            timeout: Arc::new(AtomicU64::new(common.stop_timeout)),
            pidfile: pidfile.as_ref().map(|p| p.path().to_path_buf()),
        };
        let on_stop = stopper.clone();
        let (signal_handle, _thread) = signals::listen(signals_tx.clone(), move |first| {
            if first {
                on_stop.begin();
            } else {
                log::warn!("second stop signal: exiting at once");
                exit_now(on_stop.pidfile.as_deref());
            }
        })?;
        let stop = Arc::clone(&stopper.stop);
        #[cfg(feature = "database")]
        let database = common
            .database
            .as_deref()
            .map(|url| Database::new(url, common.db_pool_size, Arc::clone(&stop)))
            .transpose()?;

        let figures = Arc::new(Figures::default());
        let recent = logging.recent();
        let sources: Vec<Arc<dyn StatusSource>> = vec![figures.clone()];
        // The database's card (when there is one) comes first, then the log's.
        #[cfg(feature = "database")]
        let db_card = database
            .as_ref()
            .map(|db| db.health() as Arc<dyn StatusSource>);
        #[cfg(not(feature = "database"))]
        let db_card: Option<Arc<dyn StatusSource>> = None;
        let log_card: Arc<dyn StatusSource> =
            Arc::new(crate::logging::LogFigures(Arc::clone(&recent)));
        let builtin: Vec<Arc<dyn StatusSource>> = db_card.into_iter().chain([log_card]).collect();
        let shared = Arc::new(StatusShared {
            daemon: name.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            config_file: Mutex::new(config.file.display().to_string()),
            started: Instant::now(),
            started_at: chrono::Utc::now()
                .format("%Y-%m-%d %H:%M:%S UTC")
                .to_string(),
            sources: Mutex::new(sources),
            builtin,
            history: Mutex::new(History::new(common.status_sample)),
            recent,
            access: Mutex::new(access),
            signals: Mutex::new(signals_tx.clone()),
        });
        let status = listener
            .map(|l| StatusServer::start(l, Arc::clone(&shared)))
            .transpose()?;
        log::info!(
            "{name} {} started: pid {}, config {}, uid {} gid {}{}{}",
            env!("CARGO_PKG_VERSION"),
            std::process::id(),
            config.file.display(),
            identity.uid,
            identity.gid,
            if identity.chrooted { ", chrooted" } else { "" },
            status
                .as_ref()
                .map(|s| format!(", status on http://{}/", s.addr()))
                .unwrap_or_default(),
        );
        Ok(Runtime {
            name,
            args,
            started: Started::new(&config, identity.chrooted),
            readiness: None,
            config,
            logging,
            pidfile,
            status,
            shared,
            figures,
            signals_rx,
            signals_tx,
            signal_handle,
            stop,
            stopper,
            #[cfg(feature = "database")]
            database,
            identity,
        })
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn config(&self) -> &Config<T> {
        &self.config
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

    /// Re-reads the config file. Everything that can fail is checked before anything changes.
    fn reload(&mut self) -> anyhow::Result<()> {
        let new = Config::<T>::load(&self.config.file, std::env::var("DATABASE_URL").ok())?;
        let access = load_access(&new.common, Path::to_path_buf)?;
        let restart_only = self.started.restart_only(&new);
        let old = &self.config.common;
        // Keys that cannot change live keep their running values.
        let common = CommonConfig {
            progname: new.common.progname.clone(),
            logfile: new.common.logfile.clone(),
            logconfig: new.common.logconfig.clone(),
            debuglevel: new.common.debuglevel,
            allowdb: new.common.allowdb.clone(),
            pwfile: new.common.pwfile.clone(),
            stop_timeout: new.common.stop_timeout,
            ..old.clone()
        };
        self.logging.reconfigure(settings(self.name, &common))?;
        if let Ok(mut a) = self.shared.access.lock() {
            *a = access;
        }
        self.stopper
            .timeout
            .store(common.stop_timeout, Ordering::Relaxed);
        self.config = Config {
            file: new.file,
            common,
            daemon: new.daemon,
        };
        if restart_only.is_empty() {
            log::info!("config reloaded from {}", self.config.file.display());
        } else {
            log::warn!(
                "config reloaded from {}; changed keys that take effect only at restart (running values kept): {}",
                self.config.file.display(),
                restart_only.join(", ")
            );
        }
        Ok(())
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

/// What a stop signal sets in motion, from the signal thread: the stop flag every worker
/// polls, and a watchdog that ends the process if the graceful stop takes too long.
#[derive(Clone)]
struct Stopper {
    stop: Arc<AtomicBool>,
    timeout: Arc<AtomicU64>,
    pidfile: Option<PathBuf>,
}

impl Stopper {
    fn begin(&self) {
        if self.stop.swap(true, Ordering::SeqCst) {
            return;
        }
        let timeout = Duration::from_secs(self.timeout.load(Ordering::Relaxed));
        log::info!("stopping (at most {} s)", timeout.as_secs());
        let pidfile = self.pidfile.clone();
        let _ = std::thread::Builder::new()
            .name("stop-watchdog".into())
            .spawn(move || {
                std::thread::sleep(timeout);
                log::error!(
                    "did not stop within stop_timeout ({} s): exiting now",
                    timeout.as_secs()
                );
                exit_now(pidfile.as_deref());
            });
    }
}

/// Exit without the main loop's cooperation (second stop signal, stop watchdog).
fn exit_now(pidfile: Option<&Path>) -> ! {
    if let Some(p) = pidfile {
        pidfile::remove_if_ours(p);
    }
    log::logger().flush();
    std::process::exit(1);
}
