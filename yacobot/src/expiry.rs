//! The frontier's expiry (`Url.ExpireDays`; docs/design.md#yacobot-expiry): without it the
//! frontier only grows, every URL ever hit staying forever. A URL no hit has asked for in
//! `Url.ExpireDays` days, and not due, is marked to be withdrawn (`Url::expire`, in bounded
//! batches, oldest first); the crawl worker's withdrawal then appends its `DELETE` item to the
//! archive (MultiDoc drops its analysis, the bindings withdraw its binding downstream) and
//! removes the row. A queue file that brings hits for a marked URL before it goes keeps it.
//!
//! It runs with the crawl worker (which withdraws what it marks), before it in `--once`; it
//! reads `Url.ExpireDays` at each step (0: it does nothing), so a reload switches it on or off.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::TimeDelta;
use focuser_daemon::status::{Card, Figure, StatusSource};
use focuser_daemon::{clock, Signal};
use focuser_schema::models::Url;

use crate::config::YacobotConfig;
use crate::status::{add, get};
use crate::worker::{Ctx, Step, Worker};

/// URLs marked at most per transaction (the withdrawal takes 500 at a time).
pub const BATCH: i64 = 1000;
/// How often the frontier is looked at when the last look left nothing expired.
const EVERY: Duration = Duration::from_secs(60);

#[derive(Default)]
pub struct ExpiryStats {
    /// URLs marked to be withdrawn as expired, and the batches that marked them.
    pub marked: AtomicU64,
    pub batches: AtomicU64,
    /// Looks that found the frontier without an expired URL left.
    pub passes: AtomicU64,
}

impl StatusSource for ExpiryStats {
    fn figures(&self) -> Vec<Figure> {
        vec![
            Figure::counter(
                "yacobot_expiry_marked_total",
                "URLs not hit for Url.ExpireDays (and not due) marked to leave the frontier (the crawl worker withdraws them: yacobot_withdrawn_total{reason=\"expired\"})",
                get(&self.marked),
            ),
            Figure::counter(
                "yacobot_expiry_batches_total",
                "transactions that marked expired URLs (at most 1000 each)",
                get(&self.batches),
            ),
            Figure::counter(
                "yacobot_expiry_passes_total",
                "looks at the frontier that ended with no expired URL left",
                get(&self.passes),
            ),
        ]
    }

    fn cards(&self) -> Vec<Card> {
        vec![Card::number("URLs expired", get(&self.marked))
            .unit("URLs")
            .help("not hit for Url.ExpireDays: withdrawn downstream, removed")]
    }
}

pub struct Expiry {
    stats: Arc<ExpiryStats>,
    /// When the frontier is looked at next.
    next: Instant,
}

/// With `--once`: marks every expired URL, then is done.
impl Worker for Expiry {
    const NAME: &'static str = "expiry";
    type Figures = ExpiryStats;

    fn enabled(cfg: &YacobotConfig) -> bool {
        cfg.crawl.enable
    }

    fn open(_ctx: &Arc<Ctx>, stats: Arc<ExpiryStats>) -> anyhow::Result<Expiry> {
        Ok(Expiry {
            stats,
            next: Instant::now(),
        })
    }

    fn step(&mut self, ctx: &Ctx, once: bool) -> anyhow::Result<Step> {
        let days = ctx.config().daemon.url.expire_days;
        let idle = |at: Instant| {
            if once {
                Step::Done
            } else {
                Step::Idle(at.saturating_duration_since(Instant::now()))
            }
        };
        if days == 0 {
            return Ok(idle(Instant::now() + EVERY));
        }
        if !once && Instant::now() < self.next {
            return Ok(idle(self.next));
        }
        let now = clock::db_now();
        let cutoff = now - TimeDelta::days(i64::from(days));
        let marked = match ctx.db.run("marking expired URLs", |c| {
            Url::expire(c, cutoff, now, BATCH)
        }) {
            Ok(n) => n as u64,
            Err(e) => return Ok(Step::Failed(e.into())),
        };
        if marked > 0 {
            add(&self.stats.marked, marked);
            add(&self.stats.batches, 1);
            log::info!("expiry: {marked} URLs not hit since {cutoff} marked to leave the frontier");
        }
        if marked as i64 >= BATCH {
            return Ok(Step::Busy);
        }
        add(&self.stats.passes, 1);
        self.next = Instant::now() + EVERY;
        Ok(idle(self.next))
    }

    /// A reload may have changed `Url.ExpireDays`: look at once.
    fn on_signal(&mut self, signal: Signal) -> bool {
        if signal == Signal::Reload {
            self.next = Instant::now();
            return true;
        }
        false
    }

    fn close(self, _ctx: &Ctx) {
        log::info!(
            "expiry: {} URLs marked to leave the frontier, in {} batches",
            get(&self.stats.marked),
            get(&self.stats.batches)
        );
    }
}
