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

/// The catalog nodes of an item's labels (made as they come).
fn labels(catalog: &mut Catalog, item: &Item) -> Vec<u32> {
    item.labels
        .iter()
        .filter_map(|path| catalog.add_path(path.iter().map(String::as_str)))
        .collect()
}

fn corpus(items: &[Item], catalog: &mut Catalog, t: &mut Tokenizer) -> Corpus {
    let mut corpus = Corpus::new();
    let mut f = Features::default();
    for item in items {
        t.page(None, [(item.text.as_str(), 1.0)], &mut f);
        let l = labels(catalog, item);
        corpus.add(&l, &f);
    }
    corpus
}

/// Trains on `set.train` and scores `set.test`.
pub fn run(set: &Set, params: &Params, options: tokenize::Options) -> anyhow::Result<Outcome> {
    let t0 = Instant::now();
    let mut t = Tokenizer::new(options);
    let mut catalog = Catalog::new();
    let train = corpus(&set.train, &mut catalog, &mut t);
    let (model, _report) = train_and_evaluate(&catalog, &train, params, options, 10)?;
    let train_s = t0.elapsed().as_secs_f64();
    let threshold = if set.metric == Metric::MicroF1 {
        multi_label_threshold(set, params, options)?
    } else {
        0.0
    };
    let t1 = Instant::now();
    let mut f = Features::default();
    let mut gold = Vec::new();
    let mut predicted = Vec::new();
    for item in &set.test {
        t.page(None, [(item.text.as_str(), 1.0)], &mut f);
        gold.push(item_labels(&model, item));
        predicted.push(predict(&model, &f, set.metric, threshold));
    }
    let test_s = t1.elapsed().as_secs_f64();
    Ok(Outcome {
        score: score(set.metric, &gold, &predicted),
        train_s,
        test_s,
        features: model.feature_count(),
    })
}

/// An item's labels as the model's catalog nodes (a label the training never saw is none).
fn item_labels(model: &Model, item: &Item) -> Vec<u32> {
    let sep = focuser_multidoc::classify::PATH_SEPARATOR;
    item.labels
        .iter()
        .filter_map(|p| model.catalog().by_id(&p.join(sep)))
        .collect()
}

/// Single-label: the most probable class. Multi-label: every class whose posterior reaches
/// `threshold`, and the most probable one in any case.
fn predict(model: &Model, f: &Features, metric: Metric, threshold: f32) -> Vec<u32> {
    let post = model.posteriors(f);
    let best = post
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|&(c, _)| c);
    let mut out: Vec<u32> = best.into_iter().collect();
    if metric == Metric::MicroF1 {
        out.extend(
            post.iter()
                .filter(|&&(c, p)| p >= threshold && Some(c) != best)
                .map(|&(c, _)| c),
        );
    }
    out
}

fn score(metric: Metric, gold: &[Vec<u32>], predicted: &[Vec<u32>]) -> f64 {
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

/// The posterior above which a second label is given, chosen on the train part cut again
/// (never on the test part): the best micro-F1 over a grid.
fn multi_label_threshold(
    set: &Set,
    params: &Params,
    options: tokenize::Options,
) -> anyhow::Result<f32> {
    let inner = set.inner();
    let mut t = Tokenizer::new(options);
    let mut catalog = Catalog::new();
    let train = corpus(&inner.train, &mut catalog, &mut t);
    let (model, _) = train_and_evaluate(&catalog, &train, params, options, 10)?;
    let mut f = Features::default();
    let mut gold = Vec::new();
    let mut posts = Vec::new();
    for item in &inner.test {
        t.page(None, [(item.text.as_str(), 1.0)], &mut f);
        gold.push(item_labels(&model, item));
        posts.push(f.clone());
    }
    let mut best = (0.0, 1.0f32);
    for k in 1..20 {
        let th = k as f32 * 0.05;
        let predicted: Vec<Vec<u32>> = posts
            .iter()
            .map(|f| predict(&model, f, Metric::MicroF1, th))
            .collect();
        let s = score(Metric::MicroF1, &gold, &predicted);
        if s > best.0 {
            best = (s, th);
        }
    }
    Ok(best.1)
}
