//! The `Bindings.*` keys: ad bindings made by the page analysis worker (docs/bindings.md;
//! docs/operations.md "yacobot: bindings").

use std::path::{Path, PathBuf};

use focuser_daemon::config::restart_only;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BindingsConfig {
    /// Off by default. With `MultiDoc.Enable`, every page analysed is bound with the
    /// dictionaries in force (`yacobot dict load`) and its changed bindings are appended to the
    /// bindings store.
    #[serde(rename = "Enable", default, serialize_with = "restart_only")]
    pub enable: bool,
    /// The bindings store: a segment store of ad-server items a reader ships.
    #[serde(
        rename = "Dir",
        default = "default_dir",
        serialize_with = "restart_only"
    )]
    pub dir: PathBuf,
}

impl BindingsConfig {
    /// Bindings are made by the page analysis worker, and their store is not the archive.
    pub(super) fn validate(&self, multidoc: bool, archive_dir: &Path) -> Result<(), String> {
        if self.enable && !multidoc {
            return Err(
                "Bindings.Enable: pages are bound by the page analysis worker: set MultiDoc.Enable = 1 too"
                    .into(),
            );
        }
        if self.dir == archive_dir {
            return Err("Bindings.Dir: must not be Archive.Dir (a store of its own)".into());
        }
        Ok(())
    }
}

impl Default for BindingsConfig {
    fn default() -> Self {
        BindingsConfig {
            enable: false,
            dir: default_dir(),
        }
    }
}

fn default_dir() -> PathBuf {
    PathBuf::from("bindings")
}
