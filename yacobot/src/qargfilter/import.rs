//! The qargfilter import (docs/design.md#yacobot-qargfilter): the scores the query-argument
//! analysis writes to `query_args` become `path_arg_name` rules, `score >= 0.95` →
//! insignificant, otherwise significant, always replacing the rule there was.
//!
//! The first import after start reads every score; later ones read what was computed since
//! the newest score seen before, less `Qargfilter.Overlap` (importing twice is harmless).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::NaiveDateTime;
use focuser_daemon::clock;
use focuser_daemon::db::DbError;
use focuser_daemon::status::{Figure, StatusSource};
use focuser_schema::models::{PathArgName, QueryArg};

use crate::config::YacobotConfig;
use crate::status::{add, get};
use crate::worker::{Ctx, Step, Worker};

/// The worker: an import every `Qargfilter.Interval` seconds.
pub struct Import {
    /// The newest `computed_at` seen before the last import.
    newest: Option<NaiveDateTime>,
    stats: Arc<ImportStats>,
}

/// The import's figures.
#[derive(Default)]
pub struct ImportStats {
    pub imports: AtomicU64,
    pub rules_imported: AtomicU64,
}

impl StatusSource for ImportStats {
    fn figures(&self) -> Vec<Figure> {
        vec![
            Figure::counter(
                "yacobot_qarg_imports_total",
                "qargfilter imports run",
                get(&self.imports),
            ),
            Figure::counter(
                "yacobot_qarg_rules_imported_total",
                "path_arg_name rows written by the qargfilter import",
                get(&self.rules_imported),
            ),
        ]
    }
}

impl Worker for Import {
    const NAME: &'static str = "qargfilter";
    type Figures = ImportStats;

    fn enabled(cfg: &YacobotConfig) -> bool {
        cfg.qargfilter.enable
    }

    fn open(_ctx: &Arc<Ctx>, stats: Arc<ImportStats>) -> anyhow::Result<Import> {
        Ok(Import {
            newest: None,
            stats,
        })
    }

    fn step(&mut self, ctx: &Ctx, once: bool) -> anyhow::Result<Step> {
        let interval = Duration::from_secs(ctx.config().daemon.qargfilter.interval);
        Ok(match self.import(ctx) {
            Ok(_) if once => Step::Done,
            Ok(_) => Step::Idle(interval),
            Err(e) => Step::Failed(e.into()),
        })
    }

    fn close(self, _ctx: &Ctx) {}
}

impl Import {
    /// One import; returns the rows written.
    pub fn import(&mut self, ctx: &Ctx) -> Result<usize, DbError> {
        let cfg = ctx.config();
        let started = Instant::now();
        let overlap = chrono::TimeDelta::seconds(cfg.daemon.qargfilter.overlap as i64);
        let since = self
            .newest
            .map(|t| t - overlap)
            .unwrap_or(chrono::DateTime::UNIX_EPOCH.naive_utc());
        let newest = ctx.db.run("qargfilter import", QueryArg::newest)?;
        let now = clock::db_now();
        let written = ctx.db.run("qargfilter import", |c| {
            PathArgName::import_query_args(c, since, now)
        })?;
        self.newest = newest.or(self.newest);
        add(&self.stats.imports, 1);
        add(&self.stats.rules_imported, written as u64);
        log::info!(
            "qargfilter import: scores since {since}: {written} rows written to path_arg_name, {:.2} s",
            started.elapsed().as_secs_f64()
        );
        Ok(written)
    }
}
