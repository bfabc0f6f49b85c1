//! yacobot's own keys (the common ones are focuser-daemon's). Documented in conf/yacobot.cf.

use std::collections::BTreeMap;
use std::path::PathBuf;

use focuser_daemon::config::restart_only;
use focuser_daemon::{CommonConfig, DaemonConfig};
use focuser_formats::segment::{SyncPolicy, WriterOptions};
use serde::{Deserialize, Serialize};

mod bindings;
mod fetch;
mod hosts;
mod multidoc;
mod pathbinder;
mod qargfilter;
mod resources;
pub use bindings::BindingsConfig;
pub use fetch::{FetchConfig, CURL, MIRROR};
pub use hosts::HostsConfig;
pub use multidoc::MultiDocConfig;
pub use pathbinder::PathBinderConfig;
pub use qargfilter::QargfilterConfig;
pub use resources::ResourcesConfig;

/// The workers take the running config at each step, so a reload applies every key but the
/// `restart_only` ones: the node's name, which workers run, and the stores and fetch backend
/// they open at start.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct YacobotConfig {
    /// This node's name (`yacobot_node.name`): it signs the claims of this process.
    #[serde(serialize_with = "restart_only")]
    pub node: String,
    /// This node's id (`yacobot_node.id`); set, queue files for another node are refused.
    #[serde(default)]
    pub node_id: Option<u32>,
    #[serde(rename = "Loader", default)]
    pub loader: LoaderConfig,
    #[serde(rename = "Qargfilter", default)]
    pub qargfilter: QargfilterConfig,
    #[serde(rename = "Crawl", default)]
    pub crawl: CrawlConfig,
    #[serde(rename = "Fetch", default)]
    pub fetch: FetchConfig,
    #[serde(rename = "Archive", default, serialize_with = "restart_only")]
    pub archive: ArchiveConfig,
    #[serde(rename = "Segment", default, serialize_with = "restart_only")]
    pub segment: SegmentConfig,
    #[serde(rename = "Url", default)]
    pub url: UrlConfig,
    #[serde(rename = "Resources", default)]
    pub resources: ResourcesConfig,
    #[serde(rename = "MultiDoc", default)]
    pub multidoc: MultiDocConfig,
    #[serde(rename = "Bindings", default)]
    pub bindings: BindingsConfig,
    #[serde(rename = "PathBinder", default)]
    pub pathbinder: PathBinderConfig,
    #[serde(rename = "Hosts", default)]
    pub hosts: HostsConfig,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoaderConfig {
    #[serde(rename = "Enable", default = "yes", serialize_with = "restart_only")]
    pub enable: bool,
    /// One inbox per master: `Loader.Inbox.<master name> = dir`. The name is the file's
    /// `queue_applied.source`.
    #[serde(rename = "Inbox", default)]
    pub inbox: BTreeMap<String, PathBuf>,
    /// Seconds between two looks into the inboxes.
    #[serde(rename = "Interval", default = "default_loader_interval")]
    pub interval: u64,
    /// Records per multi-row statement.
    #[serde(rename = "Batch", default = "default_batch")]
    pub batch: usize,
    /// Rows held back to be written in id order (a file's rows at once when it holds no
    /// more); bounds the loader's memory.
    #[serde(rename = "SortBuffer", default = "default_sort_buffer")]
    pub sort_buffer: usize,
    /// 1: applied files move to `<inbox>/done/`; 0: they are deleted.
    #[serde(rename = "KeepApplied", default)]
    pub keep_applied: bool,
    /// `disjoint`: every master forwards other hits (ad servers fail over between masters),
    /// every file is applied; `duplicate`: the masters are fed the same reflogs, the
    /// primary's files are applied and the others only fill its gaps (docs/operations.md
    /// "yacobot: two masters").
    #[serde(
        rename = "Mode",
        default = "default_loader_mode",
        serialize_with = "restart_only"
    )]
    pub mode: String,
    /// In duplicate mode, the master whose files are applied (one of the inboxes; may be set
    /// in disjoint mode, where it is not read).
    #[serde(rename = "Primary", default)]
    pub primary: Option<String>,
    /// In duplicate mode, seconds without a file of the primary handled after which the
    /// other masters' files fill the gap.
    #[serde(rename = "FailoverAfter", default = "default_failover_after")]
    pub failover_after: u64,
}

pub const DISJOINT: &str = "disjoint";
pub const DUPLICATE: &str = "duplicate";

impl LoaderConfig {
    /// The primary master when the masters duplicate each other.
    pub fn duplicate_primary(&self) -> Option<&str> {
        (self.mode == DUPLICATE)
            .then_some(self.primary.as_deref())
            .flatten()
    }

