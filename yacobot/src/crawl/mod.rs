//! The crawl worker (docs/design.md#yacobot-scheduler): the scheduler claims due URLs, highest
//! `download_prio` first; each is re-indexed from the archive when it was downloaded less than
//! `steady_level` days ago, else handed to the [`downloader`]; what comes back is appended to the
//! [`archive`], made durable, and only then booked in `url` (`hits = 0`, `next_indexed`,
//! `steady_level`: [`bookkeeping`]), releasing the claim. Bookings are gathered and written
//! together (one fsync of the archive, one statement and one commit for up to `Crawl.BookBatch`
//! URLs). The fetcher's news of each host go into the record per host ([`hosts`]) in the same
//! transaction.

pub mod archive;
pub mod book;
pub mod bookkeeping;
pub mod compact;
pub mod downloader;
pub mod fetch;
pub mod floor;
pub mod hand;
pub mod hosts;
pub mod mirror;
mod outcome;
mod probes;
mod stats;
mod take;
pub mod withdraw;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use chrono::{NaiveDateTime, TimeDelta};
use focuser_daemon::{clock, Config, Signal};
use focuser_schema::models::{BindingDict, Host, Url};

use archive::Archive;
use book::{Booking, Env};
use downloader::{Completed, Downloader, FetchStats};
use floor::Floor;
use hand::{Hand, Limits};
use hosts::HostNews;
pub use stats::{CrawlStats, ErrorRow};
use withdraw::Withdrawer;

use crate::config::{YacobotConfig, MIRROR};
use crate::status::add;
use crate::worker::{Ctx, Step, Worker};

/// The longest a `perform` waits while fetches are in flight.
const PERFORM_WAIT: Duration = Duration::from_millis(100);
/// How often the newest dictionary's load time is read (for `Url.DictAge`).
const DICT_EVERY: Duration = Duration::from_secs(60);
/// How often the pages fetched are sampled for the fetch rate.
const SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// The worker.
pub struct Crawler {
    stats: Arc<CrawlStats>,
    /// `node/pid`: what this process writes in `url.claimed_by`.
    owner: String,
    downloader: Box<dyn Downloader>,
    archive: Option<Archive>,
    /// The archive's retention floor, published for the reader.
    floor: Option<Floor>,
    /// URLs claimed and handed to the downloader.
    hand: Hand,
    /// No URL was due at the last look: the next one is not before this.
    idle_until: Option<Instant>,
    /// New `Fetch.*` settings wait for the downloader to empty: no URL is claimed meanwhile.
    reconfiguring: bool,
    /// The downloader's counters already added to the status figures.
    seen: FetchStats,
    /// Finished (archived, not yet synced) and waiting to be booked, and since when (or since
    /// the oldest host news waiting to be written with them).
    unbooked: Vec<Booking>,
    unbooked_since: Option<Instant>,
    /// The fetcher's news of each host, written with the next bookings.
    news: HostNews,
    /// SIGUSR1: the archive's segment is sealed at the next step.
    rotate: bool,
    sampled: Instant,
    /// When the newest dictionary in SQL was loaded (`yacobot dict load`), and when that was
    /// last looked at.
    dict_loaded: Option<NaiveDateTime>,
    dict_looked: Option<Instant>,
    /// Announces the URLs marked for withdrawal with `DELETE` items and removes them.
    withdrawer: Withdrawer,
    /// URLs claimed since start, due ones and qargfilter's probes (which stay within
    /// `Qargfilter.ProbeShare` of the due ones).
    claimed_due: u64,
    claimed_probes: u64,
}

/// The clock and settings of one batch of bookings; `loaded`: when the newest dictionary in
/// SQL was loaded.
fn env(cfg: &Config<YacobotConfig>, loaded: Option<NaiveDateTime>) -> Env<'_> {
    let u = &cfg.daemon.url;
    let dict = u.dict_file.as_ref().map(|p| cfg.common.path(p));
    let now = clock::db_now();
    let age = bookkeeping::newest(
        bookkeeping::dictionary_age(dict.as_deref(), SystemTime::now()),
        bookkeeping::loaded_age(loaded, now),
    );
    Env {
        now,
        url: u,
        retry_later: cfg.daemon.crawl.retry_later,
        dictionary_days: bookkeeping::dictionary_days(age, u),
    }
}

