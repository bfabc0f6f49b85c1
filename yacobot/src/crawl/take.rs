//! What becomes of the URLs a claim brought: one the exclusion file excludes is parked (not
//! fetched; see [`book::excluded`]), one with a fresh archived copy is re-indexed from it, the
//! others go to the downloader — after the robots.txt the record per host keeps for their
//! hosts has been handed to it ([`hosts::seeds`]).

use chrono::NaiveDateTime;
use focuser_daemon::{clock, Config};
use focuser_formats::segment::Status;
use focuser_schema::models::{Host, Url};

use super::downloader::Request;
use super::{book, bookkeeping, env, hosts, Crawler};
use crate::config::YacobotConfig;
use crate::exclude::By;
use crate::status::add;
use crate::worker::Ctx;

impl Crawler {
    /// Parks, re-indexes or submits each URL claimed at `now`.
    pub(super) fn take(
        &mut self,
        ctx: &Ctx,
        cfg: &Config<YacobotConfig>,
        urls: Vec<Url>,
        now: NaiveDateTime,
    ) -> anyhow::Result<()> {
        let rules = ctx.exclusion.rules();
        let mut parked = Vec::new();
        let mut from_archive = Vec::new();
        let mut to_fetch = Vec::new();
        for u in urls {
            if let Some(why) = rules.why(&u.url) {
                log::debug!("{}: excluded by {why}: parked", u.url);
                parked.push((u, why));
            } else if let Some(content) = self.archived_copy(&u, now) {
                from_archive.push((u, content));
            } else {
                to_fetch.push(u);
            }
        }
        if !parked.is_empty() {
            let env = env(cfg, self.dict_loaded);
            let bookings: Vec<_> = parked
                .iter()
                .map(|(u, why)| book::excluded(u, why, &env))
                .collect();
            ctx.exclusion.counted(By::Scheduler, bookings.len() as u64);
            self.gather(bookings);
        }
        if cfg.daemon.hosts.enable {
            self.seed_robots(ctx, &to_fetch)?;
        }
        for u in to_fetch {
            log::debug!("claimed {} (prio {})", u.url, u.download_prio);
            self.downloader.submit(Request {
                token: u.id,
                url: u.url.clone(),
            });
            self.hand.insert(u);
        }
        if !from_archive.is_empty() {
            self.reindex_from_archive(ctx, cfg, from_archive)?;
        }
        Ok(())
    }

    /// Hands the downloader the robots.txt the record keeps for the hosts of `urls` it does
    /// not know: one query for the claim's new hosts.
    fn seed_robots(&mut self, ctx: &Ctx, urls: &[Url]) -> anyhow::Result<()> {
        let downloader = &self.downloader;
        let wanted = hosts::wanted(urls.iter().map(|u| u.url.as_str()), |u| {
            downloader.robots_unknown(u)
        });
        if wanted.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = wanted.keys().map(String::as_str).collect();
        let now = clock::db_now();
        let kept = ctx.db.run("reading the robots.txt kept per host", |c| {
            Host::kept_robots(c, &names, now)
        })?;
        let mut seeded = 0;
        for (url, seed) in hosts::seeds(&kept, &wanted, now) {
            seeded += u64::from(self.downloader.seed_robots(url, seed));
        }
        log::debug!(
            "robots.txt of {} hosts from the record per host ({} new hosts looked up)",
            seeded,
            names.len()
        );
        add(&self.stats.hosts_looked_up, names.len() as u64);
        Ok(())
    }

    /// The copy to re-index from, if the URL was downloaded less than
    /// `steady_level` days ago and its copy is still in the archive.
    fn archived_copy(&self, u: &Url, now: chrono::NaiveDateTime) -> Option<Vec<u8>> {
        let archive = self.archive.as_ref()?;
        if !bookkeeping::recently_downloaded(u.last_downloaded, u.steady_level, now) {
            return None;
        }
        archive.read(u.archive_file?, u.archive_item?, u.id)
    }

    fn reindex_from_archive(
        &mut self,
        ctx: &Ctx,
        cfg: &Config<YacobotConfig>,
        copies: Vec<(Url, Vec<u8>)>,
    ) -> anyhow::Result<()> {
        let Some(archive) = self.archive.as_mut() else {
            return Ok(());
        };
        let env = env(cfg, self.dict_loaded);
        let mut bookings = Vec::with_capacity(copies.len());
        for (u, content) in &copies {
            let pos = archive.append(Status::Update, u.id, &u.url, content)?;
            log::debug!("re-indexed {} from the archive", u.url);
            bookings.push(book::from_archive(u, pos, &env));
        }
        add(&self.stats.from_archive, bookings.len() as u64);
        self.gather(bookings);
        self.book_if_due(ctx, cfg)
    }
}
