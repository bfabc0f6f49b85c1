//! The classifier's model as the worker holds it: read at open, and again when a reload
//! changes `MultiDoc.Model` or the file changes (its size or time, then its checksum). A file
//! that cannot be read or is damaged is refused with one log line naming it and why: the
//! model in use stays (none at the start: pages are then analysed without categories). The
//! daemon goes on crawling and analysing either way: a bad model file is the operator's to
//! fix, not a reason to stop the node.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use focuser_multidoc::classify::Model;
use focuser_multidoc::tokenize::Tokenizer;

use super::stats::MultiDocStats;

/// The file as last looked at: its size and modification time.
type Stamp = Option<(u64, Option<SystemTime>)>;

pub struct ModelSlot {
    /// The configured file (resolved); empty: no model.
    path: PathBuf,
    stamp: Stamp,
    /// Whether it was looked at yet.
    looked: bool,
    model: Option<Model>,
    /// The model's tokenizer (its options), or the default one without a model: it caches
    /// stems from page to page.
    tokenizer: Tokenizer,
}

impl Default for ModelSlot {
    fn default() -> Self {
        ModelSlot {
            path: PathBuf::new(),
            stamp: None,
            looked: false,
            model: None,
            tokenizer: Tokenizer::new(Default::default()),
        }
    }
}

impl ModelSlot {
    /// The model of `path` (empty: none) read once, for a tool; or why it cannot be read.
    pub fn open(path: &Path) -> Result<ModelSlot, String> {
        let mut slot = ModelSlot::default();
        if !path.as_os_str().is_empty() {
            let m = read(path).map_err(|why| format!("model {}: {why}", path.display()))?;
            slot.set(Some(m));
        }
        Ok(slot)
    }

    pub fn model(&self) -> Option<&Model> {
        self.model.as_ref()
    }

    /// The model (if any) and the tokenizer the pages are to go through.
    pub fn parts(&mut self) -> (Option<&Model>, &mut Tokenizer) {
        (self.model.as_ref(), &mut self.tokenizer)
    }

    /// Looks at `path` (empty: no model) and reads it if it is another file than the one
    /// looked at last, or the same file changed. Cheap when nothing changed (one `stat`).
    pub fn refresh(&mut self, path: &Path, stats: &MultiDocStats) {
        let none = path.as_os_str().is_empty();
        let stamp = if none {
            None
        } else {
            std::fs::metadata(path)
                .ok()
                .map(|m| (m.len(), m.modified().ok()))
        };
        if self.looked && path == self.path && stamp == self.stamp {
            return;
        }
        let moved = !self.looked || path != self.path;
        self.looked = true;
        self.path = path.to_path_buf();
        self.stamp = stamp;
        if none {
            if self.model.is_some() {
                log::info!(
                    "multidoc: MultiDoc.Model is empty: pages are analysed without categories"
                );
            }
            self.set(None);
            stats.set_model("none".into());
            return;
        }
        if stamp.is_none() && !moved {
            // Gone since it was read (being replaced?): the model in use stays.
            return;
        }
        match read(path) {
            Ok(m)
                if self
                    .model()
                    .is_some_and(|old| old.checksum() == m.checksum()) =>
            {
                // The file in use again (after a refusal, or touched): no longer refused.
                stats.set_model(format!("{:08x}", m.checksum()));
            }
            Ok(m) => {
                log::info!(
                    "multidoc: model {} in use (checksum {:08x}, {} categories, {} documents); pages analysed before keep their categories until analysed again (yacobot multidoc rewind)",
                    path.display(),
                    m.checksum(),
                    m.catalog().len(),
                    m.documents()
                );
                stats.set_model(format!("{:08x}", m.checksum()));
                self.set(Some(m));
            }
            Err(why) => {
                stats.error("model", 1);
                let keeps = match self.model() {
                    Some(m) => {
                        // The card says both: what classifies, and that the file was refused.
                        stats.set_model(format!("{:08x} (the file was refused)", m.checksum()));
                        format!("the model in use ({:08x}) stays", m.checksum())
                    }
                    None => {
                        stats.set_model("refused".into());
                        "pages are analysed without categories".to_string()
                    }
                };
                log::error!("multidoc: model {} refused: {why}; {keeps}", path.display());
            }
        }
    }

    fn set(&mut self, model: Option<Model>) {
        self.tokenizer = match &model {
            Some(m) => m.tokenizer(),
            None => Tokenizer::new(Default::default()),
        };
        self.model = model;
    }
}

/// The model in `path`, or why not.
fn read(path: &Path) -> Result<Model, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    Model::from_bytes(&bytes).map_err(|e| e.to_string())
}
