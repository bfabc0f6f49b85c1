//! The daemon's database: a pool from `database`, and a retry wrapper that carries a daemon
//! through a lost or restarting server with capped exponential backoff, saying so in the log
//! (one [`Episode`]: a line when the outage starts, a summary every minute while it lasts, a
//! line when it ends, whatever the number of tries) and on the status page.
//!
//! `database` may list several addresses (a Galera cluster's nodes): the pool uses one and
//! moves to the next when it stops answering or leaves the primary component
//! ([`focuser_schema::failover`]); each move is one log line and counts on the status page.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::mysql::MysqlConnection;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use focuser_schema::failover::{AddressInUse, Switch, NOT_PRIMARY};
use focuser_schema::Pool;

use crate::backoff::Backoff;
use crate::config::{mask_password, CommonConfig};
use crate::episode::Episode;
use crate::status::{Card, Figure, State, StatusSource};
use crate::stop::Stop;

/// First pause after a failure; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long one attempt waits for a connection from the pool.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{what}: {error}")]
    Query { what: String, error: DieselError },
    #[error("{what}: stopped while waiting for the database")]
    Stopped { what: String },
    #[error("cannot set up the database pool: {0}")]
    Pool(String),
}

/// Whether the server is reachable, as the status page shows it.
#[derive(Debug)]
pub struct DbHealth {
    up: AtomicBool,
    outages: AtomicU64,
    down_since: Mutex<Option<Instant>>,
    last_error: Mutex<String>,
    /// The outage in the log (every thread's failed tries count in the same one).
    outage: Mutex<Episode>,
    /// The addresses of `database`, passwords masked, and which one the pool uses.
    addresses: Vec<String>,
    in_use: Arc<AddressInUse>,
}

impl DbHealth {
    fn new(addresses: Vec<String>, in_use: Arc<AddressInUse>) -> DbHealth {
        DbHealth {
            up: AtomicBool::new(false),
            outages: AtomicU64::new(0),
            down_since: Mutex::new(None),
            last_error: Mutex::new(String::new()),
            outage: Mutex::new(Episode::new("database")),
            addresses,
            in_use,
        }
    }

    /// The address in use (masked) and its index in the list.
    pub fn address(&self) -> (usize, &str) {
        let i = self.in_use.index();
        (i, self.addresses.get(i).map_or("", String::as_str))
    }

    /// Times the pool moved to another address.
    pub fn failovers(&self) -> u64 {
        self.in_use.switches()
    }

    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    pub fn outages(&self) -> u64 {
        self.outages.load(Ordering::Relaxed)
    }

    pub fn last_error(&self) -> String {
        self.last_error
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default()
    }

    fn went_down(&self, what: &str, error: &str) {
        if let Ok(mut e) = self.last_error.lock() {
            *e = error.to_string();
        }
        if self.up.swap(false, Ordering::Relaxed) || self.outages() == 0 {
            self.outages.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut since) = self.down_since.lock() {
                since.get_or_insert_with(Instant::now);
            }
        }
        if let Ok(mut outage) = self.outage.lock() {
            outage.occurred(
                log::Level::Error,
                &format_args!("unreachable ({what}): {error}; retrying with backoff"),
            );
        }
    }

    fn came_up(&self) {
        if !self.up.swap(true, Ordering::Relaxed) {
            if let Ok(mut since) = self.down_since.lock() {
                since.take();
            }
            if let Ok(mut outage) = self.outage.lock() {
                outage.resolved(&"reachable again");
            }
        }
    }
}

impl StatusSource for DbHealth {
    fn figures(&self) -> Vec<Figure> {
        let down_for = self
            .down_since
            .lock()
            .ok()
            .and_then(|s| s.map(|t| t.elapsed().as_secs_f64()))
            .unwrap_or(0.0);
        vec![
            Figure::gauge(
                "db_up",
                "1 while the database answers, 0 during an outage",
                if self.is_up() { 1.0 } else { 0.0 },
            ),
            Figure::counter(
                "db_outages_total",
                "times the database became unreachable",
                self.outages() as f64,
            ),
            Figure::gauge(
                "db_down_seconds",
                "length of the current outage in seconds",
                down_for,
            ),
            Figure::counter(
                "db_failovers_total",
                "times the pool moved to another address of `database`",
                self.failovers() as f64,
            ),
            Figure::gauge(
                "db_address_index",
                "the address of `database` in use, counted from 1",
                (self.address().0 + 1) as f64,
            ),
        ]
    }

