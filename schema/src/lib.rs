//! `focuser-schema`: the database every focuser daemon shares.
//!
//! * [`schema`]: the Diesel table definitions, generated from the migrations by
//!   `diesel print-schema` (never edited by hand; CI checks they match).
//! * [`models`]: one module per table, in the crates.io style: `Foo` (a row), `NewFoo`
//!   (an insert), `FooChanges` (an update, where a daemon needs one), and
//!   `impl Foo { fn …(conn) }` for the queries. Model functions take `&mut MysqlConnection` so
//!   callers can group them in one transaction. Columns that hold a code (`fetch_state`,
//!   `fetch_status`, `update_type`, …) are types, mapped to their columns in `models/codes.rs`.
//! * [`db`]: the connection pool and the embedded migrations.
//!
//! The files the daemons hand each other (reflogs, queue files, segments, URL identity) are
//! `focuser-formats`, which needs no database.
//!
//! Times in the database are UTC `DATETIME`s; every connection runs with `time_zone = '+00:00'`.

pub mod db;
pub mod failover;
pub mod models;
#[rustfmt::skip]
pub mod schema;

pub use db::{migrate, pool, DbError, Pool, PooledConn, MIGRATIONS};
