//! The path binder (`PathBinder.Enable`; docs/bindings.md "The path binder", docs/operations.md
//! "yacobot: path binder"): every `PathBinder.Interval` seconds a pass over the stored bindings
//! (`binding_page`), one routing domain at a time so that memory holds one domain's bindings,
//! never all: a stub for each site section with at least `PathBinder.MinUrls` bound pages
//! (`focuser_bind::path`), and each host's insignificant query arguments (`path_arg_name`
//! rows with `significant = 0`) as a `query_args` item. What changed since the last pass is
//! appended to the stubs store and then written to `path_stub` ([`store`]): unchanged items
//! are not shipped again, ones no longer built are withdrawn.

pub mod stats;
pub mod store;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use focuser_bind::adserver::QueryArgs;
use focuser_bind::binding::md5_hex;
use focuser_bind::path::{self, Rules};
use focuser_bind::{Item, PageBinding};
use focuser_daemon::clock;
use focuser_daemon::db::Database;
use focuser_formats::segment::Position;
use focuser_schema::models::{BindingPosition, PathStub};

use crate::config::YacobotConfig;
use crate::worker::{Ctx, Step, Worker};
pub use stats::PathStats;
use store::{Change, StubStore};

pub struct PathBinder {
    store: StubStore,
    node: String,
    stats: Arc<PathStats>,
    /// The pass under way: the last domain done (`None`: no pass under way).
    after: Option<String>,
    /// When the next pass starts.
    next: Instant,
    /// Stubs built by the pass under way.
    built: u64,
}

impl Worker for PathBinder {
    const NAME: &'static str = "pathbinder";
    type Figures = PathStats;

    fn enabled(cfg: &YacobotConfig) -> bool {
        cfg.pathbinder.enable
    }

    fn open(ctx: &Arc<Ctx>, stats: Arc<PathStats>) -> anyhow::Result<PathBinder> {
        let cfg = ctx.config();
        let dir = cfg.common.path(&cfg.daemon.pathbinder.dir);
        let store = StubStore::open(
            &dir,
            cfg.daemon.segment.writer_options(),
            &ctx.db,
            &cfg.daemon.node,
        )?;
        log::info!("path binder: appending changed stubs to {}", store.name);
        Ok(PathBinder {
            store,
            node: cfg.daemon.node.clone(),
            stats,
            after: None,
            next: Instant::now(),
            built: 0,
        })
    }

    fn step(&mut self, ctx: &Ctx, once: bool) -> anyhow::Result<Step> {
        self.store.housekeeping()?;
        let cfg = ctx.config().daemon.pathbinder;
        if self.after.is_none() {
            let wait = self.next.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                return Ok(Step::Idle(wait));
            }
            self.after = Some(String::new());
            self.built = 0;
        }
        let rules = Rules {
            depth: cfg.depth,
            min_urls: cfg.min_urls,
            ..Rules::default()
        };
        let after = self.after.clone().unwrap_or_default();
        let next = match ctx.db.run("path binder: next domain", |c| {
            PathStub::next_domain(c, &after)
        }) {
            Ok(n) => n,
            Err(e) => return Ok(Step::Failed(e.into())),
        };
        let done = match next {
            Some(domain) => self.domain(&ctx.db, &domain, &rules).map(|()| {
                self.after = Some(domain);
                false
            }),
            None => self.finish(&ctx.db).map(|()| true),
        };
        match done {
            Ok(false) => Ok(Step::Busy),
            Ok(true) => {
                let interval = Duration::from_secs(cfg.interval);
                self.after = None;
                self.next = Instant::now() + interval;
                self.stats.count(&self.stats.passes, 1);
                self.stats.last_stubs.store(self.built, Ordering::Relaxed);
                log::info!("path binder: pass done, {} stubs built", self.built);
                Ok(if once {
                    Step::Done
                } else {
                    Step::Idle(interval)
                })
            }
            Err(e) => Ok(Step::Failed(e)),
        }
    }

    fn on_signal(&mut self, signal: focuser_daemon::Signal) -> bool {
        // A reload may shorten the interval: the wait is measured again.
        matches!(signal, focuser_daemon::Signal::Reload)
    }

    fn close(self, _ctx: &Ctx) {
        if let Err(e) = self.store.close() {
            log::warn!("path binder: closing the store: {e:#}");
        }
    }
}