    fn cards(&self) -> Vec<Card> {
        let down_for = self
            .down_since
            .lock()
            .ok()
            .and_then(|s| s.map(|t| t.elapsed().as_secs()));
        let mut notes = Vec::new();
        let card = if self.is_up() {
            Card::text("database", "up")
        } else if let Some(secs) = down_for {
            notes.push(self.last_error());
            Card::text("database", &format!("down for {secs} s")).state(State::Error)
        } else {
            Card::text("database", "not used yet")
        };
        if self.addresses.len() > 1 {
            let (i, address) = self.address();
            let n = self.addresses.len();
            notes.push(format!("address {} of {n} in use: {address}", i + 1));
            let switches = self.failovers();
            if switches > 0 {
                notes.push(format!(
                    "{switches} switch{} since start",
                    plural(switches, "es")
                ));
            }
        }
        let outages = self.outages();
        if outages > 0 && self.is_up() {
            notes.push(format!(
                "{outages} outage{} since start",
                plural(outages, "s")
            ));
        }
        match notes.is_empty() {
            true => vec![card],
            false => vec![card.help(&notes.join("; "))],
        }
    }
}

fn plural(n: u64, ending: &str) -> &str {
    if n == 1 {
        ""
    } else {
        ending
    }
}

/// The log line of a move to another address.
fn tell_switch(addresses: &[String], s: &Switch) {
    let at = |i: usize| addresses.get(i).map_or("?", String::as_str);
    log::warn!(
        "database: moved from address {} ({}) to address {} ({}): {}",
        s.from + 1,
        at(s.from),
        s.to + 1,
        at(s.to),
        s.why
    );
}

/// A pool plus the retry policy.
#[derive(Clone)]
pub struct Database {
    pool: Pool,
    health: Arc<DbHealth>,
    stop: Stop,
}

/// Errors that mean "the server is not there", as opposed to a bad query.
fn is_connection_loss(e: &DieselError) -> bool {
    match e {
        // The server went at COMMIT, so the ROLLBACK after it failed too: what counts is why
        // the commit failed.
        DieselError::RollbackErrorOnCommit { commit_error, .. } => is_connection_loss(commit_error),
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            _,
        ) => true,
        DieselError::DatabaseError(_, info) => {
            let m = info.message();
            [
                "gone away",
                "Lost connection",
                "Can't connect",
                "shutdown in progress",
                "Connection refused",
                "Server shutdown",
                // A cluster node that left the primary component (error 1047): the pool
                // moves to another node.
                "WSREP has not yet prepared node",
                NOT_PRIMARY,
            ]
            .iter()
            .any(|s| m.contains(s))
        }
        DieselError::BrokenTransactionManager => true,
        _ => false,
    }
}

impl Database {
    /// A pool that connects lazily: the daemon starts even while the server is down.
    /// `list` is one URL or several separated by commas (the nodes of a cluster).
    pub fn new(list: &str, size: u32, stop: Arc<AtomicBool>) -> Result<Database, DbError> {
        let masked: Vec<String> = list.split(',').map(|u| mask_password(u.trim())).collect();
        let told = masked.clone();
        let (pool, in_use) = focuser_schema::pool(
            list,
            size,
            Some(Box::new(move |s: &Switch| tell_switch(&told, s))),
        )
        .map_err(|e| DbError::Pool(e.to_string()))?;
        Ok(Database {
            pool,
            health: Arc::new(DbHealth::new(masked, in_use)),
            stop: Stop::from_flag(stop),
        })
    }

    pub fn health(&self) -> Arc<DbHealth> {
        Arc::clone(&self.health)
    }