impl Worker for Crawler {
    const NAME: &'static str = "crawl";
    type Figures = CrawlStats;

    fn enabled(cfg: &YacobotConfig) -> bool {
        cfg.crawl.enable
    }

    fn open(ctx: &Arc<Ctx>, stats: Arc<CrawlStats>) -> anyhow::Result<Crawler> {
        let cfg = ctx.config();
        let d = &cfg.daemon;
        let store = crate::multidoc::store_name(&cfg.common.path(&d.archive.dir));
        let archive = if d.archive.enable {
            let dir = cfg.common.path(&d.archive.dir);
            let a = Archive::open(&dir, d.segment.writer_options())
                .with_context(|| format!("opening the archive {}", dir.display()))?;
            if let Ok(mut slot) = stats.archive_dir.lock() {
                *slot = Some(dir);
            }
            Some(a)
        } else {
            None
        };
        let downloader: Box<dyn Downloader> = if d.fetch.backend == MIRROR {
            let dir = cfg.common.path(&d.fetch.mirror_dir);
            Box::new(mirror::Mirror::new(dir, &d.fetch))
        } else {
            let auth = d
                .fetch
                .proxy_auth(&cfg.common)
                .map_err(anyhow::Error::msg)?;
            Box::new(fetch::Curl::new(&d.fetch, auth)?)
        };
        Ok(Crawler {
            stats,
            owner: format!("{}/{}", d.node, std::process::id()),
            downloader,
            floor: archive.as_ref().map(|a| Floor::new(a.dir())),
            archive,
            hand: Hand::default(),
            idle_until: None,
            reconfiguring: false,
            seen: FetchStats::default(),
            unbooked: Vec::new(),
            unbooked_since: None,
            news: HostNews::default(),
            rotate: false,
            sampled: Instant::now() - SAMPLE_EVERY,
            dict_loaded: None,
            dict_looked: None,
            withdrawer: Withdrawer::new(&d.node, &store),
            claimed_due: 0,
            claimed_probes: 0,
        })
    }

    fn step(&mut self, ctx: &Ctx, once: bool) -> anyhow::Result<Step> {
        let cfg = ctx.config();
        self.housekeeping(ctx, &cfg)?;
        self.look_at_dictionaries(ctx)?;
        self.reconfigure(&cfg);
        let claimed_now = self.refill(ctx, &cfg, once)?;
        let wait = if self.hand.is_empty() {
            // `--once` ends when a look found nothing and no URL is due and unclaimed: a
            // look may come back empty while another crawler's claim transaction holds
            // the rows (SKIP LOCKED).
            if once && claimed_now == 0 {
                let now = clock::db_now();
                let due = ctx
                    .db
                    .run("counting due URLs", |c| Url::count_due(c, now))?;
                if due == 0 {
                    // What was fetched is booked, and the URLs marked for withdrawal go.
                    let bookings = std::mem::take(&mut self.unbooked);
                    self.unbooked_since = None;
                    self.commit(ctx, bookings)?;
                    if self.withdraw(ctx, &cfg, true)? > 0 {
                        return Ok(Step::Busy);
                    }
                    return Ok(Step::Done);
                }
            }
            Duration::from_millis(250)
        } else {
            PERFORM_WAIT
        };
        let wait = match self.book_due(&cfg) {
            Some(at) => wait.min(at.saturating_duration_since(Instant::now())),
            None => wait,
        };
        let done = self.downloader.perform(wait)?;
        self.finish(&cfg, done)?;
        self.note_hosts(&cfg);
        self.book_if_due(ctx, &cfg)?;
        self.withdraw(ctx, &cfg, false)?;
        self.figures();
        Ok(Step::Busy)
    }

    fn on_signal(&mut self, signal: Signal) -> bool {
        let rotate = signal == Signal::Rotate;
        self.rotate |= rotate;
        rotate
    }

