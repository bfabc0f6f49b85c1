//! master's own keys (the common ones are focuser-daemon's). Documented in conf/master.cf.

use std::path::PathBuf;

use focuser_daemon::config::restart_only;
use focuser_daemon::{CommonConfig, DaemonConfig};
use focuser_formats::reflog::HostPolicy;
use serde::{Deserialize, Serialize};

/// Every cycle takes the running config as it starts, so a reload applies every key but the
/// `restart_only` ones: the master's name and the directories its journal and queue files
/// are kept in, which a cycle in progress or in recovery must find where it left them.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MasterConfig {
    /// This master's name: it prefixes its queue files and signs the domains it assigns.
    #[serde(serialize_with = "restart_only")]
    pub name: String,
    /// Where ad servers drop reflog files (by atomic rename).
    pub incoming_dir: PathBuf,
    /// Queue files go to `queue_dir/<node id>/<name>-<cycle>.q`.
    #[serde(serialize_with = "restart_only")]
    pub queue_dir: PathBuf,
    /// Processed reflog files move here; empty: they are deleted.
    #[serde(default)]
    pub done_dir: Option<PathBuf>,
    #[serde(default = "default_rejects_dir")]
    pub rejects_dir: PathBuf,
    /// Inputs the master cannot process, set aside with their reason (`<name>.why`).
    #[serde(default = "default_bad_dir")]
    pub bad_dir: PathBuf,
    /// current_log and the cycle journal.
    #[serde(default = "default_state_dir", serialize_with = "restart_only")]
    pub state_dir: PathBuf,
    /// Partitions, when a cycle outgrows `Cycle.MemoryLimit`.
    #[serde(default = "default_tmp_dir")]
    pub tmp_dir: PathBuf,
    /// The reflog's time zone: `UTC` or an offset such as `+03:00`.
    #[serde(rename = "TimeZone", default = "default_time_zone")]
    pub time_zone: String,
    #[serde(rename = "Cycle", default)]
    pub cycle: CycleConfig,
    #[serde(rename = "Filter", default)]
    pub filter: FilterConfig,
    #[serde(rename = "Url", default)]
    pub url: UrlConfig,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CycleConfig {
    /// Seconds between cycles (when reflog files are ready).
    #[serde(rename = "Interval", default = "default_interval")]
    pub interval: u64,
    /// At most this many reflog files a cycle; 0: all that are ready.
    #[serde(rename = "MaxFiles", default)]
    pub max_files: usize,
    /// MiB the cycle's working set may take; beyond it the cycle partitions through tmp_dir.
    #[serde(rename = "MemoryLimit", default = "default_memory_limit")]
    pub memory_limit: u64,
    /// A reflog modified less than this many seconds ago is still being written: it waits.
    #[serde(rename = "SettleSeconds", default = "default_settle_seconds")]
    pub settle_seconds: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    /// A URL is forwarded again only after this many seconds (or with a new updatetag).
    #[serde(rename = "Window", default = "default_window")]
    pub window: i64,
    /// A URL not seen for this many seconds leaves current_log.
    #[serde(rename = "Retention", default = "default_retention")]
    pub retention: i64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UrlConfig {
    #[serde(rename = "MaxLength", default = "default_max_length")]
    pub max_length: usize,
    /// Forward URLs whose host is a public IP address.
    #[serde(rename = "AllowIpLiterals", default)]
    pub allow_ip_literals: bool,
    /// Forward URLs whose host is a loopback or private address or `localhost` (test setups).
    #[serde(rename = "AllowPrivate", default)]
    pub allow_private: bool,
}

fn default_rejects_dir() -> PathBuf {
    PathBuf::from("rejects")
}
fn default_bad_dir() -> PathBuf {
    PathBuf::from("bad")
}
fn default_state_dir() -> PathBuf {
    PathBuf::from("state")
}
fn default_tmp_dir() -> PathBuf {
    PathBuf::from("tmp")
}
fn default_time_zone() -> String {
    "UTC".into()
}
fn default_interval() -> u64 {
    60
}
fn default_memory_limit() -> u64 {
    1024
}
fn default_settle_seconds() -> u64 {
    5
}
fn default_window() -> i64 {
    3600
}
fn default_retention() -> i64 {
    36000
}
fn default_max_length() -> usize {
    focuser_formats::urls::MAX_URL_LENGTH
}

impl Default for CycleConfig {
    fn default() -> Self {
        CycleConfig {
            interval: default_interval(),
            max_files: 0,
            memory_limit: default_memory_limit(),
            settle_seconds: default_settle_seconds(),
        }
    }
}

impl Default for FilterConfig {
    fn default() -> Self {
        FilterConfig {
            window: default_window(),
            retention: default_retention(),
        }
    }
}

impl Default for UrlConfig {
    fn default() -> Self {
        UrlConfig {
            max_length: default_max_length(),
            allow_ip_literals: false,
            allow_private: false,
        }
    }
}

impl MasterConfig {
    /// The reflog's offset from UTC in seconds.
    pub fn utc_offset(&self) -> Result<i64, String> {
        parse_offset(&self.time_zone)
            .ok_or_else(|| format!("TimeZone: {:?} is not UTC or ±hh:mm", self.time_zone))
    }

    /// The URL hosts forwarded.
    pub fn host_policy(&self) -> HostPolicy {
        HostPolicy {
            allow_ip_literals: self.url.allow_ip_literals,
            allow_internal: self.url.allow_private,
        }
    }

    /// The memory budget in bytes.
    pub fn memory_budget(&self) -> u64 {
        self.cycle.memory_limit.saturating_mul(1 << 20)
    }
}

fn parse_offset(tz: &str) -> Option<i64> {
    if tz.eq_ignore_ascii_case("UTC") || tz == "Z" {
        return Some(0);
    }
    let (sign, rest) = match tz.as_bytes().first()? {
        b'+' => (1, &tz[1..]),
        b'-' => (-1, &tz[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':')?;
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 14 && m < 60).then_some(sign * (h * 3600 + m * 60))
}

impl DaemonConfig for MasterConfig {
    fn validate(&self, common: &CommonConfig) -> Result<(), String> {
        if self.name.is_empty()
            || self.name.len() > 64
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(
                "name: 1 to 64 letters, digits and `_` (it is part of queue file names)".into(),
            );
        }
        if common.database.is_none() {
            return Err(
                "database: the master needs the domain map (set database or DATABASE_URL)".into(),
            );
        }
        self.utc_offset()?;
        if self.filter.window <= 0 || self.filter.retention <= 0 {
            return Err("Filter.Window and Filter.Retention: must be positive".into());
        }
        if self.cycle.interval == 0 || self.cycle.memory_limit < 16 {
            return Err(
                "Cycle.Interval must be at least 1, Cycle.MemoryLimit at least 16 (MiB)".into(),
            );
        }
        if self.url.max_length < 16 {
            return Err("Url.MaxLength: must be at least 16".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("UTC"), Some(0));
        assert_eq!(parse_offset("+03:00"), Some(10800));
        assert_eq!(parse_offset("-05:30"), Some(-19800));
        assert_eq!(parse_offset("Europe/Moscow"), None);
        assert_eq!(parse_offset("+3"), None);
    }

    /// Every key of the shipped config keeps its value through a reload of the same file
    /// (the running values of restart-only keys are put back through serde).
    #[test]
    fn the_shipped_master_reloads_onto_itself() {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../conf/master.cf");
        let c =
            focuser_daemon::Config::<MasterConfig>::load(std::path::Path::new(file), None).unwrap();
        assert!(c.restart_only_changes(&c).is_empty());
        assert_eq!(c.reloaded(c.clone()).unwrap(), c);
    }
}
