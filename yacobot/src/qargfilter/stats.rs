//! qargfilter's figures: the import's, and the passes' (scores, merging, probes, bad input).

use std::sync::atomic::AtomicU64;

use focuser_daemon::status::{Card, Figure, StatusSource};

use crate::status::get;

#[derive(Default)]
pub struct QargStats {
    pub imports: AtomicU64,
    pub rules_imported: AtomicU64,
    pub passes: AtomicU64,
    /// Seconds the last whole pass took.
    pub pass_seconds: AtomicU64,
    pub urls_read: AtomicU64,
    pub paths_estimated: AtomicU64,
    pub scores_written: AtomicU64,
    pub variants_merged: AtomicU64,
    pub canonical_made: AtomicU64,
    pub hits_moved: AtomicU64,
    pub probes_queued: AtomicU64,
    /// Bad input: analysed pages with more than `estimate::MAX_ARGS` arguments, argument names
    /// too long to store, fingerprints that are not an MD5.
    pub too_many_args: AtomicU64,
    pub long_names: AtomicU64,
    pub bad_prints: AtomicU64,
}

impl StatusSource for QargStats {
    fn figures(&self) -> Vec<Figure> {
        let c = |name: &str, help: &str, v: &AtomicU64| Figure::counter(name, help, get(v));
        let mut f = vec![
            c(
                "yacobot_qarg_imports_total",
                "qargfilter imports run",
                &self.imports,
            ),
            c(
                "yacobot_qarg_rules_imported_total",
                "path_arg_name rows written by the qargfilter import",
                &self.rules_imported,
            ),
            c(
                "yacobot_qarg_passes_total",
                "passes over the frontier finished",
                &self.passes,
            ),
            Figure::gauge(
                "yacobot_qarg_pass_seconds",
                "seconds the last pass over the frontier took",
                get(&self.pass_seconds),
            ),
            c(
                "yacobot_qarg_urls_read_total",
                "URLs read by the passes",
                &self.urls_read,
            ),
            c(
                "yacobot_qarg_paths_estimated_total",
                "paths whose arguments were estimated",
                &self.paths_estimated,
            ),
            c(
                "yacobot_qarg_scores_written_total",
                "query_args scores written (new or changed evidence)",
                &self.scores_written,
            ),
            c(
                "yacobot_qarg_variants_merged_total",
                "URLs merged into their canonical URL and marked for withdrawal",
                &self.variants_merged,
            ),
            c(
                "yacobot_qarg_canonical_made_total",
                "canonical URLs a merge made",
                &self.canonical_made,
            ),
            c(
                "yacobot_qarg_hits_moved_total",
                "hits merged variants gave their canonical URL",
                &self.hits_moved,
            ),
            c(
                "yacobot_qarg_probes_queued_total",
                "probe URLs queued for arguments with too little evidence",
                &self.probes_queued,
            ),
        ];
        for (reason, v) in [
            ("too_many_args", &self.too_many_args),
            ("long_name", &self.long_names),
            ("bad_fingerprint", &self.bad_prints),
        ] {
            f.push(
                Figure::counter(
                    "yacobot_qarg_refused_total",
                    "input the estimate left out, by reason",
                    get(v),
                )
                .with_label("reason", reason),
            );
        }
        f
    }

    fn cards(&self) -> Vec<Card> {
        vec![
            Card::number("query-argument scores", get(&self.scores_written)).unit("written"),
            Card::number("variants merged", get(&self.variants_merged)).unit("URLs"),
        ]
    }
}
