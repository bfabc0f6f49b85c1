//! The resources worker (docs/design.md#yacobot-resources): partner data feeds, after the source's
//! ScanTask → UrlUpdateTask → FetchTask → WriteTask → MysqlHandlerTask.
//!
//! One thread (this module) scans for due resources every `Resources.ScanInterval` s and
//! claims them, fetches their sitemaps ([`sitemaps`]) and brings `resource_status` in line,
//! then fetches every feed URL through its own focuser-fetch fetcher (politeness, robots.txt,
//! retries), never one URL twice at once. Fetched feeds go to the write stage ([`write`]:
//! `Resources.Writers` threads that parse, diff and write with the crash-safe protocol of
//! [`store`], and a thread that reads each run's stored items ahead, [`known`]); fetching waits
//! while more than five times that many feeds are queued. A resource an operator disabled or
//! removed is claimed like a run and withdrawn by a writer ([`withdraw`]). A thread writes a
//! store's live items again when a reader rebuilding a receiver asks for them ([`snapshot`]).

mod account;
mod changes;
mod customer;
mod digests;
mod known;
mod locations;
mod run;
mod sitemaps;
mod snapshot;
mod stats;
mod store;
mod withdraw;
mod write;

pub use locations::read_locations;
pub use stats::ResourceStats;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use chrono::TimeDelta;
use focuser_daemon::{clock, Config, Signal};
use focuser_fetch::{Completed, Fetcher, ProxyAuth, Request};
use focuser_schema::models::{ProcessTimestamp, ResStatus, VrResource};

use crate::config::YacobotConfig;
use crate::status::add;
use crate::worker::{Ctx, Step, Worker};
use locations::LocationList;
use run::{FeedJob, Run};
use snapshot::Snapshots;
use store::Store;
use write::{WriteMsg, WritePool};

/// The longest a `perform` waits while fetches are in flight.
const PERFORM_WAIT: Duration = Duration::from_millis(100);

/// What a fetcher token stands for.
enum Job {
    Sitemap { run: u64, source: usize },
    Feed(FeedJob),
}

/// The worker.
pub struct Resources {
    stats: Arc<ResourceStats>,
    /// `node/pid`: what this process writes in `vr_resource.claimed_by`.
    owner: String,
    node: String,
    fetcher: Fetcher,
    /// `Fetch.ProxyAuthFile`'s credentials, read at start.
    proxy_auth: Option<ProxyAuth>,
    store: Arc<Store>,
    pool: WritePool,
    /// Writes the live items again for a reader's resend.
    snapshots: Snapshots,
    /// Runs in their sitemap stage, by `process_timestamp.id`.
    runs: HashMap<u64, Run>,
    jobs: HashMap<u64, Job>,
    next_token: u64,
    /// Feed URLs waiting for the fetcher, in order.
    waiting: VecDeque<FeedJob>,
    /// URLs being fetched now (the source's "fetch map").
    in_flight: HashSet<String>,
    next_scan: Instant,
    next_extend: Instant,
    /// `--once`: the one scan is done.
    scanned: bool,
    /// SIGUSR1: the store's segment is sealed at the next step.
    rotate: bool,
    /// `Resources.LocationFile` in force.
    locations: LocationList,
}

/// With `--once`: one scan, and every run it started taken to its end.
impl Worker for Resources {
    const NAME: &'static str = "resources";
    type Figures = ResourceStats;

    fn enabled(cfg: &YacobotConfig) -> bool {
        cfg.resources.enable
    }

