//! The qargfilter import (docs/design.md#yacobot-qargfilter): the scores in `query_args` become
//! `path_arg_name` rules, `score >= 0.95` → insignificant, otherwise significant, always
//! replacing the rule there was.
//!
//! The first import after start reads every score; later ones read what was computed since
//! the newest score seen before, less `Qargfilter.Overlap` (importing twice is harmless).

use std::time::Instant;

use chrono::NaiveDateTime;
use focuser_daemon::clock;
use focuser_daemon::db::DbError;
use focuser_schema::models::{PathArgName, QueryArg};

use super::stats::QargStats;
use crate::status::add;
use crate::worker::Ctx;

#[derive(Default)]
pub struct Import {
    /// The newest `computed_at` seen before the last import.
    newest: Option<NaiveDateTime>,
}

impl Import {
    /// One import; returns the rows written.
    pub fn run(&mut self, ctx: &Ctx, stats: &QargStats) -> Result<usize, DbError> {
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
        add(&stats.imports, 1);
        add(&stats.rules_imported, written as u64);
        log::info!(
            "qargfilter import: scores since {since}: {written} rows written to path_arg_name, {:.2} s",
            started.elapsed().as_secs_f64()
        );
        Ok(written)
    }
}
