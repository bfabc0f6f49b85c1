//! qargfilter's probe URLs in the scheduler (docs/design.md#yacobot-qargfilter, "Probes"): a
//! crawler spends at most `Qargfilter.ProbeShare` of its fetches on them.

use chrono::TimeDelta;
use focuser_daemon::{clock, Config};
use focuser_schema::models::QueryArgProbe;

use super::Crawler;
use crate::config::YacobotConfig;
use crate::status::add;
use crate::worker::Ctx;

impl Crawler {
    /// Claims qargfilter's probe URLs (docs/design.md#yacobot-qargfilter, "Probes") within
    /// `Qargfilter.ProbeShare` of the due URLs claimed since start, and `room`; they are
    /// fetched like any URL. Returns how many were claimed.
    pub(super) fn claim_probes(
        &mut self,
        ctx: &Ctx,
        cfg: &Config<YacobotConfig>,
        room: usize,
    ) -> anyhow::Result<usize> {
        let share = cfg.daemon.qargfilter.probe_share;
        let allowed = (share * self.claimed_due as f64).floor() as u64;
        let limit = allowed.saturating_sub(self.claimed_probes).min(room as u64);
        if limit == 0 || !cfg.daemon.qargfilter.enable {
            return Ok(0);
        }
        let now = clock::db_now();
        let expires = now + TimeDelta::seconds(cfg.daemon.crawl.claim_ttl as i64);
        let owner = self.owner.clone();
        let probes = ctx.db.run("claiming probe URLs", |c| {
            QueryArgProbe::take(c, &owner, now, expires, limit as i64)
        })?;
        let n = probes.len();
        self.claimed_probes += n as u64;
        add(&self.stats.probes, n as u64);
        for u in &probes {
            log::debug!("probe {}", u.url);
        }
        self.take(ctx, cfg, probes, now)?;
        Ok(n)
    }
}