impl PathBinder {
    /// One domain: its items built, compared with what the ad server last got, the changes
    /// appended and synced, then `path_stub` and the store's place written in one transaction.
    fn domain(&mut self, db: &Database, domain: &str, rules: &Rules) -> anyhow::Result<()> {
        let pages = self.pages(db, domain)?;
        let sections: BTreeSet<String> = pages
            .iter()
            .flat_map(|p| path::sections(&p.url, rules.depth))
            .collect();
        self.stats
            .count(&self.stats.sections, sections.len() as u64);
        let stubs = path::stubs(&pages, rules);
        drop(pages);
        self.built += stubs.len() as u64;
        self.stats.count(&self.stats.stubs, stubs.len() as u64);
        let mut built: Vec<(Item, String)> =
            stubs.into_iter().map(Item::Stub).map(with_md5).collect();
        built.extend(query_args(db, domain)?.into_iter().map(with_md5));
        let stored = db.run("path binder: stored stubs", |c| {
            PathStub::of_domain(c, domain)
        })?;

        // What the ad server last got: the stored rows, unless a pending item says otherwise.
        let mut shipped: BTreeMap<u64, String> = stored.iter().cloned().collect();
        for (item, _) in &built {
            if let Some(Some(md5)) = self.store.pending(item.key()) {
                shipped.insert(item.key(), md5.to_owned());
            }
        }
        shipped.retain(|k, _| !matches!(self.store.pending(*k), Some(None)));
        let shipped: Vec<(u64, String)> = shipped.into_iter().collect();
        let (withdrawn, ship) = path::diff(
            &shipped,
            built.clone(),
            |(i, _)| i.key(),
            |(_, m)| m.clone(),
        );
        let unchanged = built.len() - ship.len();
        let mut changes: Vec<Change> = withdrawn.iter().copied().map(Change::Withdraw).collect();
        let qargs = ship
            .iter()
            .filter(|(i, _)| matches!(i, Item::QueryArgs(_)))
            .count();
        changes.extend(ship.into_iter().map(|(i, _)| Change::Ship(i)));
        self.store.append(&changes)?;

        // What path_stub must say: the items built, none other of the domain.
        let now = clock::db_now();
        let (gone, rows) = path::diff(&stored, built.clone(), |(i, _)| i.key(), |(_, m)| m.clone());
        let rows: Vec<PathStub> = rows
            .into_iter()
            .map(|(i, m)| row(i, m, domain, now))
            .collect();
        let mut keys: Vec<u64> = built.iter().map(|(i, _)| i.key()).collect();
        keys.extend(stored.iter().map(|(k, _)| *k));
        let place = self.store.place_after(&keys);
        self.commit(db, &rows, &gone, place)?;
        self.store.committed(&keys, place);

        self.stats.count(
            &self.stats.shipped,
            changes.len() as u64 - withdrawn.len() as u64,
        );
        self.stats.count(&self.stats.query_args, qargs as u64);
        self.stats
            .count(&self.stats.withdrawn, withdrawn.len() as u64);
        self.stats.count(&self.stats.unchanged, unchanged as u64);
        self.stats.count(&self.stats.domains, 1);
        if !changes.is_empty() {
            log::info!(
                "path binder: {domain}: {} items shipped, {} withdrawn, {unchanged} unchanged",
                changes.len() - withdrawn.len(),
                withdrawn.len()
            );
        }
        Ok(())
    }