    /// Gives back the claims in hand and closes the archive.
    fn close(mut self, ctx: &Ctx) {
        let s = &self.stats;
        let n = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        let errors: u64 = s.errors.lock().map(|e| e.values().sum()).unwrap_or(0);
        log::info!(
            "crawl: {} pages fetched, {} re-indexed from the archive, {} gone, {errors} fetch errors",
            n(&s.pages),
            n(&s.from_archive),
            n(&s.gone)
        );
        // What was fetched is booked before the other claims are given back (one try: a
        // database that is away leaves them claimed, to be taken back when they lapse). What
        // cannot be booked (the archive failed, the database is away) is fetched again.
        self.note_hosts(&ctx.config());
        let bookings = std::mem::take(&mut self.unbooked);
        if let Err(e) = self.commit(ctx, bookings) {
            log::warn!("fetched URLs not booked (they are fetched again): {e:#}");
        }
        let owner = self.owner.clone();
        // Stopping: one try, without waiting for a database that is away.
        match ctx
            .db
            .run("releasing claims", |c| Url::release_claims(c, &owner))
        {
            Ok(n) if n > 0 => log::info!("released {n} claims"),
            Ok(_) => {}
            Err(e) => log::warn!("claims not released (they expire by themselves): {e}"),
        }
        // The floor first: its compaction appends to the archive.
        self.tend_floor(ctx, &ctx.config(), true);
        if let Some(a) = self.archive.take() {
            if let Err(e) = a.close() {
                log::error!("archive: {e}");
            }
        }
    }
}

impl Crawler {
    /// Hands reloaded `Fetch.*` settings to the downloader; refused ones (the config was
    /// checked at reload, so rarely) keep the running settings.
    fn reconfigure(&mut self, cfg: &Config<YacobotConfig>) {
        match self.downloader.reconfigure(&cfg.daemon.fetch) {
            Ok(done) => self.reconfiguring = !done,
            Err(e) => {
                log::error!("new Fetch.* settings refused, the running ones stay: {e}");
                self.reconfiguring = false;
            }
        }
    }

    /// A batch of withdrawals when one is due (`now`: at once) and nothing fetched waits to be
    /// booked (see [`withdraw`]); returns the URLs it took.
    fn withdraw(
        &mut self,
        ctx: &Ctx,
        cfg: &Config<YacobotConfig>,
        now: bool,
    ) -> anyhow::Result<usize> {
        if !self.unbooked.is_empty() || !self.withdrawer.due(now) {
            return Ok(0);
        }
        let ttl = cfg.daemon.crawl.claim_ttl;
        self.withdrawer
            .step(ctx, self.archive.as_mut(), ttl, &self.stats)
    }

    /// The downloader's figures into the status page's.
    fn figures(&mut self) {
        let s = &self.stats;
        if self.sampled.elapsed() >= SAMPLE_EVERY {
            self.sampled = Instant::now();
            s.sample_pages();
        }
        let now = self.downloader.stats();
        if now.transfers < self.seen.transfers {
            // A new downloader (reconfigured): its counters start from zero.
            self.seen = FetchStats::default();
        }
        let seen = &self.seen;
        add(&s.transfers, now.transfers - seen.transfers);
        add(&s.retries, now.retries - seen.retries);
        add(&s.redirects, now.redirects - seen.redirects);
        add(&s.robots_fetches, now.robots_fetches - seen.robots_fetches);
        add(&s.robots_seeded, now.robots_seeded - seen.robots_seeded);
        add(&s.host_waits, now.host_waits - seen.host_waits);
        let waited = now.host_wait_time.saturating_sub(seen.host_wait_time);
        add(&s.host_wait_ms, waited.as_millis() as u64);
        s.in_flight
            .store(self.downloader.in_flight() as u64, Ordering::Relaxed);
        s.pending.store(self.hand.len() as u64, Ordering::Relaxed);
        s.hosts.store(now.hosts as u64, Ordering::Relaxed);
        self.seen = now;
    }

    /// Seals the archive's segment on SIGUSR1 or when it is `Segment.MaxAge` old.
    /// When the newest dictionary was loaded into SQL: looked at every `DICT_EVERY`.
    fn look_at_dictionaries(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        if self.dict_looked.is_some_and(|t| t.elapsed() < DICT_EVERY) {
            return Ok(());
        }
        self.dict_loaded = ctx.db.run(
            "reading when the newest dictionary was loaded",
            BindingDict::newest_loaded_at,
        )?;
        self.dict_looked = Some(Instant::now());
        Ok(())
    }

