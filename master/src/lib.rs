//! master (docs/design.md#master): reflog files in, deduplicated and domain-routed queue files out,
//! one per crawler node per cycle, crash-safe.
//!
//! A cycle: [`ingest`] (analyze_dump, group_sum) → [`filter`] against [`current_log`] (join,
//! filter_url) → [`route`] through [`store`] (domains_from_db, least-loaded assignment) →
//! queue files (logsaver) → commit, all driven by [`cycle`] under the [`journal`].

pub mod admin;
mod bgwrite;
pub mod config;
pub mod current_log;
pub mod cycle;
pub mod daemon;
pub mod filter;
pub mod ingest;
pub mod intake;
mod join;
pub mod journal;
mod logsaver;
pub mod names;
mod publish;
mod queues;
pub mod route;
mod scratch;
pub mod status;
pub mod store;

pub use config::MasterConfig;
