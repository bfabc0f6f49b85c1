//! One run of a resource on the fetch side: its rules, its data sources' sitemaps, then
//! `resource_status` brought in line and the feed URLs to fetch ([`FeedJob`]s); and what the
//! write stage shares of it ([`RunShared`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use focuser_feed::detail::FetchDetail;
use focuser_feed::items::{FieldRule, Rules};
use focuser_feed::location::Locations;
use focuser_feed::sitemap::sitemap_md5;
use focuser_fetch::Completed;
use focuser_schema::models::{
    ClaimedRun, FeedUrlStatus, OpenXmlFormat, ResourceStatus, VrOpenDatasource,
    VrOpenDatasourceChanges,
};

use super::known::Known;
use super::locations::{ItemPaths, ItemPlace};
use super::sitemaps::{self, Got};
use super::stats::ResourceStats;
use crate::status::add;
use crate::worker::Ctx;

/// A feed URL of a run, to fetch.
pub struct FeedJob {
    pub run: Arc<RunShared>,
    /// `resource_status.id`.
    pub status_id: u64,
    pub ds_id: u32,
    pub ds_name: String,
    pub url: String,
}

/// A good item of a run, kept until the run's diff.
pub struct GoodItem {
    pub keyword: String,
    /// Computed only when the diff needs it, or the item is written (empty until then).
    pub md5: String,
    pub digest: u128,
    pub canonical: String,
    pub status_id: u64,
    pub ds_id: u32,
    /// Its location and full-hit values.
    pub place: ItemPlace,
}

/// How one feed URL went (`resource_status` after the run).
pub struct FeedResult {
    pub status_id: u64,
    pub http_status: Option<u16>,
    pub items: u32,
    pub error: Option<String>,
}

/// What the write stage gathers of a run, feed by feed.
#[derive(Default)]
pub struct Acc {
    pub detail: FetchDetail,
    pub items: Vec<GoodItem>,
    pub failed: u64,
    /// Feed URLs whose previous items must not be deleted: their fetch or parse failed, or
    /// their source's sitemap did.
    pub protected: HashSet<u64>,
    pub feeds_done: usize,
    pub results: Vec<FeedResult>,
    /// The run failed before any feed (rules, no sources): nothing is written.
    pub aborted: bool,
}

/// A run as the write stage sees it.
pub struct RunShared {
    pub claimed: ClaimedRun,
    pub rules: Option<Rules>,
    /// Where its items' location and full-hit values are.
    pub paths: ItemPaths,
    pub total_feeds: usize,
    pub acc: Mutex<Acc>,
    /// Its stored items, read ahead of its write.
    pub known: Known,
}

impl RunShared {
    pub fn res_id(&self) -> u32 {
        self.claimed.resource.id
    }
}

struct Source {
    ds: VrOpenDatasource,
    urls: Vec<String>,
    md5s: Vec<String>,
    error: Option<String>,
    /// The top sitemap was an index: what completes now are the sitemaps it lists.
    index: bool,
}

pub struct Run {
    pub claimed: ClaimedRun,
    rules: Rules,
    paths: ItemPaths,
    sources: Vec<Source>,
    pub sitemaps_pending: usize,
}

fn field_rule(r: OpenXmlFormat) -> FieldRule {
    FieldRule {
        label_name: r.label_name,
        parent_label: r.parent_label,
        xpath: r.xpath,
        is_key: r.is_key,
        is_index: r.is_index,
        is_fullhit: r.is_fullhit,
        is_mark: r.is_mark,
        is_required: r.is_required,
        index_type: r.index_type.code(),
        group_type: r.group_type.code(),
    }
}

impl Run {
    /// Reads the resource's rules and data sources. A run that cannot go on (its class's
    /// rules are unusable, it has no data source) comes back as `Err`, ready to be finished.
    pub fn start(
        ctx: &Ctx,
        claimed: ClaimedRun,
        locations: Option<Arc<Locations>>,
    ) -> Result<Run, Box<RunShared>> {
        let r = &claimed.resource;
        let (class, res_id) = (r.class_id, r.id);
        let loaded = ctx.db.run("reading a resource's rules and sources", |c| {
            Ok((
                OpenXmlFormat::for_class(c, class)?,
                VrOpenDatasource::for_resource(c, res_id)?,
            ))
        });
        let fail = |claimed: ClaimedRun, line: String| {
            let mut acc = Acc {
                aborted: true,
                ..Acc::default()
            };
            acc.detail.failure(line);
            Box::new(RunShared {
                claimed,
                rules: None,
                paths: ItemPaths::default(),
                total_feeds: 0,
                acc: Mutex::new(acc),
                known: Known::default(),
            })
        };
        let (rules, sources) = match loaded {
            Ok(x) => x,
            Err(e) => return Err(fail(claimed, format!("database: {e}"))),
        };
        let rules: Vec<FieldRule> = rules.into_iter().map(field_rule).collect();
        let rules = match Rules::compile(&rules) {
            Ok(r) => r,
            Err(e) => return Err(fail(claimed, format!("class {class}: {e}"))),
        };
        if sources.is_empty() {
            return Err(fail(claimed, "the resource has no data source".into()));
        }
        let label = ctx.config().daemon.resources.location_label.clone();
        let paths = ItemPaths::of(&rules, class, &label, locations);
        let sources: Vec<Source> = sources
            .into_iter()
            .map(|ds| Source {
                ds,
                urls: Vec::new(),
                md5s: Vec::new(),
                error: None,
                index: false,
            })
            .collect();
        Ok(Run {
            claimed,
            rules,
            paths,
            sitemaps_pending: sources.len(),
            sources,
        })
    }

