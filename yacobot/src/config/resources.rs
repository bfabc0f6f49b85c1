//! The `Resources.*` keys: the partner-feed worker (docs/design.md#yacobot-resources;
//! docs/operations.md "yacobot: partner feeds").

use std::path::PathBuf;

use focuser_daemon::config::restart_only;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ResourcesConfig {
    /// Off by default: a node without partner feeds opens no second store.
    #[serde(rename = "Enable", default, serialize_with = "restart_only")]
    pub enable: bool,
    /// The resources' own item/index segment store (the crawl archive's writer holds a lock on
    /// its folder; a second reader sender ships this one).
    #[serde(
        rename = "Dir",
        default = "default_dir",
        serialize_with = "restart_only"
    )]
    pub dir: PathBuf,
    /// Seconds between two scans for due resources (the source's `Scan.Interval`).
    #[serde(rename = "ScanInterval", default = "default_scan_interval")]
    pub scan_interval: u64,
    /// Resources run at once at most.
    #[serde(rename = "Parallel", default = "default_parallel")]
    pub parallel: u32,
    /// Threads of the write stage (parse, diff, write); fetching waits while more than five
    /// times this many fetched feeds wait for them.
    #[serde(
        rename = "Writers",
        default = "default_writers",
        serialize_with = "restart_only"
    )]
    pub writers: u32,
    /// Seconds a resource's claim lasts; renewed while its run goes on.
    #[serde(rename = "ClaimTtl", default = "default_claim_ttl")]
    pub claim_ttl: u64,
    /// Largest sitemap or feed (bytes); `Fetch.MaxBytes` is for pages. The worker's fetcher
    /// is made with it at start.
    #[serde(
        rename = "MaxBytes",
        default = "default_max_bytes",
        serialize_with = "restart_only"
    )]
    pub max_bytes: u64,
    /// Safety valve: a run with fewer good items than this percentage of the previous run's
    /// is an error and deletes nothing ...
    #[serde(rename = "MinKeptPercent", default = "default_min_kept")]
    pub min_kept_percent: u64,
    /// ... and so is one with more failed keys than this percentage of its items.
    #[serde(rename = "MaxFailedPercent", default = "default_max_failed")]
    pub max_failed_percent: u64,
    /// Items a withdrawal (`resource disable|remove`) marks deleted and emits per transaction.
    #[serde(rename = "WithdrawBatch", default = "default_withdraw_batch")]
    pub withdraw_batch: u32,
}

fn default_dir() -> PathBuf {
    PathBuf::from("segments-vr")
}
fn default_scan_interval() -> u64 {
    60
}
fn default_parallel() -> u32 {
    8
}
fn default_writers() -> u32 {
    2
}
fn default_claim_ttl() -> u64 {
    3600
}
fn default_max_bytes() -> u64 {
    64 << 20
}
fn default_min_kept() -> u64 {
    20
}
fn default_max_failed() -> u64 {
    80
}
fn default_withdraw_batch() -> u32 {
    1000
}

impl Default for ResourcesConfig {
    fn default() -> Self {
        ResourcesConfig {
            enable: false,
            dir: default_dir(),
            scan_interval: default_scan_interval(),
            parallel: default_parallel(),
            writers: default_writers(),
            claim_ttl: default_claim_ttl(),
            max_bytes: default_max_bytes(),
            min_kept_percent: default_min_kept(),
            max_failed_percent: default_max_failed(),
            withdraw_batch: default_withdraw_batch(),
        }
    }
}

impl ResourcesConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.scan_interval == 0
            || self.parallel == 0
            || self.writers == 0
            || self.claim_ttl < 3
            || self.max_bytes == 0
            || self.withdraw_batch == 0
        {
            return Err("Resources.ScanInterval, Resources.Parallel, Resources.Writers, Resources.MaxBytes and Resources.WithdrawBatch: at least 1; Resources.ClaimTtl: at least 3".into());
        }
        if self.min_kept_percent > 100 || self.max_failed_percent > 100 {
            return Err("Resources.MinKeptPercent and Resources.MaxFailedPercent: 0 to 100".into());
        }
        Ok(())
    }
}