    /// The domain's bound pages; a stored binding that cannot be read is logged and left out.
    fn pages(&self, db: &Database, domain: &str) -> anyhow::Result<Vec<PageBinding>> {
        let items = db.run("path binder: bindings", |c| {
            PathStub::bindings_of(c, domain)
        })?;
        let mut pages = Vec::with_capacity(items.len());
        for text in items {
            match Item::parse(text.as_bytes()) {
                Ok(Item::Binding(b)) => pages.push(b),
                Ok(_) => self.bad(domain, "not a binding item"),
                Err(e) => self.bad(domain, &e.to_string()),
            }
        }
        Ok(pages)
    }

    fn bad(&self, domain: &str, why: &str) {
        self.stats.count(&self.stats.bad, 1);
        log::warn!("path binder: {domain}: a stored binding left out: {why}");
    }

    /// The end of a pass: a pending item no domain claimed (its section's pages went away
    /// between a crash and now) is withdrawn; the committed place moves to the store's end.
    fn finish(&mut self, db: &Database) -> anyhow::Result<()> {
        let orphans = self.store.pending_items();
        let changes: Vec<Change> = orphans.iter().copied().map(Change::Withdraw).collect();
        self.store.append(&changes)?;
        self.stats
            .count(&self.stats.withdrawn, orphans.len() as u64);
        let keys = self.store.pending_keys();
        let place = self.store.place_after(&keys);
        self.commit(db, &[], &orphans, place)?;
        self.store.committed(&keys, place);
        Ok(())
    }

    fn commit(
        &self,
        db: &Database,
        rows: &[PathStub],
        gone: &[u64],
        place: Position,
    ) -> anyhow::Result<()> {
        let name = self.store.name.clone();
        let now = clock::db_now();
        db.run("path binder: writing the stubs", |c| {
            diesel::Connection::transaction(c, |c| {
                PathStub::write(c, rows)?;
                PathStub::delete(c, gone)?;
                BindingPosition::set(c, &self.node, &name, (place.file_id, place.item_idx), now)
            })
        })?;
        Ok(())
    }
}

fn with_md5(item: Item) -> (Item, String) {
    let md5 = md5_hex(item.render().as_bytes());
    (item, md5)
}

/// The domain's hosts' insignificant query arguments, one item a host.
fn query_args(db: &Database, domain: &str) -> anyhow::Result<Vec<Item>> {
    let rows = db.run("path binder: query arguments", |c| {
        PathStub::insignificant_args(c, domain)
    })?;
    let mut by_host: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (url, name) in rows {
        let Some(root) = path::sections(&url, 0).into_iter().next() else {
            continue;
        };
        let host = root.trim_end_matches('/').to_owned();
        by_host.entry(host).or_default().push(name);
    }
    Ok(by_host
        .into_iter()
        .map(|(host, args)| Item::QueryArgs(QueryArgs::new(path::section_id(&host), &host, args)))
        .collect())
}

/// The `path_stub` row of an item.
fn row(item: Item, md5: String, domain: &str, now: chrono::NaiveDateTime) -> PathStub {
    let text = item.render();
    let (kind, host, prefix, urls) = match &item {
        Item::Stub(s) => {
            let (host, prefix) = s.section.split_once('/').unwrap_or((&s.section, ""));
            (
                PathStub::STUB,
                host.to_owned(),
                format!("/{prefix}"),
                s.urls,
            )
        }
        Item::QueryArgs(q) => (
            PathStub::QUERY_ARGS,
            q.host.clone(),
            String::new(),
            q.args.len() as u32,
        ),
        // The path binder builds no bindings.
        Item::Binding(b) => (0, b.url.clone(), String::new(), 0),
    };
    PathStub {
        id: item.key(),
        kind,
        domain: domain.to_owned(),
        host,
        prefix,
        urls,
        md5,
        item: text,
        built_at: now,
    }
}