    /// Publishes the archive's retention floor when due, or `now`.
    fn tend_floor(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>, now: bool) {
        let d = &cfg.daemon;
        // Nor above a copy whose booking is still pending: its row does not point at it yet,
        // so the compaction would not see it.
        let pending = self.unbooked.iter().filter_map(Booking::archived_at).min();
        let reading = || {
            let at = floor::analysis_at(ctx, cfg)?;
            Ok(at.into_iter().chain(pending).min())
        };
        let archive = self.archive.as_mut();
        let compact = |from, below| match archive {
            Some(a) => compact::compact(a, ctx, from, below).map(|_| ()),
            // Stopping: the archive is closed; the floor stays until the next start.
            None => Err(anyhow::anyhow!("the archive is closed: not compacted")),
        };
        if let Some(floor) = self.floor.as_mut() {
            floor.tend(
                d.url.steady_max,
                d.archive.keep_bytes,
                now,
                reading,
                compact,
            );
            if let Some(id) = floor.published() {
                self.stats.archive_floor.store(id, Ordering::Relaxed);
            }
        }
    }

    fn housekeeping(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>) -> anyhow::Result<()> {
        let rotate = std::mem::take(&mut self.rotate);
        let Some(archive) = self.archive.as_mut() else {
            return Ok(());
        };
        let sealed = if rotate {
            let sealed = archive.seal()?;
            if sealed {
                log::info!("archive: segment sealed (SIGUSR1)");
            } else {
                log::info!("archive: SIGUSR1, but the active segment is empty: nothing to seal");
            }
            sealed
        } else {
            archive.seal_if_due()?
        };
        if sealed {
            add(&self.stats.segments_sealed, 1);
        }
        self.tend_floor(ctx, cfg, sealed);
        Ok(())
    }

    /// Claims due URLs when the downloader needs more (see [`hand`]). Returns how many were
    /// claimed.
    fn refill(
        &mut self,
        ctx: &Ctx,
        cfg: &Config<YacobotConfig>,
        once: bool,
    ) -> anyhow::Result<usize> {
        let d = &cfg.daemon;
        let limits = Limits {
            connections: d.fetch.connections as usize,
            pending: d.fetch.pending,
            claim_batch: d.crawl.claim_batch as usize,
            per_domain: d.crawl.per_domain as usize,
        };
        let room = self.hand.to_claim(
            &limits,
            self.downloader.in_flight(),
            self.downloader.ready_hosts(),
        );
        // Nothing was due at the last look: not again before `Crawl.Idle` (`--once`: not
        // before the hand is empty, when it looks a last time).
        let idle =
            self.idle_until.is_some_and(|t| Instant::now() < t) && !(once && self.hand.is_empty());
        if room == 0 || idle || self.reconfiguring {
            return Ok(0);
        }
        let now = clock::db_now();
        let expires = now + TimeDelta::seconds(d.crawl.claim_ttl as i64);
        let limit = room;
        let owner = self.owner.clone();
        let skip = self.hand.full_domains(&limits);
        let mut refused = false;
        let hand = &self.hand;
        let claimed = ctx.db.run("claiming due URLs", |c| {
            // Counted afresh by each try of the transaction.
            let mut taken = rustc_hash::FxHashMap::default();
            refused = false;
            Url::claim_due(
                c,
                now,
                &owner,
                expires,
                limit as i64,
                &skip,
                &mut |domain| {
                    let fits = hand.fits(&limits, &mut taken, domain);
                    refused |= !fits;
                    fits
                },
            )
        })?;
        self.hand
            .claimed(limit, claimed.urls.len(), refused || !skip.is_empty());
        if claimed.taken_back > 0 {
            log::warn!(
                "took back {} URLs whose claim had expired (a crawler died mid-fetch?)",
                claimed.taken_back
            );
            add(&self.stats.claims_taken_back, claimed.taken_back as u64);
        }
        let n = claimed.urls.len();
        // Nothing due at all (not merely the domains at their share): look again later.
        let nothing_due = n == 0 && !refused && skip.is_empty();
        self.idle_until = nothing_due.then(|| Instant::now() + Duration::from_secs(d.crawl.idle));
        self.take(ctx, cfg, claimed.urls, now)?;
        self.claimed_due += n as u64;
        let probes = self.claim_probes(ctx, cfg, room.saturating_sub(n))?;
        Ok(n + probes)
    }