    /// (source, sitemap URL) of every source.
    pub fn sitemap_requests(&self) -> Vec<(usize, String)> {
        self.sources
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.ds.sitemap_url.clone()))
            .collect()
    }

    /// A sitemap of source `i` completed; returns the sitemaps an index lists, to fetch.
    pub fn sitemap_done(&mut self, i: usize, c: Completed) -> Vec<String> {
        self.sitemaps_pending = self.sitemaps_pending.saturating_sub(1);
        let Some(src) = self.sources.get_mut(i) else {
            return Vec::new();
        };
        match sitemaps::parse(&c, src.index) {
            Ok(Got::Urls { urls, md5 }) => {
                src.urls.extend(urls);
                src.md5s.push(md5);
                Vec::new()
            }
            Ok(Got::Index { sitemaps, md5 }) => {
                src.index = true;
                src.md5s.push(md5);
                self.sitemaps_pending += sitemaps.len();
                sitemaps
            }
            Err(e) => {
                src.error.get_or_insert(e);
                Vec::new()
            }
        }
    }

    /// Every sitemap is in: each source's URLs synced into `resource_status` (by priority; a
    /// URL two sources list belongs to the first), unless its sitemap failed or, on an
    /// automatic run, did not change; then the feed URLs to fetch.
    pub fn finish_sitemaps(
        self,
        ctx: &Ctx,
        stats: &ResourceStats,
    ) -> anyhow::Result<(Arc<RunShared>, Vec<FeedJob>)> {
        let res_id = self.claimed.resource.id;
        let manual = self.claimed.manual;
        let mut acc = Acc::default();
        let mut taken: HashSet<String> = HashSet::new();
        let mut failed_sources = HashSet::new();
        for s in &self.sources {
            let name = &s.ds.name;
            if let Some(e) = &s.error {
                acc.detail.source_failed(name, e);
                add(&stats.sitemap_errors, 1);
                failed_sources.insert(s.ds.id);
                continue;
            }
            let md5 = match s.md5s.as_slice() {
                [one] => one.clone(),
                many => sitemap_md5(many.join("\n").as_bytes()),
            };
            let owned: Vec<String> = s
                .urls
                .iter()
                .filter(|u| taken.insert((*u).clone()))
                .cloned()
                .collect();
            if s.urls.is_empty() {
                acc.detail
                    .source_failed(name, &"the sitemap index lists no URLs");
                add(&stats.sitemap_errors, 1);
                failed_sources.insert(s.ds.id);
                continue;
            }
            if !manual && s.ds.sitemap_md5.as_deref() == Some(md5.as_str()) {
                log::info!("resource {res_id}: source \"{name}\": sitemap unchanged, not synced");
                acc.detail
                    .note(format!("source \"{name}\": sitemap unchanged, skipped"));
                continue;
            }
            let ds_id = s.ds.id;
            let counts = ctx.db.run("syncing resource_status", |c| {
                diesel::Connection::transaction(c, |c| {
                    let n = ResourceStatus::sync_source(c, res_id, ds_id, &owned)?;
                    VrOpenDatasource::update(
                        c,
                        ds_id,
                        &VrOpenDatasourceChanges {
                            sitemap_md5: Some(Some(&md5)),
                            ..Default::default()
                        },
                    )?;
                    Ok(n)
                })
            })?;
            log::info!(
                "resource {res_id}: source \"{name}\": {} URLs; {} new, {} moved or back, {} retired",
                owned.len(),
                counts.inserted,
                counts.updated,
                counts.retired
            );
        }
        let rows = ctx.db.run("reading feed URLs", |c| {
            ResourceStatus::for_resource(c, res_id)
        })?;
        let names: std::collections::HashMap<u32, &str> = self
            .sources
            .iter()
            .map(|s| (s.ds.id, s.ds.name.as_str()))
            .collect();
        let mut feeds = Vec::new();
        let mut wanted = Vec::new();
        for row in rows
            .into_iter()
            .filter(|r| r.res_status == FeedUrlStatus::Listed)
        {
            if failed_sources.contains(&row.data_source_id) {
                acc.protected.insert(row.id);
            } else if let Some(name) = names.get(&row.data_source_id) {
                wanted.push((row, name.to_string()));
            }
        }
        let shared = Arc::new(RunShared {
            claimed: self.claimed,
            rules: Some(self.rules),
            paths: self.paths,
            total_feeds: wanted.len(),
            acc: Mutex::new(acc),
            known: Known::default(),
        });
        for (row, ds_name) in wanted {
            feeds.push(FeedJob {
                run: Arc::clone(&shared),
                status_id: row.id,
                ds_id: row.data_source_id,
                ds_name,
                url: row.url,
            });
        }
        Ok((shared, feeds))
    }
}
