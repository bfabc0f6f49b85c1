//! bench-yacobot (bench/README.md), everything generated here, deterministically:
//!
//! - (a) the loader next to `LOAD DATA` of the same rows into the same table, into an empty
//!   `url` table and into a full one ([`loader`]);
//! - (b) the crawl worker (claims, fetcher, archive, bookkeeping) fetching 10 k pages under
//!   1 000 host names from a private nginx, next to a plain libcurl loop and `xargs -P 32
//!   curl` over the same URLs; (c) the same with `Fetch.HostDelay = 1 s` against the
//!   politeness ceiling ([`crawl`]).
//!
//! Run:
//!
//!     cargo build --release -p focuser-bench
//!     target/release/bench-yacobot                 # every stage at full size
//!     target/release/bench-yacobot --stages bc     # the crawl stages only
//!
//! Needs the private database (scripts/db.sh up), the `mariadb` client and nginx-light.

mod crawl;
mod loader;

use std::path::PathBuf;

use anyhow::bail;
use clap::Parser;

#[derive(Parser)]
pub struct Args {
    /// Stages to run: any of a (loader), b (crawl, no delay), c (crawl, HostDelay 1 s)
    #[arg(long, default_value = "abc")]
    stages: String,
    /// (a) Queued URLs (0–4 query arguments each)
    #[arg(long, default_value_t = 1_000_000)]
    urls: u64,
    /// (a) path_arg_name rules (four per path)
    #[arg(long, default_value_t = 10_000)]
    rules: u64,
    /// (a) Queue files the URLs come in
    #[arg(long, default_value_t = 10)]
    files: u64,
    /// (a) Other URLs already in the full table
    #[arg(long, default_value_t = 1_000_000)]
    others: u64,
    /// (a) Loader.Batch
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// (b, c) Pages to fetch (5-20 KB each)
    #[arg(long, default_value_t = 10_000)]
    pages: usize,
    /// (b, c) Host names the pages are spread over
    #[arg(long, default_value_t = 1_000)]
    hosts: usize,
    /// (b, c) Fetch.Connections, and the plain loop's transfers in flight
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// (b) Runs of the crawl and the plain loop, alternating; the fastest of each counts
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// (b) Leave out xargs-curl (minutes on a busy machine)
    #[arg(long)]
    no_xargs: bool,
    /// (b) Use this xargs-curl rate (pages/s, measured before) instead of running it
    #[arg(long)]
    xargs_rate: Option<f64>,
    /// (c) Pages per host fetched with HostDelay 1 s [all of them]
    #[arg(long)]
    polite_per_host: Option<usize>,
    /// Log the workers' lines (debuglevel 40) to standard error
    #[arg(long)]
    verbose: bool,
    /// Work directory [target/bench-yacobot]
    #[arg(long)]
    work: Option<PathBuf>,
    #[arg(long, default_value = "/usr/sbin/nginx")]
    nginx: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    if let Some(bad) = a.stages.chars().find(|c| !"abc".contains(*c)) {
        bail!("--stages: {bad:?} is not a stage (a, b or c)");
    }
    let work = a
        .work
        .clone()
        .unwrap_or_else(|| focuser_tests::repo_root().join("target/bench-yacobot"));
    let _logging = focuser_daemon::logging::Logging::init(focuser_daemon::logging::LogSettings {
        progname: "bench-yacobot".into(),
        logfile: None,
        logconfig: None,
        debuglevel: if a.verbose { 40 } else { 20 },
    })?;
    if a.stages.contains('a') {
        loader::stage(&a, &work)?;
    }
    let (b, c) = (a.stages.contains('b'), a.stages.contains('c'));
    if b || c {
        crawl::stages(&a, &work, b, c)?;
    }
    Ok(())
}
