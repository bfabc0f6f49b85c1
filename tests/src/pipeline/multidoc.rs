//! Page analysis in the pipeline (`Plan::multidoc`): a sample model trained with `yacobot
//! train` from the committed corpus (`multidoc/corpus/tgcontest/`, labels mapped to the IAB
//! catalog), every node's yacobot run with `MultiDoc.Enable = 1` and that model, and the
//! multidoc worker's figures read from each node's status endpoint — the same figures as its
//! `/metrics`:
//!
//! | figure (`/metrics` name) | what the run reads |
//! | --- | --- |
//! | `focuser_yacobot_multidoc_pages_total` | pages analysed |
//! | `focuser_yacobot_multidoc_errors_total{kind="empty"\|"binary"\|"too_large"}` | pages the analysis refused (other kinds are not pages) |
//! | `focuser_yacobot_multidoc_categories_total{category="A > B"}` | pages by their category path |
//! | `focuser_yacobot_multidoc_pages_by_lang_total{lang="ru"}` | pages by language |
//! | `focuser_yacobot_multidoc_lag_items` | archive items not analysed yet (the wait ends at 0) |

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::plan::Plan;
use crate::Error;

/// The figures' names as `/status.json` has them (`/metrics` adds `focuser_`).
pub const PAGES: &str = "yacobot_multidoc_pages_total";
pub const ERRORS: &str = "yacobot_multidoc_errors_total";
pub const CATEGORIES: &str = "yacobot_multidoc_categories_total";
pub const LANGUAGES: &str = "yacobot_multidoc_pages_by_lang_total";
pub const LAG: &str = "yacobot_multidoc_lag_items";
/// The kinds of `ERRORS` that are pages refused (the others are not pages: an unreadable
/// archive record, a refused model file).
pub const PAGE_ERRORS: [&str; 3] = ["empty", "binary", "too_large"];

/// The corpus, the catalog its labels name, and the model the run trains.
pub fn corpus(plan: &Plan) -> PathBuf {
    super::pages::corpus_file(&plan.repo)
}

pub fn catalog(plan: &Plan) -> PathBuf {
    plan.repo
        .join("multidoc/catalog/iab-content-taxonomy-3.1.tsv")
}

pub fn model(plan: &Plan) -> PathBuf {
    plan.dir.join("multidoc/sample.model")
}

/// `yacobot train` of the sample model, as an operator runs it; returns what it printed. A
/// corpus line it had to pass over is an error: the committed corpus must be clean.
pub fn train_sample(plan: &Plan) -> Result<String, Error> {
    let out_file = model(plan);
    if let Some(dir) = out_file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut cmd = Command::new(plan.bin_dir.join("yacobot"));
    cmd.arg("train")
        .arg(corpus(plan))
        .arg("--catalog")
        .arg(catalog(plan))
        .arg("-o")
        .arg(&out_file);
    let out = crate::output_within(&mut cmd, Duration::from_secs(300));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "yacobot train of the sample model failed ({}):\n{said}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(said)
}

/// What a node's multidoc worker says it did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    pub pages: f64,
    /// Pages refused (`PAGE_ERRORS`).
    pub errors: f64,
    /// Archive items not analysed yet, if the worker says.
    pub lag: Option<f64>,
    /// Pages per category path; pages without a category are in none.
    pub categories: BTreeMap<String, f64>,
    pub languages: BTreeMap<String, f64>,
}

impl Figures {
    /// The figures in a node's `/status.json`; None when it has none (no multidoc worker).
    pub fn of(status: &Value) -> Option<Figures> {
        let figures = status["figures"].as_array()?;
        let mut f = Figures::default();
        let mut seen = false;
        for fig in figures {
            let (Some(name), Some(value)) = (fig["name"].as_str(), fig["value"].as_f64()) else {
                continue;
            };
            let label = |key: &str| label(fig, key).unwrap_or_default();
            match name {
                PAGES => {
                    seen = true;
                    f.pages += value;
                }
                ERRORS if PAGE_ERRORS.contains(&label("kind").as_str()) => f.errors += value,
                LAG => *f.lag.get_or_insert(0.0) += value,
                CATEGORIES => *f.categories.entry(label("category")).or_default() += value,
                LANGUAGES => *f.languages.entry(label("lang")).or_default() += value,
                _ => {}
            }
        }
        seen.then_some(f)
    }

