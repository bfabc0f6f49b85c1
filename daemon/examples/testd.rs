//! `testd`: a small daemon on focuser-daemon, for the runtime's integration tests.
//!
//! Every `Work.TickMs` it logs `tick N <Work.Message>` (a continuous log for rotation tests),
//! counts ticks in its figures and, with `Work.UseDb = 1`, asks the database `SELECT 1`
//! through the reconnecting wrapper. SIGUSR1 runs its rotate hook (`rotate hook: rotation N`);
//! SIGUSR2 logs the reloaded message. `Work.Crash` makes SIGUSR1 crash it instead, for the
//! crash-report tests: `panic` (the main loop panics), `thread` (a thread panics, the daemon
//! goes on), `segv` or `quit` (the process gets that signal). `Work.StopDelayMs` makes its stop slow, to test
//! `stop_timeout` and the second stop signal.
//!
//! Its status page shows what a real daemon's would: cards (ticks, a queue that rises and
//! falls, errors, the message), a table of the last batches (the message in every row, so a
//! hostile message tests escaping), and charts of the tick rate, the queue and a lag per
//! receiver. `Work.Paused = 1` (with a reload) stops the work, so every figure holds still
//! while a test compares the page with `/status.json`.
//!
//! Its own start-up, like a real daemon's: `Work.SecretFile` names a secret it checks (not
//! readable by others) and reads at start, and `Work.FailStart` makes its main loop fail
//! before it is ready, with that message (as a receiver whose port is taken would).

use std::collections::VecDeque;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use diesel::RunQueryDsl;
use focuser_daemon::config::restart_only;
use focuser_daemon::status::{Card, Chart, Figure, Figures, Row, State, StatusSource, Table};
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
    /// Read at start: the database is asked only if it was set then.
    #[serde(rename = "UseDb", default, serialize_with = "restart_only")]
    use_db: bool,
    #[serde(rename = "StopDelayMs", default)]
    stop_delay_ms: u64,
    #[serde(rename = "Paused", default)]
    paused: bool,
    /// Read at start, as a real daemon's secret is.
    #[serde(rename = "SecretFile", default, serialize_with = "restart_only")]
    secret_file: Option<std::path::PathBuf>,
    #[serde(rename = "FailStart", default, serialize_with = "restart_only")]
    fail_start: String,
    #[serde(rename = "Crash", default, serialize_with = "restart_only")]
    crash: String,
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

    fn check_files(&self, common: &focuser_daemon::CommonConfig) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let Some(path) = &self.work.secret_file else {
            return Ok(());
        };
        let path = common.path(path);
        let meta = std::fs::metadata(&path)
            .map_err(|e| format!("Work.SecretFile: {}: {e}", path.display()))?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "Work.SecretFile: {}: readable by group or others",
                path.display()
            ));
        }
        Ok(())
    }

    fn start_files(
        &self,
        common: &focuser_daemon::CommonConfig,
    ) -> Vec<(&'static str, std::path::PathBuf)> {
        self.work
            .secret_file
            .iter()
            .map(|p| ("Work.SecretFile", common.path(p)))
            .collect()
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

/// One unit of work, as the batches table shows it.
struct Batch {
    time: String,
    tick: u64,
    items: u64,
    seconds: f64,
    detail: String,
}

/// The last batches: a daemon's own [`StatusSource`] that only declares a table.
#[derive(Default)]
struct Batches(Mutex<VecDeque<Batch>>);

const BATCHES_KEPT: usize = 5;

impl Batches {
    fn push(&self, b: Batch) {
        if let Ok(mut v) = self.0.lock() {
            if v.len() == BATCHES_KEPT {
                v.pop_front();
            }
            v.push_back(b);
        }
    }
}

impl StatusSource for Batches {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "batches",
            "Last batches",
            &["time", "tick", "items", "seconds", "detail"],
        )
        .empty("no batch yet");
        if let Ok(v) = self.0.lock() {
            for b in v.iter().rev() {
                let row = Row::new(vec![
                    b.time.as_str().into(),
                    b.tick.into(),
                    b.items.into(),
                    b.seconds.into(),
                    b.detail.as_str().into(),
                ]);
                t.push(row.state(if b.tick % 10 == 0 {
                    State::Error
                } else {
                    State::Ok
                }));
            }
        }
        vec![t]
    }
}

