//! The page analysis worker's figures (status page, `/status.json`, `/metrics`): pages analysed
//! and their rate, pages not analysed by kind, languages, the commonest categories, the mean
//! template share, the model in use, and how far the worker is behind the archive.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use focuser_daemon::status::{Card, Chart, Figure, Row, StatusSource, Table};

use super::dups::{DupStats, DupTally};
use crate::status::{add, get, Rate};

/// Categories counted at most (the rarest are forgotten beyond), and shown.
const KEPT_CATEGORIES: usize = 1000;
const SHOWN_CATEGORIES: usize = 15;
/// Categories given as labelled figures (`yacobot_multidoc_categories_total{category}`): the
/// commonest only, so that `/metrics` stays small whatever the catalog.
const EXPORTED_CATEGORIES: usize = 100;

/// The kinds of pages or items not analysed, as counted in `yacobot_multidoc_errors_total`.
pub const ERROR_KINDS: [&str; 5] = ["empty", "binary", "too_large", "store", "model"];

/// What one committed batch adds to the figures.
#[derive(Debug, Default)]
pub struct Tally {
    pub analysed: u64,
    pub counted: u64,
    pub reanalysed: u64,
    pub gone: u64,
    /// Per kind of [`ERROR_KINDS`] (only page kinds here).
    pub errors: BTreeMap<&'static str, u64>,
    pub langs: BTreeMap<&'static str, u64>,
    /// The deepest category of each page classified, by its path's names.
    pub categories: HashMap<String, u64>,
    /// Pages a model classified with no category sure enough.
    pub uncategorised: u64,
    pub template_share: f64,
    /// The duplicate groups' part.
    pub dups: DupTally,
}

#[derive(Default)]
pub struct MultiDocStats {
    pub analysed: AtomicU64,
    pub counted: AtomicU64,
    pub reanalysed: AtomicU64,
    pub gone: AtomicU64,
    pub batches: AtomicU64,
    /// Template share summed over the pages analysed, in millionths.
    template_share_micros: AtomicU64,
    pub fingerprints_expired: AtomicU64,
    pub fingerprints_capped: AtomicU64,
    pub domains_expired: AtomicU64,
    /// Items of the archive after the position, and the age of the oldest (seconds).
    pub lag_items: AtomicU64,
    pub lag_seconds: AtomicU64,
    errors: Mutex<BTreeMap<&'static str, u64>>,
    langs: Mutex<BTreeMap<&'static str, u64>>,
    categories: Mutex<HashMap<String, u64>>,
    uncategorised: AtomicU64,
    /// The model in use (`checksum`, or why there is none).
    model: Mutex<String>,
    rate: Rate,
    /// The bindings made in the worker's batches (`Bindings.Enable`).
    pub bind: std::sync::Arc<crate::bindings::BindStats>,
    /// The duplicate groups.
    pub dups: DupStats,
}

impl MultiDocStats {
    /// A committed batch.
    pub fn batch(&self, t: Tally) {
        add(&self.batches, 1);
        add(&self.analysed, t.analysed);
        add(&self.counted, t.counted);
        add(&self.reanalysed, t.reanalysed);
        add(&self.gone, t.gone);
        add(&self.uncategorised, t.uncategorised);
        self.dups.batch(&t.dups);
        add(
            &self.template_share_micros,
            (t.template_share * 1e6).round() as u64,
        );
        if let Ok(mut e) = self.errors.lock() {
            for (k, n) in t.errors {
                *e.entry(k).or_insert(0) += n;
            }
        }
        if let Ok(mut l) = self.langs.lock() {
            for (k, n) in t.langs {
                *l.entry(k).or_insert(0) += n;
            }
        }
        if let Ok(mut c) = self.categories.lock() {
            for (k, n) in t.categories {
                *c.entry(k).or_insert(0) += n;
            }
            if c.len() > KEPT_CATEGORIES {
                let mut counts: Vec<u64> = c.values().copied().collect();
                counts.sort_unstable_by(|a, b| b.cmp(a));
                let least = counts[KEPT_CATEGORIES / 2];
                c.retain(|_, n| *n > least);
            }
        }
        self.sample();
    }

    /// `n` errors that are no page's: archive records that cannot be read, a refused model.
    pub fn error(&self, kind: &'static str, n: u64) {
        if let Ok(mut e) = self.errors.lock() {
            *e.entry(kind).or_insert(0) += n;
        }
    }

    pub fn errors(&self, kind: &str) -> u64 {
        self.errors
            .lock()
            .ok()
            .and_then(|e| e.get(kind).copied())
            .unwrap_or(0)
    }

    pub fn set_model(&self, what: String) {
        if let Ok(mut m) = self.model.lock() {
            *m = what;
        }
    }

