//! What every worker thread shares: the database, the running config, the stop flag and the
//! figures; and the small helpers they all use.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use chrono::{NaiveDateTime, Timelike, Utc};
use diesel::mysql::MysqlConnection;
use diesel::QueryResult;
use focuser_daemon::db::{Database, DbError};
use focuser_daemon::Config;

use crate::config::YacobotConfig;
use crate::resources::ResourceStats;
use crate::status::Stats;

pub struct Ctx {
    pub db: Database,
    pub stop: Arc<AtomicBool>,
    /// Replaced by a reload; workers take a copy at the start of each unit of work.
    pub config: RwLock<Config<YacobotConfig>>,
    pub stats: Arc<Stats>,
    /// The resources worker's figures (a status source of their own).
    pub resources: Arc<ResourceStats>,
    /// Set by SIGUSR1: the crawl worker seals its segment.
    pub rotate: AtomicBool,
    /// Set by SIGUSR1 too: the resources worker seals its store's segment.
    pub rotate_resources: AtomicBool,
}

impl Ctx {
    pub fn new(db: Database, config: Config<YacobotConfig>, stop: Arc<AtomicBool>) -> Ctx {
        Ctx {
            db,
            stop,
            config: RwLock::new(config),
            stats: Arc::new(Stats::default()),
            resources: Arc::new(ResourceStats::default()),
            rotate: AtomicBool::new(false),
            rotate_resources: AtomicBool::new(false),
        }
    }

    pub fn config(&self) -> Option<Config<YacobotConfig>> {
        self.config.read().ok().map(|c| c.clone())
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Sleeps `d`, or less if a stop is asked for (then `false`) or `wake` is set.
    pub fn pause(&self, d: Duration, wake: &AtomicBool) -> bool {
        let until = Instant::now() + d;
        while Instant::now() < until {
            if self.stopping() {
                return false;
            }
            if wake.swap(false, Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(
                Duration::from_millis(50).min(until.saturating_duration_since(Instant::now())),
            );
        }
        !self.stopping()
    }

    /// [`Database::run`], with a transaction that lost a deadlock or a lock wait tried again
    /// (a few times, after a short pause). `f` must be a transaction or safe to repeat.
    pub fn db_run<R>(
        &self,
        what: &str,
        mut f: impl FnMut(&mut MysqlConnection) -> QueryResult<R>,
    ) -> Result<R, DbError> {
        let mut tries = 0;
        loop {
            match self.db.run(what, &mut f) {
                Err(DbError::Query { error, .. }) if tries < 5 && is_lock_conflict(&error) => {
                    tries += 1;
                    log::debug!("{what}: {error}; trying again ({tries})");
                    std::thread::sleep(Duration::from_millis(50 * tries));
                }
                other => return other,
            }
        }
    }
}

/// A transaction the server chose to abort because of another one: trying again is right.
fn is_lock_conflict(e: &diesel::result::Error) -> bool {
    match e {
        diesel::result::Error::DatabaseError(_, info) => {
            let m = info.message();
            m.contains("Deadlock found") || m.contains("Lock wait timeout")
        }
        _ => false,
    }
}

/// The database clock: UTC, whole seconds (what a `DATETIME` holds).
pub fn now() -> NaiveDateTime {
    let t = Utc::now().naive_utc();
    t.with_nanosecond(0).unwrap_or(t)
}
