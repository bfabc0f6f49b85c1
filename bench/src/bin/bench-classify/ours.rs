//! focuser's side: the catalog made from the labels, one block a document, training with the
//! temperature fitted on a held-back tenth, the test part classified.

use std::time::Instant;

use focuser_multidoc::classify::{train_and_evaluate, Catalog, Corpus, Model, Params};
use focuser_multidoc::tokenize::{self, Features, Tokenizer};

use crate::sets::{Item, Metric, Set};

pub struct Outcome {
    pub score: f64,
    pub train_s: f64,
    pub test_s: f64,
    pub features: usize,
}

/// Joins the labels of a label set (a multi-label document's one class).
const SET_JOIN: &str = " + ";

/// The catalog nodes of an item's labels (made as they come); with `sets`, the one node of
/// its set of labels.
fn labels(catalog: &mut Catalog, item: &Item, sets: bool) -> Vec<u32> {
    if sets {
        let mut names: Vec<String> = item.labels.iter().map(|p| p.join("/")).collect();
        names.sort();
        return catalog
            .add_path([names.join(SET_JOIN).as_str()])
            .into_iter()
            .collect();
    }
    item.labels
        .iter()
        .filter_map(|path| catalog.add_path(path.iter().map(String::as_str)))
        .collect()
}

fn corpus(items: &[Item], catalog: &mut Catalog, t: &mut Tokenizer, sets: bool) -> Corpus {
    let mut corpus = Corpus::new();
    let mut f = Features::default();
    for item in items {
        t.page(None, [(item.text.as_str(), 1.0)], &mut f);
        let l = labels(catalog, item, sets);
        corpus.add(&l, &f);
    }
    corpus
}

/// An item's labels as text.
fn gold(item: &Item) -> Vec<String> {
    item.labels.iter().map(|p| p.join("/")).collect()
}

