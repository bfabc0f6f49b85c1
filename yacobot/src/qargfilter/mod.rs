//! qargfilter (docs/design.md#yacobot-qargfilter): the crawl learns which query arguments do not
//! change a page. The worker passes over the frontier every `Qargfilter.PassInterval` seconds
//! ([`pass`]): for each path, the evidence of each argument — pairs of analysed pages that
//! differ only in it, and how many of those show the same main text ([`estimate`]) — becomes a
//! score in `query_args`, imported at once into `path_arg_name`; the URLs that carry an argument
//! now insignificant are merged into their canonical URL ([`merge`]); arguments with too little
//! evidence get probe URLs for the scheduler ([`probe`]). Every `Qargfilter.Interval` seconds
//! it also imports whatever scores `query_args` holds ([`import`]).

pub mod estimate;
mod import;
pub mod merge;
pub mod pass;
pub mod probe;
mod stats;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use stats::QargStats;

use crate::config::YacobotConfig;
use crate::status::add;
use crate::worker::{Ctx, Step, Worker};
use import::Import;
use pass::Pass;

/// The worker.
pub struct Qargfilter {
    import: Import,
    next_import: Instant,
    pass: Option<Pass>,
    next_pass: Instant,
    /// `--once`: a pass was made.
    passed: bool,
    stats: Arc<QargStats>,
}

impl Worker for Qargfilter {
    const NAME: &'static str = "qargfilter";
    type Figures = QargStats;

    fn enabled(cfg: &YacobotConfig) -> bool {
        cfg.qargfilter.enable
    }

    fn open(_ctx: &Arc<Ctx>, stats: Arc<QargStats>) -> anyhow::Result<Qargfilter> {
        Ok(Qargfilter {
            import: Import::default(),
            next_import: Instant::now(),
            pass: None,
            next_pass: Instant::now(),
            passed: false,
            stats,
        })
    }

    fn step(&mut self, ctx: &Ctx, once: bool) -> anyhow::Result<Step> {
        Ok(match self.work(ctx, once) {
            Ok(step) => step,
            Err(e) => Step::Failed(e.into()),
        })
    }

    fn close(self, _ctx: &Ctx) {}
}

impl Qargfilter {
    /// The import when it is due, else a batch of the pass in progress (or a new pass when
    /// one is due).
    fn work(&mut self, ctx: &Ctx, once: bool) -> Result<Step, focuser_daemon::db::DbError> {
        let cfg = ctx.config();
        let q = &cfg.daemon.qargfilter;
        let now = Instant::now();
        if now >= self.next_import {
            self.import.run(ctx, &self.stats)?;
            self.next_import = now + Duration::from_secs(q.interval);
            return Ok(Step::Busy);
        }
        if self.pass.is_none() && (now >= self.next_pass || (once && !self.passed)) {
            self.pass = Some(Pass::start(&self.stats));
            self.next_pass = now + Duration::from_secs(q.pass_interval);
        }
        if let Some(pass) = self.pass.as_mut() {
            if !pass.batch(ctx, q, &self.stats)? {
                return Ok(Step::Busy);
            }
            let seconds = pass.started.elapsed().as_secs_f64();
            log::info!(
                "qargfilter: pass over {} URLs in {seconds:.2} s (reading {:.2} s, estimating {:.2} s, merging {:.2} s)",
                pass.urls,
                pass.reading.as_secs_f64(),
                pass.estimating.as_secs_f64(),
                pass.merging.as_secs_f64()
            );
            let [args, names, prints] = pass.refused(&self.stats);
            if args + names + prints > 0 {
                log::info!(
                    "qargfilter: the pass left out {args} pages with more than {} query arguments, {names} argument names longer than {} bytes, {prints} main-text fingerprints that are not an MD5",
                    estimate::MAX_ARGS,
                    estimate::MAX_NAME
                );
            }
            add(&self.stats.passes, 1);
            self.stats
                .pass_seconds
                .store(seconds.round() as u64, Ordering::Relaxed);
            self.pass = None;
            self.passed = true;
        }
        if once {
            return Ok(Step::Done);
        }
        let next = self.next_import.min(self.next_pass);
        Ok(Step::Idle(next.saturating_duration_since(Instant::now())))
    }
}
