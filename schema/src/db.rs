//! The connection pool and the migrations embedded in every binary.

use std::sync::Arc;
use std::time::Duration;

use diesel::migration::MigrationSource;
use diesel::mysql::MysqlConnection;
use diesel::r2d2::PooledConnection;
use diesel::{Connection, RunQueryDsl};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

use crate::failover::{split_addresses, AddressInUse, Failover, FailoverError, OnSwitch};

/// The migrations of `migrations/`, compiled in.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations");

pub type Pool = r2d2::Pool<Failover>;
pub type PooledConn = PooledConnection<Failover>;

/// Errors carry their cause in their message (and do not chain it again as a `source`, so
/// `{:#}` prints it once).
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot connect to the database: {0}")]
    Connect(diesel::ConnectionError),
    #[error("cannot build the connection pool: {0}")]
    Pool(r2d2::Error),
    #[error("database query failed: {0}")]
    Query(diesel::result::Error),
    #[error("migration failed: {0}")]
    Migration(String),
    #[error("cannot connect to the database: {0}")]
    Failover(FailoverError),
}

impl From<diesel::ConnectionError> for DbError {
    fn from(e: diesel::ConnectionError) -> Self {
        DbError::Connect(e)
    }
}

impl From<r2d2::Error> for DbError {
    fn from(e: r2d2::Error) -> Self {
        DbError::Pool(e)
    }
}

impl From<diesel::result::Error> for DbError {
    fn from(e: diesel::result::Error) -> Self {
        DbError::Query(e)
    }
}

/// How long the server keeps a connection it thinks idle. It is also the deadline of a
/// statement whose answer never comes: a Galera node that aborts a statement for another
/// node's write has been seen to leave the client waiting while it thinks the connection
/// idle (docs/operations.md "The shared database on a Galera cluster"); closing it turns the
/// wait into a lost connection, which the retry policy handles. Long enough for any pause a
/// daemon makes between two statements of one transaction; idle pooled connections it
/// closes are replaced at check-out.
pub const SESSION_IDLE_DEADLINE_SECS: u32 = 600;

/// Session settings every focuser connection runs with: UTC times, so that `DATETIME`
/// columns, `NOW()` and `UTC_TIMESTAMP()` all mean the same thing; and a deadline for an
/// answer ([`SESSION_IDLE_DEADLINE_SECS`]).
pub(crate) fn setup_session(conn: &mut MysqlConnection) -> diesel::QueryResult<()> {
    diesel::sql_query("SET time_zone = '+00:00'").execute(conn)?;
    diesel::sql_query(format!(
        "SET SESSION wait_timeout = {SESSION_IDLE_DEADLINE_SECS}"
    ))
    .execute(conn)?;
    Ok(())
}

/// A pool of `size` connections to the database at `list` (`mysql://user:password@host:port/db`,
/// or several such URLs separated by commas: the nodes of a cluster, see [`crate::failover`]),
/// and which address it uses. `on_switch` hears of every move to another address.
/// Connections are tested on check-out, so a restarted server is noticed at once.
///
/// The pool logs nothing: a failed connection attempt reaches the caller as the error of
/// its `get` (r2d2 keeps the last one), and the daemon logs an outage once, not every
/// attempt r2d2 makes while the server is away.
pub fn pool(
    list: &str,
    size: u32,
    on_switch: Option<OnSwitch>,
) -> Result<(Pool, Arc<AddressInUse>), DbError> {
    let addresses: Vec<String> = split_addresses(list)
        .into_iter()
        .map(str::to_string)
        .collect();
    let manager = Failover::new(addresses, on_switch);
    let in_use = manager.in_use();
    let pool = r2d2::Pool::builder()
        .error_handler(Box::new(r2d2::NopErrorHandler))
        .max_size(size.max(1))
        .min_idle(Some(0))
        .test_on_check_out(true)
        .connection_timeout(Duration::from_secs(10))
        .build(manager)?;
    Ok((pool, in_use))
}

/// One connection outside any pool, with the same session settings as pooled ones.
pub fn connect(url: &str) -> Result<MysqlConnection, DbError> {
    let mut conn = MysqlConnection::establish(url)?;
    setup_session(&mut conn)?;
    Ok(conn)
}

/// One connection for a tool to the first address of `list` that answers (and, on a cluster,
/// is in the primary component), with the same session settings as pooled ones.
pub fn connect_first(list: &str) -> Result<MysqlConnection, DbError> {
    let (conn, _) =
        crate::failover::connect_first(&split_addresses(list)).map_err(DbError::Failover)?;
    Ok(conn)
}

/// Runs the pending migrations; returns the versions applied.
pub fn migrate(conn: &mut MysqlConnection) -> Result<Vec<String>, DbError> {
    let applied = conn
        .run_pending_migrations(MIGRATIONS)
        .map_err(|e| DbError::Migration(e.to_string()))?;
    Ok(applied.iter().map(|v| v.to_string()).collect())
}

/// Reverts every applied migration, newest first; returns the versions reverted.
pub fn revert_all(conn: &mut MysqlConnection) -> Result<Vec<String>, DbError> {
    let reverted = conn
        .revert_all_migrations(MIGRATIONS)
        .map_err(|e| DbError::Migration(e.to_string()))?;
    Ok(reverted.iter().map(|v| v.to_string()).collect())
}

/// Versions of the migrations compiled into this binary, oldest first.
pub fn embedded_versions() -> Result<Vec<String>, DbError> {
    let mut versions: Vec<String> =
        MigrationSource::<diesel::mysql::Mysql>::migrations(&MIGRATIONS)
            .map_err(|e| DbError::Migration(e.to_string()))?
            .iter()
            .map(|m| m.name().version().to_string())
            .collect();
    versions.sort();
    Ok(versions)
}

/// Versions recorded as applied in the database, oldest first.
pub fn applied_versions(conn: &mut MysqlConnection) -> Result<Vec<String>, DbError> {
    let mut versions: Vec<String> = conn
        .applied_migrations()
        .map_err(|e| DbError::Migration(e.to_string()))?
        .iter()
        .map(|v| v.to_string())
        .collect();
    versions.sort();
    Ok(versions)
}

/// `LAST_INSERT_ID()` of this connection: the id of the row an `AUTO_INCREMENT` insert made.
pub(crate) fn last_insert_id<T: TryFrom<u64>>(
    conn: &mut MysqlConnection,
) -> diesel::QueryResult<T> {
    let id: u64 = diesel::select(last_insert_id_fn()).get_result(conn)?;
    T::try_from(id).map_err(|_| {
        diesel::result::Error::DeserializationError(
            format!("LAST_INSERT_ID {id} out of range").into(),
        )
    })
}

/// The current time as stored in the database: UTC, whole seconds (`DATETIME` precision).
pub fn utc_now() -> chrono::NaiveDateTime {
    use chrono::Timelike;
    let now = chrono::Utc::now().naive_utc();
    now.with_nanosecond(0).unwrap_or(now)
}

diesel::define_sql_function! {
    #[sql_name = "LAST_INSERT_ID"]
    fn last_insert_id_fn() -> diesel::sql_types::Unsigned<diesel::sql_types::Bigint>;
}
