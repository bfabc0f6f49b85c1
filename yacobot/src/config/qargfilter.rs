//! The `Qargfilter.*` keys: the query-argument analysis and its import
//! (docs/design.md#yacobot-qargfilter; docs/operations.md "yacobot: qargfilter").

use focuser_daemon::config::restart_only;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QargfilterConfig {
    #[serde(rename = "Enable", default = "yes", serialize_with = "restart_only")]
    pub enable: bool,
    /// Seconds between two imports of `query_args` into `path_arg_name`.
    #[serde(rename = "Interval", default = "default_interval")]
    pub interval: u64,
    /// Seconds before the newest score already imported that the next import reads again
    /// (scores committed late with an older `computed_at` are not missed).
    #[serde(rename = "Overlap", default = "default_overlap")]
    pub overlap: u64,
    /// Seconds from the start of one pass over the frontier (scores, merging, probes) to the
    /// start of the next.
    #[serde(rename = "PassInterval", default = "default_pass_interval")]
    pub pass_interval: u64,
    /// URLs read at a time; a path with more is estimated on this many of its URLs.
    #[serde(rename = "Batch", default = "default_batch")]
    pub batch: usize,
    /// Pairs of pages an argument needs before a score is written for it.
    #[serde(rename = "MinPairs", default = "default_min_pairs")]
    pub min_pairs: u32,
    /// The share of a crawler's fetches it may spend on probe URLs (0: none).
    #[serde(rename = "ProbeShare", default = "default_probe_share")]
    pub probe_share: f64,
    /// Probes queued per argument of a path at most (and per path and pass).
    #[serde(rename = "ProbesPerArg", default = "default_probes_per_arg")]
    pub probes_per_arg: u32,
}

impl QargfilterConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.interval == 0 || self.pass_interval == 0 || self.min_pairs == 0 {
            return Err(
                "Qargfilter.Interval, Qargfilter.PassInterval and Qargfilter.MinPairs: must be at least 1"
                    .into(),
            );
        }
        if self.batch < 2 {
            return Err("Qargfilter.Batch: must be at least 2".into());
        }
        if !(0.0..=0.5).contains(&self.probe_share) {
            return Err("Qargfilter.ProbeShare: from 0 to 0.5".into());
        }
        Ok(())
    }
}

impl Default for QargfilterConfig {
    fn default() -> Self {
        QargfilterConfig {
            enable: true,
            interval: default_interval(),
            overlap: default_overlap(),
            pass_interval: default_pass_interval(),
            batch: default_batch(),
            min_pairs: default_min_pairs(),
            probe_share: default_probe_share(),
            probes_per_arg: default_probes_per_arg(),
        }
    }
}

fn yes() -> bool {
    true
}
fn default_interval() -> u64 {
    600
}
fn default_overlap() -> u64 {
    3600
}
fn default_pass_interval() -> u64 {
    3600
}
fn default_batch() -> usize {
    10_000
}
fn default_min_pairs() -> u32 {
    10
}
fn default_probe_share() -> f64 {
    0.02
}
fn default_probes_per_arg() -> u32 {
    10
}
