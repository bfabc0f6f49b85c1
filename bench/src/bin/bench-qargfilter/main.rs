//! bench-qargfilter (bench/README.md), everything generated here, deterministically:
//!
//! - (a) what qargfilter saves ([`learn`]): a generated web of `--hosts` hosts whose articles
//!   ignore `utm_source`, `sid` and `ref` (30 % of the URLs the ad servers report carry one or
//!   two of them) and whose lists change with `page`, crawled with MultiDoc from a mirror; the
//!   fetches and the URLs stored before and after qargfilter has learned, the insignificant
//!   variants no longer fetched (goal ≥ 90 %) and the significant arguments dropped (goal 0);
//! - (b) what a pass costs ([`scale`]): qargfilter's pass over `--rows` `url` rows with their
//!   MultiDoc fingerprints, next to a plain `SELECT` of the same rows.
//!
//! Run:
//!
//!     cargo build --release -p focuser-bench
//!     target/release/bench-qargfilter                       # 1 000 hosts, 10 M rows
//!     target/release/bench-qargfilter --hosts 200 --rows 1000000
//!
//! Needs the private database (scripts/db.sh up) and the `mariadb` client.

mod learn;
mod scale;

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Parser;

#[derive(Parser)]
pub struct Args {
    /// Stages to run: a (learning), b (the pass at scale)
    #[arg(long, default_value = "ab")]
    stages: String,
    /// (a) Hosts of the generated web
    #[arg(long, default_value_t = 1000)]
    hosts: usize,
    /// (a) Articles per host (`/item?id=N`, `id` significant)
    #[arg(long, default_value_t = 100)]
    articles: usize,
    /// (a) Lists per host (`/list?page=N`, `page` significant)
    #[arg(long, default_value_t = 20)]
    lists: usize,
    /// (a) Share of the reported URLs that carry insignificant arguments
    #[arg(long, default_value_t = 0.3)]
    variant_share: f64,
    /// (b) `url` rows
    #[arg(long, default_value_t = 10_000_000)]
    rows: u64,
    /// Qargfilter.Batch
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    /// Log the workers' lines (debuglevel 40) to standard error
    #[arg(long)]
    verbose: bool,
    /// Work directory [target/bench-qargfilter]
    #[arg(long)]
    work: Option<PathBuf>,
}

/// A yacobot config in `root` against `db` with `extra`, loaded.
pub fn config(
    root: &Path,
    db: &focuser_tests::TestDb,
    a: &Args,
    extra: &str,
) -> anyhow::Result<focuser_daemon::Config<focuser_yacobot::YacobotConfig>> {
    let cf = root.join("yacobot.cf");
    std::fs::write(
        &cf,
        format!(
            "rootdir = {}\ndatabase = {}\nnode = bench\nLoader.Inbox.bench = inbox\n\
             Qargfilter.Batch = {}\ndebuglevel = {}\n{extra}",
            root.display(),
            db.url(),
            a.batch,
            if a.verbose { 40 } else { 20 }
        ),
    )?;
    Ok(focuser_daemon::Config::load(&cf, None)?)
}

/// One number from SQL.
pub fn number(db: &focuser_tests::TestDb, sql: &str) -> anyhow::Result<i64> {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    use diesel::RunQueryDsl;
    Ok(diesel::sql_query(sql).get_result::<N>(&mut db.conn())?.n)
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    if let Some(bad) = a.stages.chars().find(|c| !"ab".contains(*c)) {
        bail!("--stages: {bad:?} is not a stage (a or b)");
    }
    let work = a
        .work
        .clone()
        .unwrap_or_else(|| focuser_tests::repo_root().join("target/bench-qargfilter"));
    let _logging = focuser_daemon::logging::Logging::init(focuser_daemon::logging::LogSettings {
        progname: "bench-qargfilter".into(),
        logfile: None,
        logconfig: None,
        debuglevel: if a.verbose { 40 } else { 20 },
    })?;
    if a.stages.contains('a') {
        learn::stage(&a, &work.join("learn"))?;
    }
    if a.stages.contains('b') {
        scale::stage(&a, &work.join("scale"))?;
    }
    Ok(())
}