    /// Runs `f` on a pooled connection: the one retry policy of the daemons. While the
    /// server is unreachable it waits and tries again (250 ms doubling to 30 s), until it
    /// answers or the daemon stops; a transaction the server aborted because of another one
    /// (a deadlock, a lock wait timeout) is tried again a few times after a short pause; any
    /// other error is returned at once. `f` may run more than once, so it must be a
    /// transaction or otherwise safe to repeat.
    pub fn run<R>(
        &self,
        what: &str,
        mut f: impl FnMut(&mut MysqlConnection) -> diesel::QueryResult<R>,
    ) -> Result<R, DbError> {
        let mut backoff = Backoff::new(FIRST_BACKOFF, MAX_BACKOFF);
        let mut conflicts = Conflicts::default();
        loop {
            let failure = match self.pool.get_timeout(CHECKOUT_TIMEOUT) {
                Ok(mut conn) => match f(&mut conn) {
                    Ok(r) => {
                        self.health.came_up();
                        return Ok(r);
                    }
                    Err(e) if is_connection_loss(&e) => e.to_string(),
                    Err(error) => match conflicts.again(what, &error) {
                        Some(pause) => {
                            if !self.stop.sleep(pause) {
                                return Err(DbError::Stopped {
                                    what: what.to_string(),
                                });
                            }
                            continue;
                        }
                        None => {
                            self.health.came_up();
                            return Err(DbError::Query {
                                what: what.to_string(),
                                error,
                            });
                        }
                    },
                },
                Err(e) => e.to_string(),
            };
            self.health.went_down(what, &failure);
            let wait = backoff.failed();
            log::debug!("database: {what}: next try in {wait:?}");
            if !self.stop.sleep(wait) {
                return Err(DbError::Stopped {
                    what: what.to_string(),
                });
            }
        }
    }

    /// The one way a daemon's main loop or an operator tool gets its database: the pool of
    /// `database` (or `DATABASE_URL`), or a clear error when there is none.
    pub fn of(common: &CommonConfig, pool_size: u32, stop: &Stop) -> anyhow::Result<Database> {
        let url = common
            .database
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!(NO_DATABASE))?;
        Ok(Database::new(url, pool_size, stop.flag())?)
    }
}

/// What every daemon and tool says when it needs a database and has none.
pub const NO_DATABASE: &str =
    "no database configured (the `database` key, or DATABASE_URL in the environment)";

/// One plain connection for an operator tool that runs a few statements and exits (no pool,
/// no retry: a tool reports a failure to its operator at once), to the first address of
/// `database` that answers.
pub fn connect(common: &CommonConfig) -> anyhow::Result<MysqlConnection> {
    use anyhow::Context;
    let list = common
        .database
        .as_deref()
        .ok_or_else(|| anyhow::anyhow!(NO_DATABASE))?;
    focuser_schema::db::connect_first(list).context("connecting to the database")
}

/// Tries of a transaction the server aborted because of another one, and the pause before
/// the first retry (the n-th waits n times as long, up to a second). On a Galera cluster two
/// daemons on two nodes that want the same rows lose to each other at commit, possibly many
/// times in a row: the tries are many, and each pause is drawn from half to one and a half
/// times its length, so that the two do not try again in step.
const LOCK_CONFLICT_TRIES: u32 = 20;
const LOCK_CONFLICT_PAUSE: Duration = Duration::from_millis(50);
const LOCK_CONFLICT_MAX_PAUSE: Duration = Duration::from_secs(1);

/// The pause before try `n` + 1 of a transaction aborted by a conflict.
fn conflict_pause(n: u32) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    // A random draw from the standard library's seeded hasher: 0..1000 per mille.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(n);
    let per_mille = (h.finish() % 1000) as u32;
    (LOCK_CONFLICT_PAUSE * n).min(LOCK_CONFLICT_MAX_PAUSE) * (500 + per_mille) / 1000
}

/// The conflicts one piece of work met so far: whether to try again, and after what pause.
#[derive(Debug, Default)]
struct Conflicts {
    tries: u32,
}