    /// Pages without a category.
    pub fn uncategorised(&self) -> f64 {
        (self.pages - self.categories.values().sum::<f64>()).max(0.0)
    }

    /// Adds another node's figures.
    pub fn add(&mut self, other: &Figures) {
        self.pages += other.pages;
        self.errors += other.errors;
        if let Some(lag) = other.lag {
            *self.lag.get_or_insert(0.0) += lag;
        }
        for (k, v) in &other.categories {
            *self.categories.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.languages {
            *self.languages.entry(k.clone()).or_default() += v;
        }
    }
}

/// A figure's label value: `/status.json` has the labels as `[["key", "value"], …]`.
fn label(figure: &Value, key: &str) -> Option<String> {
    figure["labels"].as_array()?.iter().find_map(|kv| {
        let kv = kv.as_array()?;
        (kv.first()?.as_str()? == key).then(|| kv.get(1)?.as_str().map(str::to_owned))?
    })
}

/// `A 12, B 3, (none) 4`, largest first.
pub fn counts(m: &BTreeMap<String, f64>, none: f64) -> String {
    let mut all: Vec<(&str, f64)> = m.iter().map(|(k, &v)| (k.as_str(), v)).collect();
    if none > 0.0 {
        all.push(("(none)", none));
    }
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = all.iter().map(|(k, v)| format!("{k} {v}")).collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// The summary's lines about page analysis (`per_node` lays out one figure per node).
pub fn summary(
    plan: &Plan,
    analysis: &[Option<Figures>],
    labels: &[BTreeMap<String, usize>],
    per_node: impl Fn(&[usize]) -> String,
) -> Vec<String> {
    if !plan.multidoc {
        return vec![
            "pages analysed     none: page analysis is off in this run (--no-multidoc)".into(),
        ];
    }
    if analysis.iter().all(Option::is_none) {
        return vec![format!(
            "pages analysed     no figures: the nodes' status endpoints have no {PAGES} (is the multidoc worker in this build?)"
        )];
    }
    let mut all = Figures::default();
    for f in analysis.iter().flatten() {
        all.add(f);
    }
    let pages: Vec<usize> = analysis
        .iter()
        .map(|f| f.as_ref().map_or(0, |f| f.pages as usize))
        .collect();
    vec![
        format!(
            "pages analysed     {}; {} refused",
            per_node(&pages),
            all.errors
        ),
        format!(
            "categories         {}",
            counts(&all.categories, all.uncategorised())
        ),
        format!("languages          {}", counts(&all.languages, 0.0)),
        format!(
            "as labelled        {} of the pages got the top category of the article they show",
            agreements(plan, analysis, labels)
        ),
    ]
}

/// `0.912 (yb1 0.93, yb2 0.90)`: the agreement of all nodes, then of each.
fn agreements(
    plan: &Plan,
    analysis: &[Option<Figures>],
    labels: &[BTreeMap<String, usize>],
) -> String {
    let (mut same, mut total) = (0.0, 0.0);
    let mut each = Vec::new();
    for (n, (f, l)) in analysis.iter().zip(labels).enumerate() {
        let Some(f) = f else { continue };
        let pages: f64 = l.values().sum::<usize>() as f64;
        let a = agreement(f, l);
        same += a * pages;
        total += pages;
        each.push(format!("{} {a:.3}", plan.node_name(n + 1)));
    }
    if total == 0.0 {
        return "none".into();
    }
    format!("{:.3} ({})", same / total, each.join(", "))
}

/// The lines of `yacobot train`'s report the run shows: what it read, how accurate, the file.
pub fn trained_lines(said: &str) -> Vec<&str> {
    said.lines()
        .filter(|l| {
            ["corpus ", "accuracy ", "model "]
                .iter()
                .any(|k| l.starts_with(k))
        })
        .collect()
}

/// The least share of a node's pages whose top category must be that of the article they
/// show: the model was trained on these very articles, so less means the analysis lost the
/// article to the template (or the model is not the one trained).
pub const MIN_AGREEMENT: f64 = 0.8;

/// The share of pages whose top category (the first step of its path) is that of the article
/// they show, from the counts on both sides: `labels` are the articles' labels of the pages
/// the node fetched ([`super::pages`]). Pages the analysis refused or left without a category
/// count against it.
pub fn agreement(f: &Figures, labels: &BTreeMap<String, usize>) -> f64 {
    let top = |path: &str| path.split(" > ").next().unwrap_or_default().to_string();
    let mut want: BTreeMap<String, f64> = BTreeMap::new();
    for (k, v) in labels {
        *want.entry(top(k)).or_default() += *v as f64;
    }
    let mut got: BTreeMap<String, f64> = BTreeMap::new();
    for (k, v) in &f.categories {
        *got.entry(top(k)).or_default() += v;
    }
    let total: f64 = want.values().sum();
    if total == 0.0 {
        return 1.0;
    }
    let same: f64 = want
        .iter()
        .map(|(k, w)| w.min(got.get(k).copied().unwrap_or(0.0)))
        .sum();
    same / total
}

/// What must hold once the pipeline has settled: each node analysed every page it archived
/// (or refused it, counted as an error), and classified at least [`MIN_AGREEMENT`] of them as
/// their articles are labelled. `fetched[n - 1]` is node n's pages fetched, `labels[n - 1]`
/// their articles' labels.
pub fn check(
    plan: &Plan,
    figures: &[Option<Figures>],
    fetched: &[usize],
    labels: &[BTreeMap<String, usize>],
) -> Vec<String> {
    let mut problems = Vec::new();
    for (n, (f, &fetched)) in figures.iter().zip(fetched).enumerate() {
        let node = plan.node_name(n + 1);
        let Some(f) = f else {
            problems.push(format!(
                "{node}: no page analysis figures ({PAGES}) on its status endpoint: is the multidoc worker running?"
            ));
            continue;
        };
        if f.pages + f.errors != fetched as f64 {
            problems.push(format!(
                "{node}: {} pages analysed and {} refused, {fetched} fetched",
                f.pages, f.errors
            ));
        }
        let categorised: f64 = f.categories.values().sum();
        if categorised > f.pages {
            problems.push(format!(
                "{node}: {categorised} pages with a category, more than the {} analysed",
                f.pages
            ));
        }
        if let Some(labels) = labels.get(n) {
            let agree = agreement(f, labels);
            if agree < MIN_AGREEMENT {
                problems.push(format!(
                    "{node}: {agree:.3} of its pages got their article's category, less than {MIN_AGREEMENT}"
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::super::daemons::{self, Kind};
    use super::super::test_plan;
    use super::*;

    /// The sample model is trained from the committed corpus with every line good, it
    /// classifies, and each node's generated config runs page analysis with it.
    #[test]
    fn the_sample_model_is_trained_and_every_node_is_configured_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan {
            multidoc: true,
            ..test_plan(dir.path())
        };
        let said = train_sample(&plan).unwrap();
        let lines = trained_lines(&said);
        assert_eq!(lines.len(), 3, "{said}");
        assert_eq!(
            lines[0],
            "corpus      325 documents from 1 source (0 skipped), 7 categories"
        );
        let accuracy: f64 = lines[1].split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(accuracy >= 0.6, "{said}");
        assert!(model(&plan).is_file());

        let mut cmd = Command::new(plan.bin_dir.join("yacobot"));
        cmd.arg("classify").arg("--model").arg(model(&plan));
        let line = "1\tФутбольный клуб выиграл матч чемпионата, нападающий забил гол.\n";
        let out = crate::output_with_input(&mut cmd, line.as_bytes(), Duration::from_secs(60));
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("1\tSports ("));

        daemons::write_all(&plan).unwrap();
        let yacobots: Vec<_> = daemons::instances(&plan)
            .into_iter()
            .filter(|i| i.kind == Kind::Yacobot)
            .collect();
        assert_eq!(yacobots.len(), 2);
        for i in yacobots {
            let out = crate::check_config(&i.binary, &i.config, &[]);
            let shown = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{shown}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let model_line = format!("MultiDoc.Model = {}", model(&plan).display());
            assert!(shown.contains("MultiDoc.Enable = 1"), "{shown}");
            assert!(shown.contains(&model_line), "{shown}");
        }
    }

    #[test]
    fn the_check_wants_every_fetched_page_analysed_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan {
            multidoc: true,
            ..test_plan(dir.path())
        };
        let f = |pages: f64, errors: f64, sports: f64| Figures {
            pages,
            errors,
            lag: None,
            categories: [("Sports".to_string(), sports)].into(),
            languages: BTreeMap::new(),
        };
        let good = [Some(f(9.0, 1.0, 4.0)), Some(f(5.0, 0.0, 5.0))];
        // Node 1 shows 4 sports articles of 5 (0.8), node 2 five of five.
        let labels = |sports: usize, other: usize| -> BTreeMap<String, usize> {
            [
                ("Sports".to_string(), sports),
                ("Science > Weather".to_string(), other),
            ]
            .into()
        };
        let good_labels = [labels(4, 1), labels(5, 0)];
        assert!(check(&plan, &good, &[10, 5], &good_labels).is_empty());
        assert_eq!(agreement(good[0].as_ref().unwrap(), &labels(4, 1)), 0.8);
        assert_eq!(agreement(good[0].as_ref().unwrap(), &labels(2, 8)), 0.2);
        let bad = [None, Some(f(4.0, 0.0, 6.0))];
        let problems = check(&plan, &bad, &[10, 5], &[labels(1, 0), labels(1, 4)]);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].starts_with("yb1: no page analysis figures"));
        assert_eq!(
            problems[1],
            "yb2: 4 pages analysed and 0 refused, 5 fetched"
        );
        assert!(problems[2].starts_with("yb2: 6 pages with a category"));
        assert_eq!(
            problems[3],
            "yb2: 0.200 of its pages got their article's category, less than 0.8"
        );
        let lines = summary(&plan, &good, &good_labels, |v| format!("{v:?}"));
        assert_eq!(lines[0], "pages analysed     [9, 5]; 1 refused");
        assert_eq!(lines[1], "categories         Sports 9, (none) 5");
        assert_eq!(
            lines[3],
            "as labelled        0.900 (yb1 0.800, yb2 1.000) of the pages got the top category of the article they show"
        );
        let lines = summary(&plan, &[None, None], &[], |v| format!("{v:?}"));
        assert!(lines[0].contains("no figures"), "{lines:?}");
    }

    #[test]
    fn figures_are_read_from_a_status_json() {
        let status: Value = serde_json::json!({"figures": [
            {"name": "yacobot_multidoc_pages_total", "labels": [], "value": 10.0},
            {"name": "yacobot_multidoc_errors_total", "labels": [["kind", "binary"]], "value": 1.0},
            {"name": "yacobot_multidoc_errors_total", "labels": [["kind", "store"]], "value": 5.0},
            {"name": "yacobot_multidoc_lag_items", "labels": [], "value": 0.0},
            {"name": "yacobot_multidoc_categories_total", "labels": [["category", "Sports"]], "value": 6.0},
            {"name": "yacobot_multidoc_categories_total", "labels": [["category", "Science > Weather"]], "value": 2.0},
            {"name": "yacobot_multidoc_pages_by_lang_total", "labels": [["lang", "en"]], "value": 10.0},
            {"name": "yacobot_in_flight", "labels": [], "value": 3.0},
        ]});
        let f = Figures::of(&status).unwrap_or_default();
        assert_eq!((f.pages, f.errors, f.uncategorised()), (10.0, 1.0, 2.0));
        assert_eq!(f.lag, Some(0.0));
        assert_eq!(
            counts(&f.categories, f.uncategorised()),
            "Sports 6, (none) 2, Science > Weather 2"
        );
        assert_eq!(counts(&f.languages, 0.0), "en 10");
        let none: Value = serde_json::json!({"figures": [{"name": "yacobot_in_flight", "labels": [], "value": 3.0}]});
        assert_eq!(Figures::of(&none), None);
    }
}
