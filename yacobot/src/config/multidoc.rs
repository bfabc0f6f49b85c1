//! The `MultiDoc.*` keys: the page-analysis worker (docs/multidoc.md, docs/classifier.md;
//! docs/operations.md "yacobot: page analysis").

use std::path::PathBuf;

use focuser_daemon::config::restart_only;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MultiDocConfig {
    /// Off by default: a node analyses its pages only when asked to.
    #[serde(rename = "Enable", default, serialize_with = "restart_only")]
    pub enable: bool,
    /// The classifier's model file (`yacobot train` writes one); empty: pages are analysed
    /// without categories. A reload reads a changed file again.
    #[serde(rename = "Model", default)]
    pub model: PathBuf,
    /// Pages analysed in one transaction (their template counts, their rows, the position).
    #[serde(rename = "Batch", default = "default_batch")]
    pub batch: usize,
    /// Largest page analysed (bytes); a larger one is counted and passed over.
    #[serde(rename = "MaxBytes", default = "default_max_bytes")]
    pub max_bytes: usize,
    /// Block fingerprints a domain keeps at most (the least seen go first).
    #[serde(rename = "MaxFingerprints", default = "default_max_fingerprints")]
    pub max_fingerprints: u32,
    /// Days after which a fingerprint not seen again is forgotten.
    #[serde(rename = "ExpireDays", default = "default_expire_days")]
    pub expire_days: u32,
}

impl MultiDocConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.batch == 0 || self.max_bytes == 0 || self.max_fingerprints == 0 {
            return Err(
                "MultiDoc.Batch, MultiDoc.MaxBytes and MultiDoc.MaxFingerprints: must be at least 1"
                    .into(),
            );
        }
        if self.expire_days == 0 {
            return Err("MultiDoc.ExpireDays: must be at least 1".into());
        }
        Ok(())
    }
}

impl Default for MultiDocConfig {
    fn default() -> Self {
        MultiDocConfig {
            enable: false,
            model: PathBuf::new(),
            batch: default_batch(),
            max_bytes: default_max_bytes(),
            max_fingerprints: default_max_fingerprints(),
            expire_days: default_expire_days(),
        }
    }
}

fn default_batch() -> usize {
    100
}
fn default_max_bytes() -> usize {
    16 << 20
}
fn default_max_fingerprints() -> u32 {
    20_000
}
fn default_expire_days() -> u32 {
    30
}
