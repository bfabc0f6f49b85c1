//! The qargfilter import (docs/design.md#yacobot-qargfilter): the scores the query-argument
//! analysis writes to `query_args` become `path_arg_name` rules, `score >= 0.95` →
//! insignificant, otherwise significant, always replacing the rule there was.
//!
//! The first import after start reads every score; later ones read what was computed since
//! the newest score seen before, less `Qargfilter.Overlap` (importing twice is harmless).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::NaiveDateTime;
use focuser_daemon::db::DbError;
use focuser_schema::models::{PathArgName, QueryArg};

use crate::status::add;
use crate::worker::{self, Ctx};

#[derive(Debug, Default)]
pub struct Import {
    /// The newest `computed_at` seen before the last import.
    newest: Option<NaiveDateTime>,
}

/// The worker thread: an import every `Qargfilter.Interval` seconds.
pub fn run(ctx: Arc<Ctx>) {
    let mut import = Import::default();
    let never = AtomicBool::new(false);
    loop {
        let Some(cfg) = ctx.config() else { return };
        if let Err(e) = import.once(&ctx) {
            log::error!("qargfilter import: {e}");
        }
        let interval = Duration::from_secs(cfg.daemon.qargfilter.interval);
        if !ctx.pause(interval, &never) {
            return;
        }
    }
}

impl Import {
    /// One import; returns the rows written.
    pub fn once(&mut self, ctx: &Ctx) -> Result<usize, DbError> {
        let Some(cfg) = ctx.config() else {
            return Ok(0);
        };
        let started = Instant::now();
        let overlap = chrono::TimeDelta::seconds(cfg.daemon.qargfilter.overlap as i64);
        let since = self
            .newest
            .map(|t| t - overlap)
            .unwrap_or(chrono::DateTime::UNIX_EPOCH.naive_utc());
        let newest = ctx.db_run("qargfilter import", QueryArg::newest)?;
        let now = worker::now();
        let written = ctx.db_run("qargfilter import", |c| {
            PathArgName::import_query_args(c, since, now)
        })?;
        self.newest = newest.or(self.newest);
        add(&ctx.stats.imports, 1);
        add(&ctx.stats.rules_imported, written as u64);
        log::info!(
            "qargfilter import: scores since {since}: {written} rows written to path_arg_name, {:.2} s",
            started.elapsed().as_secs_f64()
        );
        Ok(written)
    }
}