    fn validate(&self) -> Result<(), String> {
        if self.mode != DISJOINT && self.mode != DUPLICATE {
            return Err(format!(
                "Loader.Mode = {}: must be {DISJOINT} or {DUPLICATE}",
                self.mode
            ));
        }
        match &self.primary {
            // Kept in disjoint mode too (read in duplicate mode only): ready for a switch.
            Some(p) if !self.inbox.contains_key(p) => Err(format!(
                "Loader.Primary = {p}: not a master with an inbox (Loader.Inbox.<master>)"
            )),
            None if self.mode == DUPLICATE => {
                Err("Loader.Mode = duplicate: set Loader.Primary to one of the inboxes".into())
            }
            _ if self.failover_after == 0 => Err("Loader.FailoverAfter: must be at least 1".into()),
            _ => Ok(()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CrawlConfig {
    /// The scheduler, the fetcher, the archive and the re-index bookkeeping.
    #[serde(rename = "Enable", default = "yes", serialize_with = "restart_only")]
    pub enable: bool,
    /// URLs claimed at a time.
    #[serde(rename = "ClaimBatch", default = "default_claim_batch")]
    pub claim_batch: u32,
    /// Seconds a claim lasts; a crawler that died leaves its URLs to others after this.
    #[serde(rename = "ClaimTtl", default = "default_claim_ttl")]
    pub claim_ttl: u64,
    /// Seconds between two looks for due URLs when none was due.
    #[serde(rename = "Idle", default = "default_idle")]
    pub idle: u64,
    /// Seconds a URL waits after a failed fetch (the fetcher's tries used up), doubling with
    /// each failure in a row (capped at `Url.ReindexPeriod`).
    #[serde(rename = "RetryLater", default = "default_retry_later")]
    pub retry_later: u64,
    /// Finished URLs booked in one statement at most; fewer when `Crawl.BookMs` have passed
    /// since the oldest was finished, or when nothing else is being fetched.
    #[serde(rename = "BookBatch", default = "default_book_batch")]
    pub book_batch: u32,
    #[serde(rename = "BookMs", default = "default_book_ms")]
    pub book_ms: u64,
    /// URLs of one domain in hand at most (claimed, not yet booked): one popular domain
    /// cannot take the whole hand.
    #[serde(rename = "PerDomain", default = "default_per_domain")]
    pub per_domain: u32,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveConfig {
    /// 0: pages are fetched and booked but not stored (and never re-indexed from the archive).
    #[serde(rename = "Enable", default = "yes")]
    pub enable: bool,
    /// The node's item/index segment store (what the reader ships).
    #[serde(rename = "Dir", default = "default_archive_dir")]
    pub dir: PathBuf,
    /// The archive's own retention (crawl/floor.rs): at most this many bytes are kept for
    /// re-indexing, the newest first (0: no cap); by age, `Url.SteadyMax` days are kept.
    #[serde(rename = "KeepBytes", default)]
    pub keep_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentConfig {
    #[serde(rename = "MaxAge", default = "default_max_age")]
    pub max_age: u64,
    #[serde(rename = "MaxItems", default = "default_max_items")]
    pub max_items: u32,
    #[serde(rename = "MaxBytes", default = "default_segment_bytes")]
    pub max_bytes: u64,
    #[serde(rename = "SyncEvery", default = "default_sync_every")]
    pub sync_every: u32,
    #[serde(rename = "SyncMs", default = "default_sync_ms")]
    pub sync_ms: u64,
}

/// Re-index bookkeeping (docs/design.md#yacobot-bookkeeping); every period in days.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UrlConfig {
    /// The current ad dictionary; its modification time is the dictionary's date. Missing:
    /// the dictionary counts as stale.
    #[serde(rename = "DictFile", default)]
    pub dict_file: Option<PathBuf>,
    /// Days between two dictionaries: the next is expected this long after the current one.
    #[serde(rename = "DictPeriod", default = "default_dict_period")]
    pub dict_period: f64,
    /// A dictionary older than this is stale: `Url.ReindexPeriod` replaces "days until the
    /// next dictionary".
    #[serde(rename = "DictAge", default = "default_dict_age")]
    pub dict_age: f64,
    #[serde(rename = "ReindexPeriod", default = "default_reindex_period")]
    pub reindex_period: f64,
    /// Bounds of `steady_level`.
    #[serde(rename = "SteadyMin", default = "default_steady_min")]
    pub steady_min: f64,
    #[serde(rename = "SteadyMax", default = "default_steady_max")]
    pub steady_max: f64,
    /// `steady_level` is multiplied by this when the content did not change ...
    #[serde(rename = "SteadyGrow", default = "default_steady_grow")]
    pub steady_grow: f64,
    /// ... and by this when it did.
    #[serde(rename = "SteadyShrink", default = "default_steady_shrink")]
    pub steady_shrink: f64,
    /// The exclusion file (docs/formats.md "Exclusion file"): URLs the loader does not store
    /// and the scheduler does not fetch. Read at start and at every reload; a bad file is
    /// refused whole and the rules in force stay.
    #[serde(rename = "ExcludeFile", default)]
    pub exclude_file: Option<PathBuf>,
    /// URLs to put into the frontier when the loader starts (one a line; `#` comments), for
    /// URLs that do not come from the reflog; `yacobot url add` does the same for a few.
    #[serde(rename = "StartFile", default, serialize_with = "restart_only")]
    pub start_file: Option<PathBuf>,
    /// A URL no hit has asked for in this many days, and not due, leaves the frontier (a
    /// `DELETE` downstream; docs/design.md#yacobot-expiry). 0: never.
    #[serde(rename = "ExpireDays", default)]
    pub expire_days: u32,
}

fn yes() -> bool {
    true
}
fn default_loader_mode() -> String {
    DISJOINT.into()
}

fn default_failover_after() -> u64 {
    600
}

fn default_loader_interval() -> u64 {
    5
}
fn default_batch() -> usize {
    1000
}
fn default_sort_buffer() -> usize {
    200_000
}
fn default_claim_batch() -> u32 {
    500
}
fn default_claim_ttl() -> u64 {
    600
}
fn default_idle() -> u64 {
    5
}
fn default_retry_later() -> u64 {
    300
}
fn default_book_batch() -> u32 {
    512
}
fn default_book_ms() -> u64 {
    200
}
fn default_per_domain() -> u32 {
    8
}
fn default_archive_dir() -> PathBuf {
    PathBuf::from("segments")
}
fn default_max_age() -> u64 {
    300
}
fn default_max_items() -> u32 {
    100_000
}
fn default_segment_bytes() -> u64 {
    256 << 20
}
fn default_sync_every() -> u32 {
    1000
}
fn default_sync_ms() -> u64 {
    200
}
fn default_dict_period() -> f64 {
    7.0
}
fn default_dict_age() -> f64 {
    14.0
}
fn default_reindex_period() -> f64 {
    7.0
}
fn default_steady_min() -> f64 {
    1.0
}
fn default_steady_max() -> f64 {
    60.0
}
fn default_steady_grow() -> f64 {
    1.4
}
fn default_steady_shrink() -> f64 {
    0.8
}

macro_rules! defaults {
    ($t:ident { $($f:ident: $v:expr),* $(,)? }) => {
        impl Default for $t {
            fn default() -> Self {
                $t { $($f: $v),* }
            }
        }
    };
}

defaults!(LoaderConfig {
    enable: true,
    inbox: BTreeMap::new(),
    interval: default_loader_interval(),
    batch: default_batch(),
    sort_buffer: default_sort_buffer(),
    keep_applied: false,
    mode: default_loader_mode(),
    primary: None,
    failover_after: default_failover_after(),
});
defaults!(CrawlConfig {
    enable: true,
    claim_batch: default_claim_batch(),
    claim_ttl: default_claim_ttl(),
    idle: default_idle(),
    retry_later: default_retry_later(),
    book_batch: default_book_batch(),
    book_ms: default_book_ms(),
    per_domain: default_per_domain(),
});
defaults!(ArchiveConfig {
    enable: true,
    dir: default_archive_dir(),
    keep_bytes: 0,
});
defaults!(SegmentConfig {
    max_age: default_max_age(),
    max_items: default_max_items(),
    max_bytes: default_segment_bytes(),
    sync_every: default_sync_every(),
    sync_ms: default_sync_ms(),
});
defaults!(UrlConfig {
    dict_file: None,
    dict_period: default_dict_period(),
    dict_age: default_dict_age(),
    reindex_period: default_reindex_period(),
    steady_min: default_steady_min(),
    steady_max: default_steady_max(),
    steady_grow: default_steady_grow(),
    steady_shrink: default_steady_shrink(),
    exclude_file: None,
    start_file: None,
    expire_days: 0,
});

impl SegmentConfig {
    pub fn writer_options(&self) -> WriterOptions {
        WriterOptions {
            max_age_s: self.max_age,
            max_items: self.max_items,
            max_bytes: self.max_bytes,
            sync: SyncPolicy {
                every_items: self.sync_every,
                every_ms: self.sync_ms,
            },
        }
    }
}

/// A source name is part of `queue_applied` and of log lines: keep it plain.
fn check_name(what: &str, name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "{what}: {name:?}: 1 to 64 letters, digits, `_` or `-`"
        ));
    }
    Ok(())
}

impl UrlConfig {
    fn validate(&self) -> Result<(), String> {
        let positive = [
            ("Url.DictPeriod", self.dict_period),
            ("Url.DictAge", self.dict_age),
            ("Url.ReindexPeriod", self.reindex_period),
            ("Url.SteadyMin", self.steady_min),
        ];
        for (key, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{key}: must be a positive number of days"));
            }
        }
        if !(self.steady_max.is_finite() && self.steady_max >= self.steady_min) {
            return Err("Url.SteadyMax: must be at least Url.SteadyMin".into());
        }
        if !(self.steady_grow.is_finite() && self.steady_grow >= 1.0) {
            return Err("Url.SteadyGrow: must be at least 1".into());
        }
        if !(self.steady_shrink > 0.0 && self.steady_shrink <= 1.0) {
            return Err("Url.SteadyShrink: must be above 0 and at most 1".into());
        }
        Ok(())
    }
}

impl DaemonConfig for YacobotConfig {
    fn validate(&self, common: &CommonConfig) -> Result<(), String> {
        check_name("node", &self.node)?;
        if common.database.is_none() {
            return Err(
                "database: yacobot needs its frontier (set database or DATABASE_URL)".into(),
            );
        }
        for name in self.loader.inbox.keys() {
            check_name(&format!("Loader.Inbox.{name}"), name)?;
        }
        if self.loader.enable && self.loader.inbox.is_empty() {
            return Err("Loader.Inbox.<master>: the loader needs at least one inbox".into());
        }
        if self.loader.interval == 0 || self.loader.batch == 0 || self.loader.sort_buffer == 0 {
            return Err(
                "Loader.Interval, Loader.Batch and Loader.SortBuffer: must be at least 1".into(),
            );
        }
        self.loader.validate()?;
        self.qargfilter.validate()?;
        if self.crawl.claim_batch == 0
            || self.crawl.claim_ttl == 0
            || self.crawl.idle == 0
            || self.crawl.retry_later == 0
            || self.crawl.book_batch == 0
            || self.crawl.per_domain == 0
        {
            return Err(
                "Crawl.ClaimBatch, Crawl.ClaimTtl, Crawl.Idle, Crawl.RetryLater, Crawl.BookBatch \
                 and Crawl.PerDomain: must be at least 1"
                    .into(),
            );
        }
        self.fetch.validate()?;
        self.resources.validate()?;
        self.multidoc.validate()?;
        self.bindings
            .validate(self.multidoc.enable, &self.archive.dir)?;
        self.pathbinder
            .validate(&self.archive.dir, &self.bindings.dir)?;
        self.hosts.validate()?;
        if self.url.start_file.is_some() && !self.loader.enable {
            return Err(
                "Url.StartFile: read by the loader, which is off (Loader.Enable = 0)".into(),
            );
        }
        if self.segment.max_items == 0 || self.segment.max_bytes < 4096 {
            return Err("Segment.MaxItems at least 1, Segment.MaxBytes at least 4096".into());
        }
        self.url.validate()
    }

