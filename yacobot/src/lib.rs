//! yacobot (docs/design.md#yacobot): one node of the crawler cluster.
//!
//! Its workers, each switched on in its config and run on a thread of its own by [`daemon`]:
//! the [`loader`] (queue files → `url`, applying the query-argument rules), the
//! [`qargfilter`] import (`query_args` → `path_arg_name`) and the [`crawl`] worker (scheduler,
//! fetcher, archive, re-index bookkeeping). [`status`] holds their figures.

pub mod admin;
pub mod config;
pub mod crawl;
pub mod daemon;
pub mod loader;
pub mod qargfilter;
pub mod resources;
pub mod status;
mod worker;

pub use config::YacobotConfig;

/// `yacobot resource …`: loads the config, connects, runs the command; returns what to print.
pub fn resource_command(
    config_file: &std::path::Path,
    cmd: &admin::ResourceCmd,
) -> anyhow::Result<String> {
    use anyhow::Context;
    let config = focuser_daemon::Config::<YacobotConfig>::load(
        config_file,
        std::env::var("DATABASE_URL").ok(),
    )?;
    let url = config
        .common
        .database
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no database configured"))?;
    let mut conn = focuser_schema::db::connect(&url).context("connecting to the database")?;
    admin::resource(&mut conn, cmd)
}

/// Applies every queue file ready in the configured inboxes once, outside the daemon (what
/// `--once` does first; for tools and benchmarks). Returns the files handled.
pub fn load_once(config: focuser_daemon::Config<YacobotConfig>) -> anyhow::Result<usize> {
    let ctx = context(config.clone())?;
    Ok(loader::Loader::default().pass(&ctx, &config))
}

/// Crawls until no URL is due and nothing is in flight, outside the daemon (what `--once`
/// does after loading; for tools and benchmarks). Returns the crawl's figures.
pub fn crawl_once(
    config: focuser_daemon::Config<YacobotConfig>,
) -> anyhow::Result<std::sync::Arc<status::Stats>> {
    let ctx = context(config)?;
    crawl::until_idle(&ctx)?;
    Ok(std::sync::Arc::clone(&ctx.stats))
}

fn context(config: focuser_daemon::Config<YacobotConfig>) -> anyhow::Result<worker::Ctx> {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let url = config
        .common
        .database
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no database configured"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let db = focuser_daemon::db::Database::new(&url, 2, Arc::clone(&stop))?;
    Ok(worker::Ctx::new(db, config, stop))
}

/// One resources scan and every run it starts, outside the daemon (what `--once` does last;
/// for tools and benchmarks).
pub fn resources_once(config: focuser_daemon::Config<YacobotConfig>) -> anyhow::Result<()> {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let url = config
        .common
        .database
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no database configured"))?;
    let stop = Arc::new(AtomicBool::new(false));
    // The scan, each writer, the read-ahead, and one to spare.
    let size = config.daemon.resources.writers + 3;
    let db = focuser_daemon::db::Database::new(&url, size, Arc::clone(&stop))?;
    let ctx = Arc::new(worker::Ctx::new(db, config, stop));
    resources::once(&ctx)
}