impl Conflicts {
    /// The pause before trying `what` again after `e`, or `None` when `e` is no conflict
    /// or the tries are spent.
    fn again(&mut self, what: &str, e: &DieselError) -> Option<Duration> {
        if self.tries >= LOCK_CONFLICT_TRIES || !is_lock_conflict(e) {
            return None;
        }
        self.tries += 1;
        log::debug!("{what}: {e}; trying again ({})", self.tries);
        Some(conflict_pause(self.tries))
    }
}

/// The conflict half of the retry policy, for an operator tool's plain connection (which
/// reports a lost server at once): a transaction the server aborted because of another one
/// — a deadlock, a lock wait timeout, a Galera certification failure — is tried again with
/// the daemons' tries and pauses. `f` must be a transaction or otherwise safe to repeat.
pub fn retry_conflicts<R>(
    what: &str,
    mut f: impl FnMut() -> diesel::QueryResult<R>,
) -> diesel::QueryResult<R> {
    let mut conflicts = Conflicts::default();
    loop {
        match f() {
            Err(e) => match conflicts.again(what, &e) {
                Some(pause) => std::thread::sleep(pause),
                None => return Err(e),
            },
            done => return done,
        }
    }
}

/// A transaction the server chose to abort because of another one: trying again is right.
/// A Galera certification failure (the other node's transaction committed first) is error
/// 1213 too, also at `COMMIT` and for a single autocommit statement.
fn is_lock_conflict(e: &DieselError) -> bool {
    match e {
        DieselError::RollbackErrorOnCommit { commit_error, .. } => is_lock_conflict(commit_error),
        DieselError::DatabaseError(_, info) => {
            let m = info.message();
            m.contains("Deadlock found") || m.contains("Lock wait timeout")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Info(&'static str);

    impl diesel::result::DatabaseErrorInformation for Info {
        fn message(&self) -> &str {
            self.0
        }
        fn details(&self) -> Option<&str> {
            None
        }
        fn hint(&self) -> Option<&str> {
            None
        }
        fn table_name(&self) -> Option<&str> {
            None
        }
        fn column_name(&self) -> Option<&str> {
            None
        }
        fn constraint_name(&self) -> Option<&str> {
            None
        }
        fn statement_position(&self) -> Option<i32> {
            None
        }
    }

    fn error(message: &'static str) -> DieselError {
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, Box::new(Info(message)))
    }

    #[test]
    fn a_tools_plain_connection_tries_a_conflict_again_and_nothing_else() {
        let mut calls = 0;
        let r = retry_conflicts("test", || {
            calls += 1;
            match calls {
                1 | 2 => Err(error("Deadlock found when trying to get lock")),
                _ => Ok(calls),
            }
        });
        assert_eq!(r.ok(), Some(3));
        let mut calls = 0;
        let r: diesel::QueryResult<()> = retry_conflicts("test", || {
            calls += 1;
            Err(error("Duplicate entry 'a' for key 'PRIMARY'"))
        });
        assert!(r.is_err());
        assert_eq!(calls, 1, "any other error is returned at once");
    }

    #[test]
    fn a_node_outside_the_primary_component_is_a_lost_server_and_certification_a_conflict() {
        let not_ready = error("WSREP has not yet prepared node for application use");
        assert!(is_connection_loss(&not_ready) && !is_lock_conflict(&not_ready));
        let certification =
            error("Deadlock found when trying to get lock; try restarting transaction");
        assert!(is_lock_conflict(&certification) && !is_connection_loss(&certification));
        assert!(!is_connection_loss(&error(
            "Duplicate entry 'a' for key 'PRIMARY'"
        )));
    }

    #[test]
    fn conflict_pauses_grow_are_capped_and_drawn_apart() {
        for n in 1..=LOCK_CONFLICT_TRIES {
            let base = (LOCK_CONFLICT_PAUSE * n).min(LOCK_CONFLICT_MAX_PAUSE);
            let p = conflict_pause(n);
            assert!(p >= base / 2 && p <= base * 3 / 2, "{n}: {p:?}");
        }
        let draws: std::collections::BTreeSet<Duration> =
            (0..20).map(|_| conflict_pause(4)).collect();
        assert!(
            draws.len() > 1,
            "two daemons would retry in step: {draws:?}"
        );
    }
}