/// Predicted classes as labels (a label set's class gives each of its labels).
fn names(model: &Model, classes: &[u32], sets: bool) -> Vec<String> {
    let sep = focuser_multidoc::classify::PATH_SEPARATOR;
    let mut out: Vec<String> = Vec::new();
    for &c in classes {
        let id = model.catalog().node(c).map_or("", |n| n.id.as_str());
        let id = id.replace(sep, "/");
        if sets {
            out.extend(id.split(SET_JOIN).map(str::to_owned));
        } else {
            out.push(id);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Trains on `set.train` and scores `set.test`.
pub fn run(
    set: &Set,
    params: &Params,
    options: tokenize::Options,
    sets: bool,
    alphas: &[f32],
) -> anyhow::Result<Outcome> {
    let sets = sets && set.metric == Metric::MicroF1;
    let t0 = Instant::now();
    let mut t = Tokenizer::new(options);
    let mut catalog = Catalog::new();
    let train = corpus(&set.train, &mut catalog, &mut t, sets);
    let (model, report) = train_and_evaluate(&catalog, &train, params, options, 10, alphas)?;
    let train_s = t0.elapsed().as_secs_f64();
    println!(
        "{}: smoothing {} chosen on a held-back tenth of train ({}), temperature {:.1}",
        set.name,
        report.alpha,
        report
            .tried
            .iter()
            .map(|(a, acc)| format!("{a}: {acc:.4}"))
            .collect::<Vec<_>>()
            .join(", "),
        report.temperature
    );
    let rule = if set.metric == Metric::MicroF1 {
        multi_label_rule(set, params, options, sets, alphas)?
    } else {
        Rule::One
    };
    let t1 = Instant::now();
    let mut f = Features::default();
    let mut gold = Vec::new();
    let mut predicted = Vec::new();
    for item in &set.test {
        t.page(None, [(item.text.as_str(), 1.0)], &mut f);
        gold.push(self::gold(item));
        predicted.push(names(&model, &predict(&model.posteriors(&f), rule), sets));
    }
    let test_s = t1.elapsed().as_secs_f64();
    if set.metric == Metric::MicroF1 {
        let (tp, p, g) = gold
            .iter()
            .zip(&predicted)
            .fold((0, 0, 0), |(tp, p, g), (gl, pr)| {
                (
                    tp + pr.iter().filter(|x| gl.contains(x)).count(),
                    p + pr.len(),
                    g + gl.len(),
                )
            });
        println!(
            "{}: further labels by {rule:?}; precision {:.4}, recall {:.4}, {:.3} labels a document ({:.3} given)",
            set.name,
            tp as f64 / p.max(1) as f64,
            tp as f64 / g.max(1) as f64,
            p as f64 / gold.len().max(1) as f64,
            g as f64 / gold.len().max(1) as f64,
        );
    }
    Ok(Outcome {
        score: score(set.metric, &gold, &predicted),
        train_s,
        test_s,
        features: model.feature_count(),
    })
}

/// When a document gets more than its most probable class (multi-label sets).
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// No more.
    One,
    /// Every class whose posterior reaches this.
    Absolute(f32),
    /// Every class whose posterior reaches this share of the best one's.
    Relative(f32),
}

/// The most probable class, then the others the rule lets in.
fn predict(post: &[(u32, f32)], rule: Rule) -> Vec<u32> {
    let Some(&(best, top)) = post.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return Vec::new();
    };
    let bar = match rule {
        Rule::One => f32::INFINITY,
        Rule::Absolute(t) => t,
        Rule::Relative(r) => r * top,
    };
    let mut out = vec![best];
    out.extend(
        post.iter()
            .filter(|&&(c, p)| p >= bar && c != best)
            .map(|&(c, _)| c),
    );
    out
}

fn score(metric: Metric, gold: &[Vec<String>], predicted: &[Vec<String>]) -> f64 {
    match metric {
        Metric::Accuracy => {
            let right = gold
                .iter()
                .zip(predicted)
                .filter(|(g, p)| p.first().is_some_and(|x| g.contains(x)))
                .count();
            right as f64 / gold.len().max(1) as f64
        }
        Metric::MicroF1 => {
            let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
            for (g, p) in gold.iter().zip(predicted) {
                let hit = p.iter().filter(|x| g.contains(x)).count();
                tp += hit;
                fp += p.len() - hit;
                fn_ += g.len() - hit;
            }
            2.0 * tp as f64 / (2 * tp + fp + fn_).max(1) as f64
        }
    }
}

/// The rule for further labels, chosen on the train part cut again (never on the test part):
/// the best micro-F1 over a grid of absolute and relative thresholds.
fn multi_label_rule(
    set: &Set,
    params: &Params,
    options: tokenize::Options,
    sets: bool,
    alphas: &[f32],
) -> anyhow::Result<Rule> {
    let inner = set.inner();
    let mut t = Tokenizer::new(options);
    let mut catalog = Catalog::new();
    let train = corpus(&inner.train, &mut catalog, &mut t, sets);
    let (model, _) = train_and_evaluate(&catalog, &train, params, options, 10, alphas)?;
    let mut f = Features::default();
    let mut gold = Vec::new();
    let mut posts = Vec::new();
    for item in &inner.test {
        t.page(None, [(item.text.as_str(), 1.0)], &mut f);
        gold.push(self::gold(item));
        posts.push(model.posteriors(&f));
    }
    let rules = (1..20)
        .map(|k| Rule::Absolute(k as f32 * 0.05))
        .chain((1..20).map(|k| Rule::Relative(k as f32 * 0.05)));
    let mut best = (0.0, Rule::One);
    for rule in std::iter::once(Rule::One).chain(rules) {
        let predicted: Vec<Vec<String>> = posts
            .iter()
            .map(|p| names(&model, &predict(p, rule), sets))
            .collect();
        let s = score(Metric::MicroF1, &gold, &predicted);
        if s > best.0 {
            best = (s, rule);
        }
    }
    Ok(best.1)
}
