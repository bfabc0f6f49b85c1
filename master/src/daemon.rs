//! The master daemon's main loop: a cycle every `Cycle.Interval` seconds when reflog files
//! are ready, at once on SIGUSR1, one with `--once`; its figures for the status page.

use std::sync::Arc;
use std::time::{Duration, Instant};

use focuser_daemon::{clock, Runtime, Signal};

use crate::config::MasterConfig;
use crate::cycle::{CycleStats, Master};
use crate::intake::SettleLog;
use crate::journal::Journal;
use crate::status::CycleFigures;
use crate::store::PoolStore;

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
        s.join.unique_urls,
        s.forwarded(),
        s.join.forwarded_new,
        s.join.forwarded_window,
        s.join.forwarded_updatetag,
        s.join.kept,
        s.join.retained,
        s.join.expired,
        s.new_domains,
        if nodes.is_empty() { "-".into() } else { nodes.join(" ") },
        s.current_log_entries,
        s.seconds,
        if s.parts > 1 { format!(", {} partitions", s.parts) } else { String::new() },
    )
}

/// The daemon: `fixed_now` is `--now`.
pub fn main_loop(rt: &mut Runtime<MasterConfig>, fixed_now: Option<i64>) -> anyhow::Result<()> {
    let db = rt.require_database()?;
    let figures = Arc::new(CycleFigures::default());
    rt.add_status_source(figures.clone());
    let mut settle_log = SettleLog::default();
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
        let master = Master::new(&cfg);
        let mut store = PoolStore(&db);
        let mut settling = false;
        let result = match Journal::load(&cfg.state_dir) {
            Ok(Some(_)) => master.recover(&mut store).map(|_| None),
            Ok(None) => master.incoming().and_then(|incoming| {
                settle_log.note(&incoming.settling, cfg.cycle.settle_seconds);
                settling = !incoming.settling.is_empty();
                let now = fixed_now.unwrap_or_else(clock::unix_secs);
                master.run_inputs(&mut store, now, incoming.ready, false)
            }),
            Err(e) => Err(e.into()),
        };
        figures.set_aside(master.set_aside_count());
        match result {
            Ok(Some(stats)) => {
                log::info!("{}", summary(&stats));
                figures.record(&stats);
            }
            Ok(None) => log::debug!("no reflog files ready"),
            Err(e) => {
                let e = e.context("cycle failed, nothing committed; it is redone next time");
                // `--once` (cron, scripts, tests) reports the failure in its exit status.
                if rt.once() {
                    return Err(e);
                }
                figures.failed(&format!("{e:#}"));
                log::error!("{e:#}");
            }
        }
        // A file still being written is looked at again once it may have settled.
        let mut interval = cfg.cycle.interval;
        if settling {
            interval = interval.min(cfg.cycle.settle_seconds.max(1));
        }
        next_cycle = Instant::now() + Duration::from_secs(interval);
        if rt.once() {
            break;
        }
    }
    Ok(())
}
