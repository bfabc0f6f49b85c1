//! The yacobot fetcher (docs/design.md#yacobot-fetcher): polite, concurrent downloads over
//! libcurl's multi interface.
//!
//! The caller [`Fetcher::submit`]s [`Request`]s while [`Fetcher::pending`] is below
//! [`Fetcher::capacity`] and calls [`Fetcher::perform`] in a loop; each call drives the transfers
//! for at most the given time and returns the requests that finished, each with one [`Outcome`].
//!
//! It does no I/O of its own beyond HTTP: a caller that keeps a record per host takes
//! [`HostReport`]s ([`Fetcher::report_hosts`], [`Fetcher::take_host_reports`]) and gives robots.txt
//! back after a restart ([`Fetcher::seed_robots`]).
//!
//! Politeness, robots.txt, retries and limits follow the `Fetch.*` keys of [`FetchConfig`];
//! docs/operations.md states the rules.

mod config;
mod fetcher;
mod guard;
mod hosts;
mod outcome;
mod report;
mod robots;
mod stats;
mod transfer;

pub use config::FetchConfig;
pub use fetcher::Fetcher;
pub use guard::{non_public, AllowedPrivate};
pub use outcome::{Completed, Document, FailKind, Outcome, Request};
pub use report::{host_name, host_name_of, DelaySource, HostReport, RobotsReport};
pub use robots::RobotsSeed;
pub use stats::FetchStats;

/// Errors of the fetcher itself (a request's own failure is an [`Outcome::Failed`]).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("fetch config: {0}")]
    Config(String),
    #[error("libcurl: {0}")]
    Curl(#[from] curl::Error),
    #[error("libcurl multi: {0}")]
    Multi(#[from] curl::MultiError),
}
