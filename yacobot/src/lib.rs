//! yacobot (docs/design.md#yacobot): one node of the crawler cluster.
//!
//! Its workers, each switched on in its config and run on a thread of its own by [`runner`]
//! (see [`worker`] for what a worker is, [`daemon`] for the list): the [`qargfilter`] import
//! (`query_args` → `path_arg_name`), the [`loader`] (queue files → `url`, applying the
//! query-argument rules), the [`expiry`] (URLs not hit for `Url.ExpireDays` marked to
//! leave the frontier), the [`crawl`] worker (scheduler, fetcher, archive, re-index
//! bookkeeping, withdrawal), the [`resources`] worker (partner feeds) and the [`multidoc`] worker (page
//! analysis: template evidence, language, categories). Each keeps its own figures;
//! [`status`] holds the node's. The operator's tools: `resource …` ([`admin`]), `multidoc …`
//! ([`multidoc::admin`]) and the page analysis tools `analyze`, `train`, `classify` ([`tools`]).

pub mod admin;
pub mod bindings;
pub mod config;
pub mod crawl;
pub mod daemon;
pub mod exclude;
pub mod expiry;
pub mod loader;
pub mod multidoc;
pub mod pathbinder;
pub mod qargfilter;
pub mod resources;
pub mod runner;
pub mod start;
pub mod status;
pub mod tools;
pub mod worker;

use std::sync::Arc;

use focuser_daemon::db::{self, Database};
use focuser_daemon::stop::Stop;
use focuser_daemon::Config;

pub use config::YacobotConfig;

/// `yacobot resource …`: loads the config, connects, runs the command; returns what to print.
pub fn resource_command(
    config_file: &std::path::Path,
    cmd: &admin::ResourceCmd,
) -> anyhow::Result<String> {
    let config = Config::<YacobotConfig>::load_for_tool(config_file)?;
    let mut conn = db::connect(&config.common)?;
    admin::resource(&mut conn, cmd)
}

/// `yacobot multidoc …`: loads the config, connects, runs the command; returns what to print.
pub fn multidoc_command(
    config_file: &std::path::Path,
    cmd: &multidoc::admin::MultidocCmd,
) -> anyhow::Result<String> {
    let config = Config::<YacobotConfig>::load_for_tool(config_file)?;
    let mut conn = db::connect(&config.common)?;
    multidoc::admin::command(&config, &mut conn, cmd)
}

/// `yacobot dict …`: the ad dictionaries in SQL.
pub fn dict_command(
    config_file: &std::path::Path,
    cmd: &bindings::admin::DictCmd,
) -> anyhow::Result<String> {
    let config = Config::<YacobotConfig>::load_for_tool(config_file)?;
    let mut conn = db::connect(&config.common)?;
    bindings::admin::dict(&mut conn, cmd)
}

/// `yacobot bindings URL`: a page's stored binding and where its phrases matched.
pub fn bindings_command(config_file: &std::path::Path, url: &str) -> anyhow::Result<String> {
    let config = Config::<YacobotConfig>::load_for_tool(config_file)?;
    let mut conn = db::connect(&config.common)?;
    bindings::admin::show(&config, &mut conn, url)
}

/// `yacobot url add URL…`: loads the config, connects, adds the URLs; returns how many were
/// refused (each said on stderr).
pub fn url_command(config_file: &std::path::Path, urls: &[String]) -> anyhow::Result<tools::Done> {
    let config = Config::<YacobotConfig>::load_for_tool(config_file)?;
    let bad = start::command(&config, urls)?;
    Ok(tools::Done { bad })
}

/// Applies every queue file ready in the configured inboxes once, outside the daemon (what
/// `--once` does first; for tools and benchmarks). Returns the files handled.
pub fn load_once(config: Config<YacobotConfig>) -> anyhow::Result<usize> {
    let ctx = context(config.clone(), 2)?;
    let mut loader = loader::Loader::default();
    Ok(loader.pass(&ctx, &config))
}

/// Crawls until no URL is due and nothing is in flight, outside the daemon (what `--once`
/// does after loading; for tools and benchmarks). Returns the crawl's figures.
pub fn crawl_once(config: Config<YacobotConfig>) -> anyhow::Result<Arc<crawl::CrawlStats>> {
    let ctx = context(config, 2)?;
    let stats = Arc::new(crawl::CrawlStats::default());
    runner::once::<crawl::Crawler>(&ctx, Arc::clone(&stats))?;
    Ok(stats)
}

/// Analyses the archive to its end, outside the daemon (what `--once` does after crawling; for
/// tools and benchmarks).
pub fn multidoc_once(config: Config<YacobotConfig>) -> anyhow::Result<()> {
    let ctx = context(config, 2)?;
    runner::once::<multidoc::MultiDoc>(&ctx, Arc::default())
}

/// One qargfilter import and one pass over the frontier, outside the daemon (what `--once`
/// does first; for tools and benchmarks). Returns its figures.
pub fn qargfilter_once(
    config: Config<YacobotConfig>,
) -> anyhow::Result<Arc<qargfilter::QargStats>> {
    let ctx = context(config, 2)?;
    let stats = Arc::new(qargfilter::QargStats::default());
    runner::once::<qargfilter::Qargfilter>(&ctx, Arc::clone(&stats))?;
    Ok(stats)
}

/// One resources scan and every run it starts, outside the daemon (what `--once` does last;
/// for tools and benchmarks).
pub fn resources_once(config: Config<YacobotConfig>) -> anyhow::Result<()> {
    // The scan, each writer, the read-ahead, and one to spare.
    let size = config.daemon.resources.writers + 3;
    let ctx = context(config, size)?;
    runner::once::<resources::Resources>(&ctx, Arc::default())
}

/// What the workers share, outside the daemon: a pool of `pool_size` connections.
fn context(config: Config<YacobotConfig>, pool_size: u32) -> anyhow::Result<Arc<worker::Ctx>> {
    let stop = Stop::new();
    let db = Database::of(&config.common, pool_size, &stop)?;
    let ctx = worker::Ctx::new(db, config.clone(), stop);
    ctx.exclusion.load(&config)?;
    Ok(Arc::new(ctx))
}