    fn open(ctx: &Arc<Ctx>, stats: Arc<ResourceStats>) -> anyhow::Result<Resources> {
        let cfg = ctx.config();
        let d = &cfg.daemon;
        let dir = cfg.common.path(&d.resources.dir);
        let multi_dir = cfg.common.path(&d.resources.multi_hit_dir);
        let store = Store::open(&dir, &multi_dir, d.segment.writer_options())
            .with_context(|| format!("opening the resources store {}", dir.display()))?;
        let proxy_auth = d.fetch.proxy_auth(&cfg.common).map_err(|e| anyhow!(e))?;
        let mut locations = LocationList::default();
        locations.refresh(location_file(&cfg))?;
        let fetcher = Fetcher::new(fetch_settings(&cfg, &proxy_auth).map_err(|e| anyhow!(e))?)?;
        let owner = format!("{}/{}", d.node, std::process::id());
        let store = Arc::new(store);
        let writers = d.resources.writers as usize;
        let pool = WritePool::start(ctx, Arc::clone(&stats), Arc::clone(&store), writers)?;
        let snapshots = Snapshots::start(ctx, &store, &stats)?;
        let w = Resources {
            stats,
            owner,
            node: d.node.clone(),
            fetcher,
            proxy_auth,
            store,
            pool,
            snapshots,
            runs: HashMap::new(),
            jobs: HashMap::new(),
            next_token: 1,
            waiting: VecDeque::new(),
            in_flight: HashSet::new(),
            next_scan: Instant::now(),
            next_extend: Instant::now() + Duration::from_secs(d.resources.claim_ttl / 3),
            scanned: false,
            rotate: false,
            locations,
        };
        // A process of this node that died (kill -9) left its claims: take them back, so
        // that its interrupted runs are done again now rather than after their claims lapse.
        let (node, owner) = (w.node.clone(), w.owner.clone());
        let n = ctx
            .db
            .run("taking back a dead process's resource claims", |c| {
                VrResource::release_node_claims(
                    c,
                    &node,
                    &owner,
                    "interrupted: the process running it died; run again",
                )
            })?;
        if n > 0 {
            log::warn!("resources: took back {n} claims of a process of this node that died");
        }
        Ok(w)
    }

    fn step(&mut self, ctx: &Ctx, once: bool) -> anyhow::Result<Step> {
        let cfg = ctx.config();
        self.store.housekeeping(std::mem::take(&mut self.rotate))?;
        if !(once && self.scanned) && Instant::now() >= self.next_scan {
            self.scan(ctx, &cfg)?;
            self.scanned = true;
            self.next_scan =
                Instant::now() + Duration::from_secs(cfg.daemon.resources.scan_interval);
        }
        self.extend_claims(ctx, &cfg);
        self.reconfigure(&cfg);
        self.submit(&cfg);
        self.stats
            .running
            .store(self.pool.active_runs() as u64, Ordering::Relaxed);
        let idle = self.runs.is_empty() && self.fetcher.pending() == 0;
        if once && idle && self.waiting.is_empty() && self.pool.active_runs() == 0 {
            self.pool.take_error()?;
            return Ok(Step::Done);
        }
        if self.fetcher.pending() == 0 {
            self.pool.check()?;
            return Ok(Step::Idle(Duration::from_millis(if once {
                20
            } else {
                200
            })));
        }
        for c in self.fetcher.perform(PERFORM_WAIT)? {
            self.completed(ctx, c)?;
        }
        self.pool.check()?;
        Ok(Step::Busy)
    }

    fn on_signal(&mut self, signal: Signal) -> bool {
        let rotate = signal == Signal::Rotate;
        self.rotate |= rotate;
        rotate
    }

    /// Stops the write stage (runs not finished are given back) and closes the store.
    fn close(self, ctx: &Ctx) {
        self.pool.stop();
        self.snapshots.stop();
        let owner = self.owner.clone();
        match ctx.db.run("releasing resource claims", |c| {
            VrResource::release_claims(c, &owner, "interrupted: yacobot stopped; run again")
        }) {
            Ok(n) if n > 0 => log::info!("resources: released {n} claims"),
            Ok(_) => {}
            Err(e) => log::warn!("resource claims not released (they lapse by themselves): {e}"),
        }
        match Arc::try_unwrap(self.store) {
            Ok(store) => {
                if let Err(e) = store.close() {
                    log::error!("resources store: {e:#}");
                }
            }
            Err(_) => log::error!("resources store still in use at close"),
        }
    }
}