    pub fn set_lag(&self, items: u64, seconds: u64) {
        self.lag_items.store(items, Ordering::Relaxed);
        self.lag_seconds.store(seconds, Ordering::Relaxed);
    }

    /// Notes the pages analysed so far (at each batch and each idle step).
    pub fn sample(&self) {
        self.rate.note(&self.analysed);
    }

    /// Pages analysed per second over the last minute.
    pub fn rate(&self) -> f64 {
        self.rate.per_second()
    }

    /// The mean template share of the pages analysed.
    pub fn mean_template_share(&self) -> f64 {
        let n = self.analysed.load(Ordering::Relaxed);
        if n == 0 {
            return 0.0;
        }
        self.template_share_micros.load(Ordering::Relaxed) as f64 / 1e6 / n as f64
    }

    /// The commonest categories, most pages first.
    pub fn top_categories(&self, n: usize) -> Vec<(String, u64)> {
        let Ok(c) = self.categories.lock() else {
            return Vec::new();
        };
        let mut all: Vec<(String, u64)> = c.iter().map(|(k, &v)| (k.clone(), v)).collect();
        all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all.truncate(n);
        all
    }

    fn labelled(&self) -> Vec<Figure> {
        let mut f = Vec::new();
        let errors = self.errors.lock().map(|e| e.clone()).unwrap_or_default();
        for kind in ERROR_KINDS {
            let n = errors.get(kind).copied().unwrap_or(0);
            f.push(
                Figure::counter(
                    "yacobot_multidoc_errors_total",
                    "archived items not analysed, by kind (empty, binary, too_large: the page; store: an unreadable archive record; model: a model file refused)",
                    n as f64,
                )
                .with_label("kind", kind),
            );
        }
        if let Ok(l) = self.langs.lock() {
            for (lang, n) in l.iter() {
                f.push(
                    Figure::counter(
                        "yacobot_multidoc_pages_by_lang_total",
                        "pages analysed, by the language of their main text",
                        *n as f64,
                    )
                    .with_label("lang", lang),
                );
            }
        }
        for (path, n) in self.top_categories(EXPORTED_CATEGORIES) {
            f.push(
                Figure::counter(
                    "yacobot_multidoc_categories_total",
                    "pages analysed, by their category path (the commonest only)",
                    n as f64,
                )
                .with_label("category", &path),
            );
        }
        f
    }
}

impl StatusSource for MultiDocStats {
    fn figures(&self) -> Vec<Figure> {
        let c = |name: &str, help: &str, v: &AtomicU64| Figure::counter(name, help, get(v));
        let g = |name: &str, help: &str, v: &AtomicU64| Figure::gauge(name, help, get(v));
        let mut f = vec![
            c(
                "yacobot_multidoc_pages_total",
                "pages analysed",
                &self.analysed,
            ),
            c(
                "yacobot_multidoc_pages_counted_total",
                "pages counted into their domain's template evidence",
                &self.counted,
            ),
            c(
                "yacobot_multidoc_pages_reanalysed_total",
                "pages analysed again, not counted again (a rewind, a copy archived again)",
                &self.reanalysed,
            ),
            c(
                "yacobot_multidoc_gone_total",
                "DELETE items: analyses removed",
                &self.gone,
            ),
            c(
                "yacobot_multidoc_batches_total",
                "batches committed",
                &self.batches,
            ),
            c(
                "yacobot_multidoc_uncategorised_total",
                "pages the model found no category sure enough for",
                &self.uncategorised,
            ),
            Figure::counter(
                "yacobot_multidoc_template_share_sum",
                "template shares of the pages analysed, summed (over pages_total: the mean)",
                self.template_share_micros.load(Ordering::Relaxed) as f64 / 1e6,
            ),
            c(
                "yacobot_multidoc_fingerprints_expired_total",
                "template fingerprints forgotten after MultiDoc.ExpireDays",
                &self.fingerprints_expired,
            ),
            c(
                "yacobot_multidoc_fingerprints_capped_total",
                "template fingerprints dropped by MultiDoc.MaxFingerprints",
                &self.fingerprints_capped,
            ),
            c(
                "yacobot_multidoc_domains_expired_total",
                "domains whose evidence expired",
                &self.domains_expired,
            ),
            g(
                "yacobot_multidoc_lag_items",
                "archive items after the analysis position",
                &self.lag_items,
            ),
            g(
                "yacobot_multidoc_lag_seconds",
                "age of the oldest archive item not analysed yet",
                &self.lag_seconds,
            ),
        ];
        f.extend(self.labelled());
        f.extend(self.dups.figures());
        f.extend(self.bind.figures());
        f
    }