    /// Archives what completed; it is booked with the next batch.
    fn finish(&mut self, cfg: &Config<YacobotConfig>, done: Vec<Completed>) -> anyhow::Result<()> {
        if done.is_empty() {
            return Ok(());
        }
        let env = env(cfg, self.dict_loaded);
        let mut bookings = Vec::with_capacity(done.len());
        for c in done {
            let Some(u) = self.hand.remove(c.request.token) else {
                log::warn!("downloader returned an unknown token for {}", c.request.url);
                continue;
            };
            let archive = self.archive.as_mut();
            bookings.push(outcome::booking(archive, &self.stats, &u, c, &env)?);
        }
        self.gather(bookings);
        Ok(())
    }

    fn gather(&mut self, bookings: Vec<Booking>) {
        if self.unbooked_since.is_none() {
            self.unbooked_since = Some(Instant::now());
        }
        self.unbooked.extend(bookings);
    }

    /// Takes the downloader's news of each host, for the record per host (`Hosts.Enable`; off,
    /// they are dropped).
    fn note_hosts(&mut self, cfg: &Config<YacobotConfig>) {
        let reports = self.downloader.host_reports();
        let h = &cfg.daemon.hosts;
        if reports.is_empty() || !h.enable {
            return;
        }
        self.news.note(reports, clock::db_now(), h.robots_bytes);
        if self.unbooked_since.is_none() {
            self.unbooked_since = Some(Instant::now());
        }
    }

    /// When the bookings gathered must be written at the latest.
    fn book_due(&self, cfg: &Config<YacobotConfig>) -> Option<Instant> {
        let ms = cfg.daemon.crawl.book_ms;
        self.unbooked_since.map(|t| t + Duration::from_millis(ms))
    }

    /// Books what was gathered if there is a batch of it, if the oldest has waited
    /// `Crawl.BookMs`, or if nothing else is being fetched (nothing to wait for).
    /// (The host news too: their bookings' transaction writes them, or they are written alone
    /// on the same terms, or at once past `Hosts.Pending` hosts.)
    fn book_if_due(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>) -> anyhow::Result<()> {
        let n = self.unbooked.len();
        let due = n >= cfg.daemon.crawl.book_batch as usize
            || self.news.len() >= cfg.daemon.hosts.pending
            || self.book_due(cfg).is_some_and(|t| Instant::now() >= t)
            || self.downloader.pending() == 0;
        if (n == 0 && self.news.is_empty()) || !due {
            return Ok(());
        }
        let bookings = std::mem::take(&mut self.unbooked);
        self.unbooked_since = None;
        self.commit(ctx, bookings)
    }

    /// Makes the archive durable, then writes the bookings and the host news in one
    /// transaction.
    fn commit(&mut self, ctx: &Ctx, bookings: Vec<Booking>) -> anyhow::Result<()> {
        if bookings.is_empty() && self.news.is_empty() {
            return Ok(());
        }
        if let (Some(a), false) = (self.archive.as_mut(), bookings.is_empty()) {
            a.sync()?;
        }
        let owner = self.owner.clone();
        let rows: Vec<_> = bookings.iter().map(|b| (b.id, b.changes())).collect();
        let hosts = self.news.rows();
        let now = clock::db_now();
        let mut record_time = Duration::ZERO;
        let written = ctx.db.run("booking fetched URLs", |c| {
            diesel::Connection::transaction(c, |c| {
                let written = Url::finish_batch(c, &owner, &rows)?;
                let t = Instant::now();
                Host::record_batch(c, &hosts, now)?;
                record_time = t.elapsed();
                Ok(written)
            })
        })?;
        if !hosts.is_empty() {
            add(&self.stats.host_rows, hosts.len() as u64);
            add(&self.stats.host_record_us, record_time.as_micros() as u64);
        }
        drop(hosts);
        self.news.clear();
        let lost = rows.len().saturating_sub(written) as u64;
        if lost > 0 {
            log::warn!("{lost} URLs had lost their claim to another crawler before being booked");
            add(&self.stats.claims_lost, lost);
        }
        Ok(())
    }
}