impl Resources {
    /// `Fetch.*` changed by a reload: a new fetcher once the old one has nothing pending (the
    /// crawl worker does the same with its own).
    fn reconfigure(&mut self, cfg: &Config<YacobotConfig>) {
        match fetch_settings(cfg, &self.proxy_auth) {
            Ok(settings) if &settings != self.fetcher.config() && self.fetcher.pending() == 0 => {
                match Fetcher::new(settings) {
                    Ok(f) => {
                        self.fetcher = f;
                        log::info!("resources: new Fetch.* settings in use");
                    }
                    Err(e) => log::error!("resources: new Fetch.* settings refused: {e}"),
                }
            }
            Ok(_) => {}
            // validate() has refused such a config before it became the running one.
            Err(e) => log::error!("resources: Fetch.* settings refused: {e}"),
        }
    }

    fn token(&mut self, job: Job) -> u64 {
        let t = self.next_token;
        self.next_token += 1;
        self.jobs.insert(t, job);
        t
    }

    /// Claims due resources while fewer than `Resources.Parallel` run, and starts them.
    fn scan(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>) -> anyhow::Result<()> {
        // For the status page, which shows the resources in error of every node.
        match ctx
            .db
            .run("counting resources in error", VrResource::count_in_error)
        {
            Ok(n) => self.stats.set_in_error(n.max(0) as u64),
            Err(e) => log::debug!("resources in error not counted: {e}"),
        }
        if let Err(e) = self.locations.refresh(location_file(cfg)) {
            add(&self.stats.location_files_refused, 1);
            log::error!("resources: location list refused, the list in force stays: {e:#}");
        }
        let r = &cfg.daemon.resources;
        let room = (r.parallel as usize).saturating_sub(self.pool.active_runs());
        if room == 0 {
            return Ok(());
        }
        let now = clock::db_now();
        let expires = now + TimeDelta::seconds(r.claim_ttl as i64);
        let owner = self.owner.clone();
        let claimed = ctx.db.run("claiming due resources", |c| {
            VrResource::claim_due(c, now, &owner, expires, room as i64)
        })?;
        for c in claimed {
            let withdrawal = match c.resource.res_status {
                ResStatus::Withdrawing => Some("withdrawal"),
                ResStatus::Removing => Some("removal"),
                _ => None,
            };
            log::info!(
                "resource {} \"{}\": {} {} started{}",
                c.resource.id,
                c.resource.res_name,
                withdrawal.unwrap_or("run"),
                c.run.id,
                if c.manual { " (asked for)" } else { "" }
            );
            let res_id = c.resource.id;
            let current = c.run.id;
            ctx.db.run("closing interrupted runs", |conn| {
                ProcessTimestamp::close_interrupted(conn, res_id, current)
            })?;
            let rec = self.store.recover(ctx, res_id, c.resource.class_id)?;
            add(&self.stats.emitted, rec.emitted as u64);
            add(&self.stats.unknown_update_types, rec.unknown_types as u64);
            if rec.pending > 0 {
                log::warn!(
                    "resource {res_id}: an interrupted run left {} changes not marked emitted; {} of them were not in the store and are emitted now",
                    rec.pending,
                    rec.emitted
                );
            }
            self.pool.started(res_id);
            if withdrawal.is_some() {
                self.pool.send(WriteMsg::Withdraw(Box::new(c)));
                continue;
            }
            match Run::start(ctx, c, self.locations.current()) {
                Ok(run) => {
                    let id = run.claimed.run.id;
                    for (source, url) in run.sitemap_requests() {
                        let token = self.token(Job::Sitemap { run: id, source });
                        self.fetcher.submit(Request { token, url });
                    }
                    if run.sitemaps_pending == 0 {
                        self.sitemaps_done(ctx, run)?;
                    } else {
                        self.runs.insert(id, run);
                    }
                }
                Err(shared) => self.pool.send(WriteMsg::Finish(Arc::from(shared))),
            }
        }
        Ok(())
    }

