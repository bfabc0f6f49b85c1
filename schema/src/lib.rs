//! `focuser-schema`: everything two focuser daemons must agree on.
//!
//! * [`schema`]: the Diesel table definitions, generated from the migrations by
//!   `diesel print-schema` (never edited by hand; CI checks they match).
//! * [`models`]: one module per table, in the crates.io style: `Foo` (a row), `NewFoo`
//!   (an insert), `FooChanges` (an update), and `impl Foo { fn …(conn) }` for the queries.
//!   Model functions take `&mut MysqlConnection` so callers can group them in one transaction.
//! * [`db`]: the connection pool and the embedded migrations.
//! * [`urls`]: URL normalisation, the 64-bit URL id, the routing domain ([`md5_lanes`]: the
//!   ids of many URLs at once).
//! * [`formats`]: reflog lines and queue files; [`segment`]: item/index segments and position
//!   files; [`fsutil`]: publishing files atomically.
//!
//! Times in the database are UTC `DATETIME`s; every connection runs with `time_zone = '+00:00'`.

pub mod db;
pub mod formats;
pub mod fsutil;
pub mod md5_lanes;
pub mod models;
#[rustfmt::skip]
pub mod schema;
pub mod segment;
pub mod urls;

pub use db::{migrate, pool, DbError, Pool, PooledConn, MIGRATIONS};
