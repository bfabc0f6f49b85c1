//! The `Resources.*` keys: the partner-feed worker (docs/design.md#yacobot-resources;
//! docs/operations.md "yacobot: partner feeds").

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use focuser_daemon::config::restart_only;
use focuser_fetch::HostPoliteness;
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
    /// `host:seconds` entries: the feeds fetcher's delay between two requests to that host
    /// (instead of `Fetch.HostDelay`, for a partner whose many feeds live on one host). The
    /// crawl's politeness is not touched.
    #[serde(rename = "HostDelay", default)]
    pub host_delay: Vec<String>,
    /// `host:n` entries: transfers to that host at once (instead of `Fetch.PerHost`).
    #[serde(rename = "PerHost", default)]
    pub per_host: Vec<String>,
    /// The store of the items of multi-hit classes (`class_id` 70000000 and above), which a
    /// reader ships to the multi-hit receiver group; opened when first needed.
    #[serde(
        rename = "MultiHitDir",
        default = "default_multi_hit_dir",
        serialize_with = "restart_only"
    )]
    pub multi_hit_dir: PathBuf,
    /// The location list (the source's `locationlist`: `<loc_id> <name>` lines); none: items'
    /// locations are kept without a `loc_id`. Read at start (a bad file stops it) and again
    /// at each scan when it changed (a bad file is refused, the list in force stays).
    #[serde(rename = "LocationFile", default)]
    pub location_file: Option<PathBuf>,
    /// The label of the field that holds an item's location.
    #[serde(rename = "LocationLabel", default = "default_location_label")]
    pub location_label: String,
    /// A run that leaves its resource with at least this many live items raises the
    /// resource's priority to 2 (the source's large resources); 0: never.
    #[serde(rename = "LargeItems", default = "default_large_items")]
    pub large_items: u64,
    /// The customer database (`mysql://…`, GBK) whose `customer_resource` rows the runs of
    /// customer resources (`data_from = 4`) read and write.
    #[serde(rename = "CustomerDatabase", default)]
    pub customer_database: Option<String>,
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
fn default_multi_hit_dir() -> PathBuf {
    PathBuf::from("segments-vr-multihit")
}
fn default_location_label() -> String {
    "location".into()
}
fn default_large_items() -> u64 {
    100_000
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
            host_delay: Vec::new(),
            per_host: Vec::new(),
            multi_hit_dir: default_multi_hit_dir(),
            location_file: None,
            location_label: default_location_label(),
            large_items: default_large_items(),
            customer_database: None,
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
        if self.location_label.trim().is_empty() {
            return Err("Resources.LocationLabel: a field label, not empty".into());
        }
        if let Some(url) = &self.customer_database {
            if !url.starts_with("mysql://") {
                return Err("Resources.CustomerDatabase: a mysql:// URL".into());
            }
        }
        self.politeness().map(|_| ())
    }

    /// `Resources.HostDelay` and `Resources.PerHost` by host name (lower case), or the entry
    /// that is not `host:value`.
    pub fn politeness(&self) -> Result<BTreeMap<String, HostPoliteness>, String> {
        let mut by_host: BTreeMap<String, HostPoliteness> = BTreeMap::new();
        for (key, entries) in [("HostDelay", &self.host_delay), ("PerHost", &self.per_host)] {
            for entry in entries {
                let bad = |why: &str| format!("Resources.{key}: {entry:?}: {why}");
                let (host, value) = entry
                    .rsplit_once(':')
                    .filter(|(h, _)| !h.is_empty() && !h.contains([':', '/']))
                    .ok_or_else(|| bad("expected host:value (a host name, without a port)"))?;
                let own = by_host.entry(host.to_ascii_lowercase()).or_default();
                if key == "HostDelay" {
                    let secs = value.parse::<f64>().ok();
                    let delay = secs.and_then(|s| Duration::try_from_secs_f64(s).ok());
                    own.delay = Some(delay.ok_or_else(|| bad("a number of seconds, 0 or more"))?);
                } else {
                    let n = value.parse::<usize>().ok().filter(|n| *n > 0);
                    own.per_host = Some(n.ok_or_else(|| bad("a number, at least 1"))?);
                }
            }
        }
        Ok(by_host)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hosts_of_their_own_are_host_and_value() {
        let r = ResourcesConfig {
            host_delay: vec!["Feeds.Partner.test:0.05".into(), "slow.test:2".into()],
            per_host: vec!["feeds.partner.test:4".into()],
            ..ResourcesConfig::default()
        };
        let p = r.politeness().unwrap();
        let feeds = p["feeds.partner.test"];
        assert_eq!(feeds.delay, Some(Duration::from_millis(50)));
        assert_eq!(feeds.per_host, Some(4));
        assert_eq!(p["slow.test"].per_host, None);
        for (delay, per_host, why) in [
            (
                "feeds.test",
                "",
                "Resources.HostDelay: \"feeds.test\": expected host:value",
            ),
            ("feeds.test:8080:1", "", "expected host:value"),
            ("feeds.test:-1", "", "a number of seconds"),
            ("feeds.test:soon", "", "a number of seconds"),
            (
                "",
                "feeds.test:0",
                "Resources.PerHost: \"feeds.test:0\": a number, at least 1",
            ),
        ] {
            let r = ResourcesConfig {
                host_delay: [delay]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .map(Into::into)
                    .collect(),
                per_host: [per_host]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .map(Into::into)
                    .collect(),
                ..ResourcesConfig::default()
            };
            let e = r.validate().unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }
}