/// The figures, cards and charts of one tick, all through the runtime's registry.
fn show(figures: &Figures, ticks: u64, message: &str) {
    let queue = (ticks * 7) % 50;
    let errors = ticks / 10;
    figures.set(Figure::counter(
        "ticks_total",
        "work units done",
        ticks as f64,
    ));
    figures.set(Figure::gauge("queue_urls", "URLs waiting", queue as f64));
    figures.set(Figure::counter(
        "errors_total",
        "batches that failed",
        errors as f64,
    ));
    for (receiver, lag) in [("a", ticks % 13), ("b", (ticks * 3) % 17)] {
        figures.set(
            Figure::gauge("lag_items", "items not yet acknowledged", lag as f64)
                .with_label("receiver", receiver),
        );
    }
    figures.set_card(Card::number("ticks", ticks as f64).unit("ticks"));
    figures.set_card(
        Card::number("queue", queue as f64)
            .unit("URLs")
            .warn_if(queue > 40),
    );
    figures.set_card(
        Card::number("errors", errors as f64)
            .error_if(errors > 0)
            .help("a batch fails every 10 ticks"),
    );
    figures.set_card(Card::text("message", message).help(message));
}

fn main_loop(rt: &mut Runtime<TestdConfig>) -> anyhow::Result<()> {
    let figures = rt.figures();
    figures.add_chart(Chart::of("ticks_total", "Work done").unit("ticks"));
    figures.add_chart(Chart::of("queue_urls", "Queue").unit("URLs"));
    figures.add_chart(Chart::of("lag_items", "Lag per receiver").unit("items"));
    let batches = Arc::new(Batches::default());
    rt.add_status_source(batches.clone());
    let use_db = rt.config().daemon.work.use_db;
    if let Some(path) = &rt.config().daemon.work.secret_file {
        let secret = std::fs::read(rt.config().common.path(path))
            .map_err(|e| anyhow::anyhow!("Work.SecretFile: {e}"))?;
        log::info!("secret read: {} bytes", secret.len());
    }
    if !rt.config().daemon.work.fail_start.is_empty() {
        return Err(anyhow::anyhow!("{}", rt.config().daemon.work.fail_start));
    }
    let mut ticks: u64 = 0;
    let mut rotations: u64 = 0;
    loop {
        let tick = Duration::from_millis(rt.config().daemon.work.tick_ms);
        match rt.next_signal(tick) {
            Some(Signal::Stop) => break,
            Some(Signal::Rotate) if !rt.config().daemon.work.crash.is_empty() => {
                crash(&rt.config().daemon.work.crash);
                continue;
            }
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
                log::debug!("reloaded, and debug lines are logged");
                continue;
            }
            Some(Signal::ReopenLog) => continue,
            None => {}
        }
        if rt.config().daemon.work.paused {
            continue;
        }
        ticks += 1;
        let message = &rt.config().daemon.work.message;
        log::info!("tick {ticks} {message}");
        show(&figures, ticks, message);
        batches.push(Batch {
            time: chrono::Utc::now().format("%H:%M:%S%.3f").to_string(),
            tick: ticks,
            items: ticks * 3 % 101,
            seconds: tick.as_secs_f64(),
            detail: message.clone(),
        });
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

/// `Work.Crash`: what a daemon with a bug would do.
fn crash(how: &str) {
    use nix::sys::signal::{raise, Signal as Sig};
    match how {
        "panic" => panic!("testd asked to panic: {how}"),
        "thread" => {
            let worker = std::thread::Builder::new()
                .name("worker".into())
                .spawn(|| panic!("a worker's bug"));
            if let Ok(w) = worker {
                if w.join().is_err() {
                    log::error!("the worker stopped");
                }
            }
        }
        "segv" => {
            let _ = raise(Sig::SIGSEGV);
        }
        "quit" => {
            let _ = raise(Sig::SIGQUIT);
        }
        other => log::warn!("Work.Crash = {other}: not a crash testd knows"),
    }
}
