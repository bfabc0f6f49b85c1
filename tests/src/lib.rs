//! The helpers every focuser crate's tests use, in one place:
//!
//! - [`wait`]: waiting for something to hold, with a deadline ([`wait_for`], [`poll`]);
//! - [`net`]: free ports, plain HTTP requests, a status endpoint's pages ([`get`]) and
//!   `/metrics` series ([`metric`]);
//! - [`process`]: running a binary to its end within a deadline, `--check-config`, whether a
//!   process is alive, a daemon a failed test left running;
//! - [`tmpfs`]: a small file system of a test's own, to fill it up;
//! - [`browser`]: pages through headless Chromium (screenshots, the text after load);
//! - [`web`]: a programmable HTTP server for fetcher tests, under many host names, and
//!   [`proxy`] beside it, a forward proxy that counts what goes through it;
//! - [`status_page`]: a rendered status page compared with `/status.json`;
//! - [`repo_root`]: the repository's root directory, for the shipped `conf/` and `scripts/`.
//!
//! With the `database` feature (crates whose tests need a database turn it on):
//! [`TestDb`], a fresh migrated database per test ([`database`]), on one server or on the
//! Galera cluster ([`cluster`]), and [`pipeline`], which
//! sets up and drives the whole pipeline (`focuser-run`, the end-to-end test). Without it,
//! this crate links neither Diesel nor the MySQL client.

pub mod browser;
#[cfg(feature = "database")]
pub mod cluster;
#[cfg(feature = "database")]
pub mod database;
pub mod net;
#[cfg(feature = "database")]
pub mod pipeline;
pub mod process;
pub mod proxy;
pub mod status_page;
pub mod tmpfs;
pub mod wait;
pub mod web;

use std::path::{Path, PathBuf};

#[cfg(feature = "database")]
pub use cluster::Cluster;
#[cfg(feature = "database")]
pub use database::{admin_url, url_with_db, TestDb, UrlParts};
pub use net::{connect_within, free_port, get, http, http_on, metric, metric_with};
pub use process::{alive, check_config, kill_left, output_with_input, output_within, wait_exit};
pub use wait::{poll, wait_for};

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}
