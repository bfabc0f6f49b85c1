//! The page analysis worker (`MultiDoc.Enable`; docs/multidoc.md, docs/operations.md
//! "yacobot: page analysis"): follows the crawl archive from its position in
//! `multidoc_position`, takes up to `MultiDoc.Batch` pages at a time ([`take`]), weighs them
//! with their domains' template evidence ([`weigh`]), puts each in its duplicate group
//! ([`dups`]), counts into the evidence, classifies and binds those that are not duplicates
//! ([`plan`]), and writes all of it with the new position in one transaction ([`write`]):
//! after a `kill -9` the batch is done again from the old position, and nothing was counted
//! twice. `yacobot multidoc rewind` moves the position back to analyse the archive again
//! ([`admin`]); what was counted once is not counted again. With `Bindings.Enable` each page
//! is also bound in the batch, its changed bindings appended to the bindings store before the
//! transaction, which records them too (`crate::bindings`).

pub mod admin;
pub mod again;
mod dups;
mod lag;
mod model;
mod plan;
mod rows;
mod stats;
mod take;
mod weigh;
mod write;

pub use rows::category_text;
pub use stats::MultiDocStats;
pub use weigh::domain_key;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use chrono::TimeDelta;
use focuser_daemon::episode::Episode;
use focuser_daemon::{clock, Config, Signal};
use focuser_formats::segment::{Cursor, Position};
use focuser_schema::models::{MultidocGroup, MultidocPosition};

use crate::bindings::Bindings;
use crate::config::YacobotConfig;
use crate::worker::{Ctx, Step, Worker};
use model::ModelSlot;
use weigh::Env;
use write::Move;

/// The wait when the archive has nothing new.
const IDLE: Duration = Duration::from_millis(500);
/// How often the ageing runs (and the lag is measured).
const AGE_EVERY: Duration = Duration::from_secs(60);
const LAG_EVERY: Duration = Duration::from_secs(5);

/// The worker.
pub struct MultiDoc {
    stats: Arc<MultiDocStats>,
    node: String,
    /// The archive, and its name in `multidoc_position.store`.
    dir: PathBuf,
    store: String,
    cursor: Cursor,
    /// The position as committed (where the cursor starts again after a failed step), and
    /// the end of what was counted into the evidence.
    committed: Position,
    counted: Position,
    model: ModelSlot,
    damage: Episode,
    next_ageing: Instant,
    next_lag: Instant,
    /// The pages' ad bindings (`Bindings.Enable`).
    bindings: Option<Bindings>,
}

/// `multidoc_position.store` of an archive folder: its path as the config resolves it.
pub fn store_name(dir: &std::path::Path) -> String {
    dir.display().to_string()
}

fn position(p: (u64, u32)) -> Position {
    Position {
        file_id: p.0,
        item_idx: p.1,
    }
}

/// With `--once`: analyses the archive up to its end.
impl Worker for MultiDoc {
    const NAME: &'static str = "multidoc";
    type Figures = MultiDocStats;

    fn enabled(cfg: &YacobotConfig) -> bool {
        cfg.multidoc.enable
    }

    fn open(ctx: &Arc<Ctx>, stats: Arc<MultiDocStats>) -> anyhow::Result<MultiDoc> {
        let cfg = ctx.config();
        let dir = cfg.common.path(&cfg.daemon.archive.dir);
        let store = store_name(&dir);
        if store.len() > 512 {
            return Err(anyhow!(
                "Archive.Dir {store}: longer than 512 bytes, which multidoc_position.store holds"
            ));
        }
        let node = cfg.daemon.node.clone();
        let now = clock::db_now();
        let start = (Position::START.file_id, Position::START.item_idx);
        let row = ctx.db.run("reading the page analysis position", |c| {
            MultidocPosition::open(c, &node, &store, start, now)
        })?;
        let committed = position(row.place());
        let bindings = Bindings::open(&cfg, &ctx.db, Arc::clone(&stats.bind))?;
        log::info!(
            "multidoc: following the archive {store} from {committed} (counted up to {})",
            position(row.counted())
        );
        let mut w = MultiDoc {
            stats,
            node,
            cursor: Cursor::new(&dir, committed, None),
            dir,
            store: store.clone(),
            committed,
            counted: position(row.counted()),
            model: ModelSlot::default(),
            damage: Episode::new(format!("multidoc: archive {store}")),
            next_ageing: Instant::now(),
            next_lag: Instant::now(),
            bindings,
        };
        w.model.refresh(&model_path(&cfg), &w.stats);
        Ok(w)
    }

    fn step(&mut self, ctx: &Ctx, once: bool) -> anyhow::Result<Step> {
        let cfg = ctx.config();
        self.model.refresh(&model_path(&cfg), &self.stats);
        if let Err(e) = self
            .housekeeping(ctx, &cfg)
            .and_then(|()| self.follow(ctx, false))
        {
            return Ok(Step::Failed(e));
        }
        if !self.dir.is_dir() {
            // Not made yet (the crawl worker makes it when it opens).
            return Ok(if once { Step::Done } else { Step::Idle(IDLE) });
        }
        let md = &cfg.daemon.multidoc;
        let batch = match take::take(
            &mut self.cursor,
            md.batch,
            md.max_bytes,
            &self.stats,
            &mut self.damage,
        ) {
            Ok(b) => b,
            Err(e) => {
                self.restart();
                return Ok(Step::Failed(anyhow!(e).context("reading the archive")));
            }
        };
        if batch.items.is_empty() && batch.to == self.committed {
            self.stats.sample();
            self.stats.bind.sample();
            if self
                .stats
                .lag_items
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
            {
                // Caught up: the lag is measured again at the next step, not in 5 s.
                self.next_lag = Instant::now();
            }
            return Ok(if once { Step::Done } else { Step::Idle(IDLE) });
        }
        match self.batch(ctx, &cfg, batch) {
            Ok(()) => Ok(Step::Busy),
            Err(e) => {
                self.restart();
                Ok(Step::Failed(e))
            }
        }
    }

