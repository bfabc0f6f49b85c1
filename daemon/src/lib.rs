//! `focuser-daemon`: what makes master, yacobot and reader classic Unix daemons
//! (docs/design.md#runtime).
//!
//! A daemon's `main` parses its command line (flattening [`cli::CommonArgs`]) and calls
//! [`run`], which reads the config, starts the [`Runtime`] (detach, pidfile, log, status
//! endpoint, privilege drop, signal thread) and hands it to the daemon's main loop. That loop
//! takes [`Signal`]s from [`Runtime::next_signal`] between units of work and returns on
//! [`Signal::Stop`]; `run` then shuts down cleanly.

pub mod access;
pub mod backoff;
pub mod checks;
pub mod cli;
pub mod clock;
mod commands;
pub mod config;
pub mod crash;
#[cfg(feature = "database")]
pub mod db;
pub mod episode;
pub mod logging;
pub mod pidfile;
pub mod privileges;
mod runtime;
pub mod safefile;
pub mod signals;
pub mod status;
pub mod stop;

pub use cli::{CommonArgs, CommonCommand};
pub use commands::run_common_command;
pub use config::{CommonConfig, Config, ConfigError, DaemonConfig, NoKeys};
pub use runtime::{run, Runtime};
pub use signals::Signal;
