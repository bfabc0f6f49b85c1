//! What a yacobot worker is: a [`Worker`] opens, takes [`Step`]s until the daemon stops (or,
//! with `--once`, until it is done), hears the signals meant for it, and closes; the
//! [`crate::runner`] drives every one of them the same way. [`Ctx`] is what they all share.
//!
//! Adding a worker: a module with a type that implements [`Worker`] (its figures a
//! [`StatusSource`] of its own), a config section with its `Enable`, and one line in
//! [`crate::daemon`].

use std::sync::{Arc, RwLock};
use std::time::Duration;

use focuser_daemon::db::Database;
use focuser_daemon::status::StatusSource;
use focuser_daemon::stop::Stop;
use focuser_daemon::{Config, Signal};

use crate::config::YacobotConfig;
use crate::exclude::Exclusion;

/// What every worker thread shares: the database, the stop, the running config and the
/// exclusion rules in force.
pub struct Ctx {
    pub db: Database,
    pub stop: Stop,
    /// Empty until [`Exclusion::load`]; read again at each reload.
    pub exclusion: Arc<Exclusion>,
    /// Replaced by a reload; workers take a copy at the start of each unit of work.
    config: RwLock<Config<YacobotConfig>>,
}

impl Ctx {
    pub fn new(db: Database, config: Config<YacobotConfig>, stop: Stop) -> Ctx {
        Ctx {
            db,
            stop,
            exclusion: Arc::default(),
            config: RwLock::new(config),
        }
    }

    /// The running config. (Only the main loop writes it, with a plain assignment: a poisoned
    /// lock still holds a whole config.)
    pub fn config(&self) -> Config<YacobotConfig> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A reload: the workers take `config` from their next unit of work on.
    pub fn reload(&self, config: Config<YacobotConfig>) {
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config;
    }

    pub fn stopping(&self) -> bool {
        self.stop.is_set()
    }
}

/// What a step came to.
#[derive(Debug)]
pub enum Step {
    /// More to do: the next step at once.
    Busy,
    /// Nothing to do before this long (a signal the worker takes ends the wait).
    Idle(Duration),
    /// `--once`: the worker's work is done.
    Done,
    /// This step failed, the next may not (a query the database refused): the runner logs it
    /// as an episode and tries again after a back-off. With `--once` it is the run's error.
    Failed(anyhow::Error),
}

/// A yacobot worker, driven on a thread of its own by [`crate::runner`]. An `Err` from
/// [`Worker::open`] or [`Worker::step`] means it cannot go on (the archive's disk is full, a
/// store cannot be written): the daemon stops with that error.
pub trait Worker: Sized + 'static {
    /// Its name: its thread's, and in the log.
    const NAME: &'static str;
    /// Its figures on the status page: made and registered by the runner before the worker
    /// opens (so the page lists them in a fixed order), handed to [`Worker::open`].
    type Figures: StatusSource + Default + 'static;

    /// Whether the config switches it on.
    fn enabled(cfg: &YacobotConfig) -> bool;

    /// Opened on the thread it runs on (a libcurl handle stays on the thread that made it).
    fn open(ctx: &Arc<Ctx>, figures: Arc<Self::Figures>) -> anyhow::Result<Self>;

    /// One unit of work. `once`: `--once`, where the worker says [`Step::Done`] when its
    /// work is done.
    fn step(&mut self, ctx: &Ctx, once: bool) -> anyhow::Result<Step>;

    /// SIGUSR1 (`Signal::Rotate`) or SIGUSR2 (`Signal::Reload`, after the new config is in
    /// [`Ctx`]), between two steps. Returns whether to step at once rather than finish a wait.
    fn on_signal(&mut self, _signal: Signal) -> bool {
        false
    }

    /// After the last step, whatever it came to.
    fn close(self, ctx: &Ctx);
}