    /// A reload may have changed `MultiDoc.Model`: step at once.
    fn on_signal(&mut self, signal: Signal) -> bool {
        signal == Signal::Reload
    }

    fn close(self, _ctx: &Ctx) {
        let s = &self.stats;
        let n = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        log::info!(
            "multidoc: {} pages analysed ({} counted into the evidence), {} gone; at {}",
            n(&s.analysed),
            n(&s.counted),
            n(&s.gone),
            self.committed
        );
        if let Some(b) = self.bindings {
            b.close();
        }
    }
}

impl MultiDoc {
    /// Weighs, counts, classifies and commits `batch`.
    fn batch(
        &mut self,
        ctx: &Ctx,
        cfg: &Config<YacobotConfig>,
        batch: take::Batch,
    ) -> anyhow::Result<()> {
        let md = &cfg.daemon.multidoc;
        let env = Env::now(md, self.counted);
        let now = env.now;
        let loaded = ctx
            .db
            .run("reading the template evidence", |c| weigh::load(c, &batch))?;
        let to = batch.to;
        let current = ctx
            .db
            .run("reading the duplicate groups of the batch's pages", |c| {
                dups::current(c, &batch)
            })?;
        if let Some(b) = &mut self.bindings {
            b.refresh(&ctx.db)?;
        }
        let mut near = |key: u64, simhash: u64| {
            ctx.db
                .run("reading the duplicate groups near a page", |c| {
                    MultidocGroup::near(c, key, simhash)
                })
                .map_err(anyhow::Error::from)
        };
        let tools = plan::Tools {
            slot: &mut self.model,
            binder: self.bindings.as_mut().map(|b| &mut b.binder),
            near: &mut near,
        };
        let mut plan = plan::plan(batch, loaded, current, &env, tools)?;
        let shipment = match &mut self.bindings {
            Some(b) => Some(b.ship(&ctx.db, to, now)?),
            None => None,
        };
        let counted = self.counted.max(to);
        let m = Move {
            node: &self.node,
            store: &self.store,
            from: self.committed,
            to,
            counted,
            now,
            bindings: match (&shipment, &self.bindings) {
                (Some(s), Some(b)) => Some((s, b.store_name())),
                _ => None,
            },
        };
        let Some((emptied, new_reps)) = write::commit(&ctx.db, &plan, env.expired, &m)? else {
            log::info!("multidoc: the position was moved meanwhile (a rewind): the batch is left, the analysis goes on from there");
            return self.follow(ctx, true);
        };
        plan.tally.dups.emptied = emptied as u64;
        plan.tally.dups.new_reps = new_reps as u64;
        self.committed = to;
        self.counted = counted;
        if let (Some(b), Some(s)) = (&mut self.bindings, &shipment) {
            b.committed(s);
        }
        self.damage.resolved(&"reading again");
        self.stats.batch(plan.tally);
        write::cap(&ctx.db, &plan.over_cap, md.max_fingerprints, &self.stats)
            .context("keeping the template fingerprints under MultiDoc.MaxFingerprints")
    }

    /// The cursor back at the committed position (a step failed: its batch is taken again).
    fn restart(&mut self) {
        self.cursor = Cursor::new(&self.dir, self.committed, None);
    }

    /// Reads the stored position: if an operator moved it (`yacobot multidoc rewind`), or
    /// `again`, the cursor goes there.
    fn follow(&mut self, ctx: &Ctx, again: bool) -> anyhow::Result<()> {
        let (node, store) = (self.node.clone(), self.store.clone());
        let start = (Position::START.file_id, Position::START.item_idx);
        let row =
            ctx.db.run(
                "reading the page analysis position",
                |c| match MultidocPosition::find(c, &node, &store)? {
                    Some(row) => Ok(row),
                    None => MultidocPosition::open(c, &node, &store, start, clock::db_now()),
                },
            )?;
        let stored = position(row.place());
        if again || stored != self.committed {
            log::info!(
                "multidoc: the position moved from {} to {stored} (a rewind): analysing from there, counted up to {}",
                self.committed,
                position(row.counted())
            );
            self.committed = stored;
            self.counted = position(row.counted());
            self.restart();
        }
        Ok(())
    }

    /// The ageing (every minute, more often while there is more to forget) and the lag.
    fn housekeeping(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>) -> anyhow::Result<()> {
        if let Some(b) = &mut self.bindings {
            b.housekeeping()
                .context("sealing the bindings store's segment")?;
        }
        let now = Instant::now();
        if now >= self.next_lag {
            self.next_lag = now + LAG_EVERY;
            match lag::lag(&self.dir, self.committed) {
                Ok((items, seconds)) => self.stats.set_lag(items, seconds),
                Err(e) => log::debug!("multidoc: lag: {e}"),
            }
        }
        if now >= self.next_ageing {
            let days = i64::from(cfg.daemon.multidoc.expire_days);
            let expired = clock::db_now().date() - TimeDelta::days(days);
            let more = write::age(&ctx.db, expired, &self.stats)
                .context("forgetting expired template evidence")?;
            self.next_ageing = if more { now } else { now + AGE_EVERY };
        }
        Ok(())
    }
}

/// `MultiDoc.Model` resolved (empty stays empty: no model).
fn model_path(cfg: &Config<YacobotConfig>) -> PathBuf {
    let p = &cfg.daemon.multidoc.model;
    if p.as_os_str().is_empty() {
        PathBuf::new()
    } else {
        cfg.common.path(p)
    }
}