    fn cards(&self) -> Vec<Card> {
        let page_errors: u64 = ["empty", "binary", "too_large"]
            .iter()
            .map(|k| self.errors(k))
            .sum();
        let store = self.errors("store");
        let model = self.model.lock().map(|m| m.clone()).unwrap_or_default();
        vec![
            Card::number("pages analysed", get(&self.analysed)).unit("pages"),
            Card::number("analysis rate", self.rate())
                .unit("pages/s")
                .help("over the last minute"),
            Card::number("analysis lag", get(&self.lag_items))
                .unit("items")
                .help("archived items not analysed yet"),
            Card::number(
                "mean template share",
                (self.mean_template_share() * 1000.0).round() / 1000.0,
            )
            .help("share of a page's text its domain's evidence calls template"),
            Card::number("pages not analysed", page_errors as f64)
                .unit("pages")
                .help("empty, binary or over MultiDoc.MaxBytes"),
            Card::number("archive read errors", store as f64)
                .unit("items")
                .warn_if(store > 0),
            Card::text("model", &model).warn_if(model.contains("refused")),
        ]
        .into_iter()
        .chain(self.dups.cards())
        .chain(self.bind.cards())
        .collect()
    }

    fn tables(&self) -> Vec<Table> {
        let mut cats = Table::new(
            "multidoc_categories",
            "Commonest categories",
            &["category", "pages"],
        )
        .empty("no page classified yet");
        for (name, n) in self.top_categories(SHOWN_CATEGORIES) {
            cats.push(Row::new(vec![name.into(), n.into()]));
        }
        let mut langs = Table::new("multidoc_languages", "Languages", &["language", "pages"])
            .empty("no page analysed yet");
        if let Ok(l) = self.langs.lock() {
            let mut all: Vec<(&str, u64)> = l.iter().map(|(k, v)| (*k, *v)).collect();
            all.sort_unstable_by_key(|a| std::cmp::Reverse(a.1));
            for (lang, n) in all {
                langs.push(Row::new(vec![lang.into(), n.into()]));
            }
        }
        vec![cats, langs]
    }

    fn charts(&self) -> Vec<Chart> {
        vec![
            Chart::of("yacobot_multidoc_pages_total", "Pages analysed").unit("pages"),
            Chart::of("yacobot_multidoc_lag_items", "Analysis lag").unit("items"),
        ]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn figure(s: &MultiDocStats, name: &str, label: Option<&str>) -> Option<f64> {
        s.figures()
            .into_iter()
            .find(|f| f.name == name && label.is_none_or(|l| f.labels.iter().any(|(_, v)| v == l)))
            .map(|f| f.value)
    }

    #[test]
    fn batches_add_up_in_figures_cards_and_tables() {
        let s = MultiDocStats::default();
        assert_eq!(s.mean_template_share(), 0.0);
        let mut t = Tally {
            analysed: 3,
            counted: 2,
            reanalysed: 1,
            template_share: 0.9,
            ..Tally::default()
        };
        t.errors.insert("binary", 2);
        t.langs.insert("en", 3);
        t.categories.insert("Sports > Soccer".into(), 2);
        t.categories.insert("Science".into(), 1);
        s.batch(t);
        s.error("store", 1);
        assert_eq!(figure(&s, "yacobot_multidoc_pages_total", None), Some(3.0));
        assert_eq!(
            figure(&s, "yacobot_multidoc_errors_total", Some("binary")),
            Some(2.0)
        );
        assert_eq!(
            figure(&s, "yacobot_multidoc_errors_total", Some("store")),
            Some(1.0)
        );
        assert_eq!(
            figure(&s, "yacobot_multidoc_errors_total", Some("too_large")),
            Some(0.0)
        );
        assert_eq!(
            figure(&s, "yacobot_multidoc_pages_by_lang_total", Some("en")),
            Some(3.0)
        );
        assert!((s.mean_template_share() - 0.3).abs() < 1e-9);
        assert_eq!(s.top_categories(1), [("Sports > Soccer".to_string(), 2)]);
        let store = s
            .cards()
            .into_iter()
            .find(|c| c.label == "archive read errors")
            .unwrap();
        assert_eq!(store.state, focuser_daemon::status::State::Warn);
        assert_eq!(s.tables()[0].rows.len(), 2);
    }

    #[test]
    fn the_categories_counted_stay_bounded() {
        let s = MultiDocStats::default();
        for i in 0..3 * KEPT_CATEGORIES {
            let mut t = Tally::default();
            t.categories.insert(format!("c{i}"), 1 + (i % 7) as u64);
            s.batch(t);
        }
        assert!(s.categories.lock().unwrap().len() <= KEPT_CATEGORIES);
        assert_eq!(s.top_categories(1)[0].1, 7);
    }
}
