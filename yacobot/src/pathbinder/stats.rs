//! The path binder's figures (status page, `/status.json`, `/metrics`).

use std::sync::atomic::AtomicU64;

use focuser_daemon::status::{Card, Figure, StatusSource};

use crate::status::{add, get};

#[derive(Default)]
pub struct PathStats {
    pub passes: AtomicU64,
    pub domains: AtomicU64,
    /// Sections with at least one bound page, over all passes.
    pub sections: AtomicU64,
    /// Stubs built (sections with enough bound pages), over all passes.
    pub stubs: AtomicU64,
    /// Items appended: stubs and query arguments new or changed.
    pub shipped: AtomicU64,
    pub query_args: AtomicU64,
    pub withdrawn: AtomicU64,
    pub unchanged: AtomicU64,
    /// Stored bindings that could not be read (logged).
    pub bad: AtomicU64,
    /// The last pass's stubs, for the card.
    pub last_stubs: AtomicU64,
}

impl PathStats {
    pub fn count(&self, counter: &AtomicU64, n: u64) {
        add(counter, n);
    }
}

impl StatusSource for PathStats {
    fn figures(&self) -> Vec<Figure> {
        let c = |name: &str, help: &str, v: &AtomicU64| Figure::counter(name, help, get(v));
        vec![
            c("yacobot_pathbinder_passes_total", "path binder passes done", &self.passes),
            c(
                "yacobot_pathbinder_sections_total",
                "site sections seen with a bound page, all passes together",
                &self.sections,
            ),
            c(
                "yacobot_pathbinder_stubs_total",
                "stubs built (sections with PathBinder.MinUrls bound pages), all passes together",
                &self.stubs,
            ),
            c(
                "yacobot_pathbinder_shipped_total",
                "stub and query_args items appended to the stubs store (new or changed)",
                &self.shipped,
            ),
            c(
                "yacobot_pathbinder_query_args_total",
                "of them query_args items",
                &self.query_args,
            ),
            c(
                "yacobot_pathbinder_withdrawn_total",
                "DELETE items appended: sections with too few bound pages now, hosts without insignificant arguments",
                &self.withdrawn,
            ),
            c(
                "yacobot_pathbinder_unchanged_total",
                "items equal to the one shipped last: not shipped again",
                &self.unchanged,
            ),
            c(
                "yacobot_pathbinder_bad_bindings_total",
                "stored bindings that could not be read (logged)",
                &self.bad,
            ),
        ]
    }

    fn cards(&self) -> Vec<Card> {
        if get(&self.passes) == 0.0 {
            return Vec::new();
        }
        vec![Card::number("stubs built", get(&self.last_stubs)).help("by the last path binder pass")]
    }
}