    /// The exclusion file and the location list parse (a start with a bad one would fail);
    /// the start file can be read; the proxy's credentials file is private and holds one
    /// `user:password`.
    fn check_files(&self, common: &CommonConfig) -> Result<(), String> {
        self.fetch.proxy_auth(common)?;
        if let Some(file) = &self.resources.location_file {
            crate::resources::read_locations(&common.path(file))
                .map_err(|e| format!("Resources.LocationFile: {e:#}"))?;
        }
        if let Some(file) = &self.url.exclude_file {
            crate::exclude::read_file(&common.path(file))
                .map_err(|e| format!("Url.ExcludeFile: {e:#}"))?;
        }
        if let Some(file) = &self.url.start_file {
            let path = common.path(file);
            std::fs::File::open(&path)
                .and_then(|f| f.metadata())
                .and_then(|m| {
                    m.is_file()
                        .then_some(())
                        .ok_or_else(|| std::io::Error::other("not a regular file"))
                })
                .map_err(|e| format!("Url.StartFile: {}: cannot read: {e}", path.display()))?;
        }
        Ok(())
    }

    /// The proxy's credentials are read when the fetching workers start.
    fn start_files(&self, common: &CommonConfig) -> Vec<(&'static str, PathBuf)> {
        let auth = self.fetch.proxy_auth_file.as_ref();
        auth.map(|p| ("Fetch.ProxyAuthFile", common.path(p)))
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of the shipped config keeps its value through a reload of the same file
    /// (the running values of restart-only keys are put back through serde).
    #[test]
    fn the_shipped_yacobot_reloads_onto_itself() {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../conf/yacobot.cf");
        let c = focuser_daemon::Config::<YacobotConfig>::load(std::path::Path::new(file), None)
            .unwrap();
        assert!(c.restart_only_changes(&c).is_empty());
        assert_eq!(c.reloaded(c.clone()).unwrap(), c);
    }
}
