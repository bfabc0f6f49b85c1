//! The `Hosts.*` keys: the record per host (docs/operations.md "yacobot: the record per
//! host"), which the crawl worker writes with its bookings and reads robots.txt back from.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostsConfig {
    /// 1: the fetcher's news of each host are added to `host` with every booking batch, and a
    /// host's robots.txt is taken from there while it is trusted instead of being fetched.
    #[serde(rename = "Enable", default = "yes")]
    pub enable: bool,
    /// A robots.txt is kept in `host.robots_txt` up to this many bytes (a longer one only by
    /// its digest and length: it is fetched again after a restart). Bounds the memory of the
    /// news held between two writes too.
    #[serde(rename = "RobotsBytes", default = "default_robots_bytes")]
    pub robots_bytes: usize,
    /// Hosts with news held between two writes at most: past it, they are written at once
    /// with the bookings gathered so far.
    #[serde(rename = "Pending", default = "default_pending")]
    pub pending: usize,
}

fn yes() -> bool {
    true
}
fn default_robots_bytes() -> usize {
    65536
}
fn default_pending() -> usize {
    10_000
}

impl Default for HostsConfig {
    fn default() -> Self {
        HostsConfig {
            enable: true,
            robots_bytes: default_robots_bytes(),
            pending: default_pending(),
        }
    }
}

impl HostsConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.pending == 0 {
            return Err("Hosts.Pending: must be at least 1".into());
        }
        // MEDIUMBLOB holds 16 MiB; robots.txt is read up to 512 KiB.
        if self.robots_bytes > 512 << 10 {
            return Err(
                "Hosts.RobotsBytes: at most 524288 (robots.txt is read up to there)".into(),
            );
        }
        Ok(())
    }
}
