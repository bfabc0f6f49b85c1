//! The operator's page-analysis tools (docs/operations.md, "Page analysis tools"): how anyone
//! checks what MultiDoc makes of pages of their own. Thin shells over focuser-multidoc:
//!
//! - [`analyze`]: `yacobot analyze FILE|URL…` or `--site DIR`: blocks with their weights, the
//!   top weighted words, the category path with posteriors and the words that weighed most
//!   for it (text, or one JSON object per page);
//! - [`train`]: `yacobot train CORPUS… -o MODEL`: a model from a labelled corpus, with its
//!   accuracy on a held-back part;
//! - [`classify`]: `yacobot classify --model M`: `id \t text` lines in, `id \t path` lines out;
//! - [`tragic`]: `yacobot tragic`: `id \t text` lines in, `id \t 0|1` lines out.
//!
//! Bad input (a page, a corpus line, a stdin line) is said on stderr with where it was and
//! counted; the rest goes on, and the exit status says whether everything was good.

pub mod analyze;
mod bound;
pub mod classify;
mod fetch;
mod render;
pub mod tragic;
pub mod train;

use std::path::{Path, PathBuf};

use anyhow::Context;
use focuser_multidoc::classify::Model;

/// What a tool did: how many of its inputs were bad (each said on stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Done {
    pub bad: usize,
}

impl Done {
    pub fn all_good(&self) -> bool {
        self.bad == 0
    }
}

/// A model file, read and checked (a damaged file is refused with what is wrong with it).
pub fn load_model(path: &Path) -> anyhow::Result<Model> {
    let bytes = std::fs::read(path).with_context(|| format!("model {}", path.display()))?;
    Model::from_bytes(&bytes).with_context(|| format!("model {}", path.display()))
}

/// The regular files under `dir` (following links to files, not to folders, so that a link
/// cannot make a loop), hidden ones left out, in name order.
pub fn files_under(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(d) = folders.pop() {
        let entries = std::fs::read_dir(&d).with_context(|| format!("{}", d.display()))?;
        for e in entries {
            let e = e.with_context(|| format!("{}", d.display()))?;
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = e.path();
            let kind = e
                .file_type()
                .with_context(|| format!("{}", path.display()))?;
            if kind.is_dir() {
                folders.push(path);
            } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Rounded for people and JSON: four decimals are what the weights mean.
fn round(x: f32) -> f64 {
    (f64::from(x) * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn files_under_walks_folders_in_order_without_hidden_ones() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("b/c")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        for f in ["a.html", "b/c/d.txt", "b/e.html", ".hidden", ".git/x"] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink(root, root.join("b/loop")).unwrap();
        let got: Vec<String> = files_under(root)
            .unwrap()
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        assert_eq!(got, ["a.html", "b/c/d.txt", "b/e.html"]);
    }
}
