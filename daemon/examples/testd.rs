//! `testd`: a small daemon on focuser-daemon, for the runtime's integration tests.
//!
//! Every `Work.TickMs` it logs `tick N <Work.Message>` (a continuous log for rotation tests),
//! counts ticks in its figures and, with `Work.UseDb = 1`, asks the database `SELECT 1`
//! through the reconnecting wrapper. SIGUSR1 runs its rotate hook (`rotate hook: rotation N`);
//! SIGUSR2 logs the reloaded message. `Work.StopDelayMs` makes its stop slow, to test
//! `stop_timeout` and the second stop signal.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use diesel::RunQueryDsl;
use focuser_daemon::status::Figure;
use focuser_daemon::{CommonArgs, CommonCommand, DaemonConfig, Runtime, Signal};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct TestdConfig {
    #[serde(rename = "Work")]
    work: Work,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Work {
    #[serde(rename = "TickMs", default = "default_tick")]
    tick_ms: u64,
    #[serde(rename = "Message", default)]
    message: String,
    #[serde(rename = "UseDb", default)]
    use_db: bool,
    #[serde(rename = "StopDelayMs", default)]
    stop_delay_ms: u64,
}

fn default_tick() -> u64 {
    100
}

impl DaemonConfig for TestdConfig {
    fn validate(&self, common: &focuser_daemon::CommonConfig) -> Result<(), String> {
        if self.work.tick_ms == 0 {
            return Err("Work.TickMs: must be at least 1".into());
        }
        if self.work.use_db && common.database.is_none() {
            return Err("Work.UseDb: needs `database`".into());
        }
        Ok(())
    }

    fn restart_only_changes(&self, new: &Self) -> Vec<&'static str> {
        if self.work.use_db != new.work.use_db {
            vec!["Work.UseDb"]
        } else {
            Vec::new()
        }
    }
}

#[derive(Parser)]
#[command(name = "testd", version, about = "focuser-daemon's test daemon")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(subcommand)]
    command: Option<CommonCommand>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(cmd) => focuser_daemon::run_common_command::<TestdConfig>("testd", &cli.common, cmd),
        None => focuser_daemon::run("testd", cli.common, main_loop),
    }
}

fn main_loop(rt: &mut Runtime<TestdConfig>) -> anyhow::Result<()> {
    let figures = rt.figures();
    let use_db = rt.config().daemon.work.use_db;
    let mut ticks: u64 = 0;
    let mut rotations: u64 = 0;
    loop {
        let tick = Duration::from_millis(rt.config().daemon.work.tick_ms);
        match rt.next_signal(tick) {
            Some(Signal::Stop) => break,
            Some(Signal::Rotate) => {
                rotations += 1;
                log::info!("rotate hook: rotation {rotations}");
                figures.set(Figure::counter(
                    "rotations_total",
                    "rotate hook runs",
                    rotations as f64,
                ));
                continue;
            }
            Some(Signal::Reload) => {
                log::info!("reloaded: message={}", rt.config().daemon.work.message);
                continue;
            }
            Some(Signal::ReopenLog) => continue,
            None => {}
        }
        ticks += 1;
        log::info!("tick {ticks} {}", rt.config().daemon.work.message);
        figures.set(Figure::counter(
            "ticks_total",
            "work units done",
            ticks as f64,
        ));
        if use_db {
            if let Some(db) = rt.database() {
                match db.run("tick", |c| diesel::sql_query("SELECT 1").execute(c)) {
                    Ok(_) => figures.add("db_queries_total", "queries that succeeded", 1.0),
                    Err(e) => log::warn!("{e}"),
                }
            }
        }
        if rt.once() {
            break;
        }
    }
    let delay = rt.config().daemon.work.stop_delay_ms;
    if delay > 0 {
        log::info!("finishing work in hand ({delay} ms)");
        std::thread::sleep(Duration::from_millis(delay));
    }
    Ok(())
}
