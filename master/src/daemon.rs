//! The master daemon's main loop: a cycle every `Cycle.Interval` seconds when reflog files
//! are ready, at once on SIGUSR1, one with `--once`; its figures for the status page.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use focuser_daemon::status::{Figure, StatusSource};
use focuser_daemon::{Runtime, Signal};

use crate::config::MasterConfig;
use crate::cycle::{CycleStats, Master};
use crate::journal::Journal;
use crate::store::PoolStore;

/// The last cycle and running totals, for `/`, `/status.json` and `/metrics`.
#[derive(Default)]
pub struct CycleFigures {
    inner: Mutex<Totals>,
}

#[derive(Default)]
struct Totals {
    last: Option<CycleStats>,
    cycles: u64,
    failures: u64,
    lines: u64,
    rejected: BTreeMap<&'static str, u64>,
    forwarded: [u64; 3],
}

impl CycleFigures {
    pub fn record(&self, s: &CycleStats) {
        if let Ok(mut t) = self.inner.lock() {
            t.cycles += 1;
            t.lines += s.ingest.lines;
            for (k, v) in &s.ingest.rejected {
                *t.rejected.entry(k).or_insert(0) += v;
            }
            t.forwarded[0] += s.forwarded_new;
            t.forwarded[1] += s.forwarded_window;
            t.forwarded[2] += s.forwarded_updatetag;
            t.last = Some(s.clone());
        }
    }

    pub fn failed(&self) {
        if let Ok(mut t) = self.inner.lock() {
            t.failures += 1;
        }
    }
}

impl StatusSource for CycleFigures {
    fn figures(&self) -> Vec<Figure> {
        let Ok(t) = self.inner.lock() else {
            return Vec::new();
        };
        let mut f = vec![
            Figure::counter("master_cycles_total", "cycles committed", t.cycles as f64),
            Figure::counter(
                "master_cycle_failures_total",
                "cycles that failed and will be redone",
                t.failures as f64,
            ),
            Figure::counter("master_lines_total", "reflog lines read", t.lines as f64),
        ];
        for (reason, n) in &t.rejected {
            f.push(
                Figure::counter(
                    "master_rejected_total",
                    "reflog lines rejected, by reason",
                    *n as f64,
                )
                .with_label("reason", reason),
            );
        }
        for (i, reason) in ["new", "window", "updatetag"].iter().enumerate() {
            f.push(
                Figure::counter(
                    "master_forwarded_total",
                    "URLs forwarded to nodes, by reason",
                    t.forwarded[i] as f64,
                )
                .with_label("reason", reason),
            );
        }
        if let Some(s) = &t.last {
            let g = |name: &str, help: &str, v: u64| Figure::gauge(name, help, v as f64);
            f.extend([
                g("master_last_cycle", "number of the last cycle", s.seq),
                g(
                    "master_last_cycle_files",
                    "reflog files in the last cycle",
                    s.ingest.files,
                ),
                g(
                    "master_last_cycle_lines",
                    "lines read in the last cycle",
                    s.ingest.lines,
                ),
                g(
                    "master_last_cycle_rejected",
                    "lines rejected in the last cycle",
                    s.ingest.rejected_total(),
                ),
                g(
                    "master_last_cycle_unique_urls",
                    "distinct URLs in the last cycle",
                    s.unique_urls,
                ),
                g(
                    "master_last_cycle_forwarded",
                    "URLs forwarded in the last cycle",
                    s.forwarded(),
                ),
                g(
                    "master_last_cycle_kept",
                    "URLs held back (within the window) in the last cycle",
                    s.kept,
                ),
                g(
                    "master_last_cycle_expired",
                    "URLs that left current_log in the last cycle",
                    s.expired,
                ),
                g(
                    "master_last_cycle_new_domains",
                    "domains assigned to a node in the last cycle",
                    s.new_domains,
                ),
                g(
                    "master_current_log_entries",
                    "URLs in current_log",
                    s.current_log_entries,
                ),
            ]);
            f.push(Figure::gauge(
                "master_last_cycle_seconds",
                "duration of the last cycle",
                s.seconds,
            ));
            for (node, n) in &s.per_node {
                f.push(
                    Figure::gauge(
                        "master_last_cycle_node_urls",
                        "URLs queued per node in the last cycle",
                        *n as f64,
                    )
                    .with_label("node", &node.to_string()),
                );
            }
        }
        f
    }
}

/// One line that says what a cycle did.
pub fn summary(s: &CycleStats) -> String {
    let rejected: Vec<String> = s
        .ingest
        .rejected
        .iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect();
    let nodes: Vec<String> = s.per_node.iter().map(|(n, c)| format!("{n}:{c}")).collect();
    format!(
        "cycle {}: {} files, {} lines ({} rejected{}), {} URLs; forwarded {} (new {}, window {}, updatetag {}), \
         kept {}, retained {}, expired {}; {} new domains; per node {}; current_log {}; {:.2} s{}",
        s.seq,
        s.ingest.files,
        s.ingest.lines,
        s.ingest.rejected_total(),
        if rejected.is_empty() { String::new() } else { format!(": {}", rejected.join(", ")) },
        s.unique_urls,
        s.forwarded(),
        s.forwarded_new,
        s.forwarded_window,
        s.forwarded_updatetag,
        s.kept,
        s.retained,
        s.expired,
        s.new_domains,
        if nodes.is_empty() { "-".into() } else { nodes.join(" ") },
        s.current_log_entries,
        s.seconds,
        if s.parts > 1 { format!(", {} partitions", s.parts) } else { String::new() },
    )
}

pub fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The daemon: `fixed_now` is `--now`.
pub fn main_loop(rt: &mut Runtime<MasterConfig>, fixed_now: Option<i64>) -> anyhow::Result<()> {
    let db = rt
        .database()
        .cloned()
        .ok_or_else(|| anyhow!("no database configured"))?;
    let figures = Arc::new(CycleFigures::default());
    rt.add_status_source(figures.clone());
    let mut next_cycle = Instant::now();
    loop {
        let wait = next_cycle.saturating_duration_since(Instant::now());
        match rt.next_signal(wait) {
            Some(Signal::Stop) => break,
            Some(Signal::Rotate) => next_cycle = Instant::now(),
            Some(Signal::Reload | Signal::ReopenLog) => continue,
            None => {}
        }
        if rt.stopping() {
            break;
        }
        if Instant::now() < next_cycle {
            continue;
        }
        let cfg = rt.config().daemon.clone();
        let master = Master { cfg: &cfg };
        let mut store = PoolStore(&db);
        let result = match Journal::load(&cfg.state_dir) {
            Ok(Some(_)) => master.recover(&mut store).map(|_| None),
            Ok(None) => master.run(&mut store, fixed_now.unwrap_or_else(unix_now), None),
            Err(e) => Err(e.into()),
        };
        match result {
            Ok(Some(stats)) => {
                log::info!("{}", summary(&stats));
                figures.record(&stats);
            }
            Ok(None) => log::debug!("no reflog files ready"),
            Err(e) => {
                figures.failed();
                log::error!("cycle failed, nothing committed; it is redone next time: {e:#}");
            }
        }
        next_cycle = Instant::now() + Duration::from_secs(cfg.cycle.interval);
        if rt.once() {
            break;
        }
    }
    Ok(())
}
