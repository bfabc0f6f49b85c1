//! Start-up: from the config file to a running daemon whose main loop has the [`Runtime`].

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, Context};

use super::stopper::{exit_now, Stopper};
use super::{Runtime, Started};
use crate::checks::{self, load_access};
use crate::cli::CommonArgs;
use crate::config::{CommonConfig, Config, DaemonConfig, RunningConfig};
#[cfg(feature = "database")]
use crate::db::Database;
use crate::logging::{LogSettings, Logging};
use crate::pidfile::Pidfile;
use crate::privileges::{self, Readiness};
use crate::signals::{self, Signal};
use crate::status::server::Access;
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
            runtime
                .notifier
                .report(&crate::crash::Report::fatal(&format!("{e:#}")));
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

pub(super) fn settings(name: &str, common: &CommonConfig) -> LogSettings {
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
        crate::crash::set_core_limit(common)?;
        let identity = privileges::drop_privileges(common)?;
        let notifier = crate::crash::install(name, common)?;

        let (signals_tx, signals_rx) = channel();
        let stopper = Stopper {
            stop: Arc::new(AtomicBool::new(false)),
            timeout: Arc::new(AtomicU64::new(common.stop_timeout)),
            pidfile: pidfile.as_ref().map(|p| p.path().to_path_buf()),
        };
        let signal_handle = listen_for_signals(&stopper, signals_tx.clone())?;
        let stop = Arc::clone(&stopper.stop);
        #[cfg(feature = "database")]
        let database = common
            .database
            .as_deref()
            .map(|url| Database::new(url, common.db_pool_size, Arc::clone(&stop)))
            .transpose()?;

        let figures = Arc::new(Figures::default());
        // The runtime's own cards: the database's (when there is one), then the log's.
        #[cfg(feature = "database")]
        let db_health = database
            .as_ref()
            .map(|db| db.health() as Arc<dyn StatusSource>);
        #[cfg(not(feature = "database"))]
        let db_health: Option<Arc<dyn StatusSource>> = None;
        let log_figures: Arc<dyn StatusSource> =
            Arc::new(crate::status::LogFigures(logging.recent()));
        let builtin: Vec<Arc<dyn StatusSource>> =
            db_health.into_iter().chain([log_figures]).collect();
        let shared = status_shared(
            name,
            &config,
            (&figures, builtin),
            &logging,
            access,
            signals_tx.clone(),
        );
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
            running: RunningConfig::new(config.clone()),
            config: Arc::new(config),
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
            notifier,
        })
    }
}

/// The signal thread: a first stop signal sets the stop in motion, a second ends the process.
fn listen_for_signals(
    stopper: &Stopper,
    signals: Sender<Signal>,
) -> anyhow::Result<signal_hook::iterator::Handle> {
    let on_stop = stopper.clone();
    let (handle, _thread) = signals::listen(signals, move |first| {
        if first {
            on_stop.begin();
        } else {
            log::warn!("second stop signal: exiting at once");
            exit_now(on_stop.pidfile.as_deref());
        }
    })?;
    Ok(handle)
}

/// What the status endpoint shows and where its POSTs go: the daemon's figures (`sources`),
/// the runtime's own (`builtin`), the running config.
fn status_shared<T: DaemonConfig>(
    name: &str,
    config: &Config<T>,
    (figures, builtin): (&Arc<Figures>, Vec<Arc<dyn StatusSource>>),
    logging: &Logging,
    access: Access,
    signals: Sender<Signal>,
) -> Arc<StatusShared> {
    let sources: Vec<Arc<dyn StatusSource>> = vec![figures.clone()];
    Arc::new(StatusShared {
        daemon: name.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        config_file: Mutex::new(config.file.display().to_string()),
        config: Mutex::new(config.keys()),
        started: Instant::now(),
        started_at: crate::clock::utc_stamp(),
        sources: Mutex::new(sources),
        builtin,
        history: Mutex::new(History::new(config.common.status_sample)),
        recent: logging.recent(),
        access: Mutex::new(access),
        signals: Mutex::new(signals),
    })
}