    /// Hands waiting feed URLs to the fetcher while it has room and the write stage is not
    /// behind; a URL already being fetched (for another resource) waits its turn.
    fn submit(&mut self, cfg: &Config<YacobotConfig>) {
        let limit = 5 * cfg.daemon.resources.writers as usize;
        let mut deferred = Vec::new();
        while self.fetcher.pending() < self.fetcher.capacity() && self.pool.queued() <= limit {
            let Some(job) = self.waiting.pop_front() else {
                break;
            };
            if self.in_flight.contains(&job.url) {
                deferred.push(job);
                continue;
            }
            // Counted as queued from now, so that back-pressure sees fetches in flight too.
            self.pool.reserve();
            self.in_flight.insert(job.url.clone());
            let url = job.url.clone();
            let token = self.token(Job::Feed(job));
            self.fetcher.submit(Request { token, url });
        }
        for job in deferred.into_iter().rev() {
            self.waiting.push_front(job);
        }
    }

    fn completed(&mut self, ctx: &Ctx, c: Completed) -> anyhow::Result<()> {
        match self.jobs.remove(&c.request.token) {
            Some(Job::Sitemap { run, source }) => {
                let Some(mut r) = self.runs.remove(&run) else {
                    return Ok(());
                };
                let children = r.sitemap_done(source, c);
                for url in children {
                    let token = self.token(Job::Sitemap { run, source });
                    self.fetcher.submit(Request { token, url });
                }
                if r.sitemaps_pending == 0 {
                    self.sitemaps_done(ctx, r)?;
                } else {
                    self.runs.insert(run, r);
                }
            }
            Some(Job::Feed(job)) => {
                self.in_flight.remove(&job.url);
                self.pool.send_reserved(WriteMsg::Feed(Box::new((job, c))));
            }
            None => log::warn!("resources: the fetcher returned an unknown token"),
        }
        Ok(())
    }

    /// Every sitemap of the run is in: `resource_status` brought in line, feeds queued.
    fn sitemaps_done(&mut self, ctx: &Ctx, run: Run) -> anyhow::Result<()> {
        let (shared, feeds) = run.finish_sitemaps(ctx, &self.stats)?;
        if feeds.is_empty() {
            self.pool.send(WriteMsg::Finish(shared));
        } else {
            self.pool.read_ahead(shared);
            self.waiting.extend(feeds);
        }
        Ok(())
    }

    /// Renews the claims of the runs in hand every third of `Resources.ClaimTtl`.
    fn extend_claims(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>) {
        if Instant::now() < self.next_extend {
            return;
        }
        let ttl = cfg.daemon.resources.claim_ttl;
        self.next_extend = Instant::now() + Duration::from_secs(ttl / 3);
        let expires = clock::db_now() + TimeDelta::seconds(ttl as i64);
        for id in self.pool.running() {
            let owner = self.owner.clone();
            match ctx.db.run("renewing a resource claim", |c| {
                VrResource::extend_claim(c, id, &owner, expires)
            }) {
                Ok(true) => {}
                Ok(false) => log::warn!("resource {id}: its claim was lost to another worker"),
                Err(e) => log::warn!("resource {id}: claim not renewed: {e}"),
            }
        }
    }
}

/// `Resources.LocationFile`, as a path.
fn location_file(cfg: &Config<YacobotConfig>) -> Option<std::path::PathBuf> {
    let file = cfg.daemon.resources.location_file.as_ref()?;
    Some(cfg.common.path(file))
}

/// The fetcher's settings for feeds: the crawl's `Fetch.*`, but any declared type (feeds are
/// XML, sitemaps text), `Resources.MaxBytes` (feeds are larger than pages), the hosts with a
/// politeness of their own (`Resources.HostDelay`, `Resources.PerHost`), and the proxy's
/// credentials.
fn fetch_settings(
    cfg: &Config<YacobotConfig>,
    proxy_auth: &Option<ProxyAuth>,
) -> Result<focuser_fetch::FetchConfig, String> {
    let mut settings = cfg.daemon.fetch.fetcher()?;
    settings.allowed_types = Vec::new();
    settings.max_bytes = cfg.daemon.resources.max_bytes;
    settings.host_politeness = cfg.daemon.resources.politeness()?;
    settings.proxy_auth = proxy_auth.clone();
    Ok(settings)
}
