//! yacobot (SPEC §6): one node of the crawler cluster.
//!
//! Its workers, each switched on in its config and run on a thread of its own by [`daemon`]:
//! the [`loader`] (queue files → `url`, applying the query-argument rules), the
//! [`qargfilter`] import (`query_args` → `path_arg_name`) and the [`crawl`] worker (scheduler,
//! fetcher, archive, re-index bookkeeping). [`status`] holds their figures.

pub mod config;
pub mod crawl;
pub mod daemon;
pub mod loader;
pub mod qargfilter;
pub mod status;
mod worker;

pub use config::YacobotConfig;
