//! The `PathBinder.*` keys: site section stubs from the stored bindings (docs/bindings.md "The
//! path binder"; docs/operations.md "yacobot: path binder").

use std::path::{Path, PathBuf};

use focuser_daemon::config::restart_only;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PathBinderConfig {
    /// Off by default. Every `Interval` seconds, a stub for each site section with at least
    /// `MinUrls` bound pages, and each host's insignificant query arguments; the changed ones
    /// appended to the stubs store.
    #[serde(rename = "Enable", default, serialize_with = "restart_only")]
    pub enable: bool,
    /// Seconds between two passes over the stored bindings.
    #[serde(rename = "Interval", default = "default_interval")]
    pub interval: u64,
    /// Fewer bound pages and a section has no stub (a stub it had is withdrawn).
    #[serde(rename = "MinUrls", default = "default_min_urls")]
    pub min_urls: usize,
    /// Directories below a host's root a section may go down to (0: the root only).
    #[serde(rename = "Depth", default = "default_depth")]
    pub depth: usize,
    /// The stubs store: a segment store of ad-server items a reader ships, beside the
    /// bindings store (each store has one writer).
    #[serde(
        rename = "Dir",
        default = "default_dir",
        serialize_with = "restart_only"
    )]
    pub dir: PathBuf,
}

impl PathBinderConfig {
    pub(super) fn validate(&self, archive_dir: &Path, bindings_dir: &Path) -> Result<(), String> {
        if self.interval == 0 || self.min_urls == 0 {
            return Err("PathBinder.Interval and PathBinder.MinUrls: must be at least 1".into());
        }
        if self.depth > 16 {
            return Err("PathBinder.Depth: at most 16".into());
        }
        if self.dir == archive_dir || self.dir == bindings_dir {
            return Err(
                "PathBinder.Dir: must be neither Archive.Dir nor Bindings.Dir (a store of its own)"
                    .into(),
            );
        }
        Ok(())
    }
}

impl Default for PathBinderConfig {
    fn default() -> Self {
        PathBinderConfig {
            enable: false,
            interval: default_interval(),
            min_urls: default_min_urls(),
            depth: default_depth(),
            dir: default_dir(),
        }
    }
}

fn default_interval() -> u64 {
    7200
}

fn default_min_urls() -> usize {
    10
}

fn default_depth() -> usize {
    2
}

fn default_dir() -> PathBuf {
    PathBuf::from("stubs")
}
