//! Files that stay in an inbox because they cannot be moved away (`bad/` or `done/` not
//! writable, an applied file that cannot be deleted): each is logged once, then in a summary a
//! minute while it stays, never at every pass — and an applied one found again is not
//! reported as "applied before" at every pass either.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use focuser_daemon::episode::Episodes;
use log::Level;

/// Files whose episodes are tracked one by one at most (the rest share one).
const TRACKED: usize = 100;

pub struct Left {
    episodes: Episodes<String>,
    paths: HashSet<PathBuf>,
}

impl Default for Left {
    fn default() -> Self {
        Left {
            episodes: Episodes::new("queue file left in the inbox", TRACKED),
            paths: HashSet::new(),
        }
    }
}

impl Left {
    /// Moving `path` away failed (`detail` says how). Returns whether a line was logged.
    pub fn failed(&mut self, master: &str, name: &str, path: &Path, detail: &str) -> bool {
        self.paths.insert(path.to_path_buf());
        self.episodes
            .occurred(format!("{master}/{name}"), Level::Error, &detail)
    }

    pub fn moved(&mut self, path: &Path) {
        self.paths.remove(path);
    }

    /// Was `path` left in its inbox by an earlier pass?
    pub fn contains(&self, path: &Path) -> bool {
        self.paths.contains(path)
    }

    /// Forgets the files of `dir` that are not in its listing `files` any more (taken away by
    /// hand): what is remembered never outgrows the inboxes.
    pub fn listed(&mut self, dir: &Path, files: &[PathBuf]) {
        self.paths
            .retain(|p| !p.starts_with(dir) || files.binary_search(p).is_ok());
    }
}
