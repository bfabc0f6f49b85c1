//! Training the segmenter's two logistic models on pages with reference text. A block's label
//! is the share of its token trigrams (bigrams, words for shorter blocks) found in the
//! reference; each block counts by its share of the page's tokens, so every page weighs the
//! same and, within a page, long blocks more (the metrics count tokens).

use std::collections::HashSet;

use focuser_multidoc::decode::{decode, DEFAULT_MAX_BYTES};
use focuser_multidoc::segment::model::{CONTEXT, FEATURES};
use focuser_multidoc::segment::score::context;
use focuser_multidoc::segment::{segment_with_features, Features, Model};

use crate::data::Page;
use crate::metrics::tokens;

/// One page's blocks: features, label, sample weight.
pub struct Sample {
    pub features: Vec<Features>,
    pub labels: Vec<f32>,
    pub weights: Vec<f32>,
}

fn grams(t: &[String], n: usize) -> Vec<String> {
    if t.len() < n {
        return vec![t.join(" ")];
    }
    t.windows(n).map(|w| w.join(" ")).collect()
}

pub fn samples(pages: &[&Page]) -> Vec<Sample> {
    pages
        .iter()
        .filter_map(|p| {
            let d = decode(&p.html, None, DEFAULT_MAX_BYTES).ok()?;
            let (seg, features) = segment_with_features(&d.text, &Model::DEFAULT);
            let gold: Vec<String> = tokens(&p.gold).map(str::to_lowercase).collect();
            let sets: Vec<HashSet<String>> = (1..=3).map(|n| grams(&gold, n).into_iter().collect()).collect();
            let mut labels = Vec::new();
            let mut weights = Vec::new();
            let mut total = 0.0f32;
            for b in &seg.blocks {
                let t: Vec<String> = tokens(&b.text).map(str::to_lowercase).collect();
                let n = t.len().clamp(1, 3);
                let g = grams(&t, n);
                let hit = g.iter().filter(|x| sets[n - 1].contains(*x)).count();
                labels.push(hit as f32 / g.len().max(1) as f32);
                weights.push(t.len().max(1) as f32);
                total += t.len().max(1) as f32;
            }
            weights.iter_mut().for_each(|w| *w /= total.max(1.0));
            Some(Sample {
                features,
                labels,
                weights,
            })
        })
        .collect()
}

/// Logistic regression with soft labels and an L2 penalty (not on the bias), by Adam.
fn fit(x: &[Vec<f32>], y: &[f32], w: &[f32], l2: f32, steps: usize) -> Vec<f32> {
    let d = x.first().map_or(0, Vec::len);
    let mut beta = vec![0.0f32; d];
    let (mut m, mut v) = (vec![0.0f32; d], vec![0.0f32; d]);
    let wsum: f32 = w.iter().sum::<f32>().max(1e-9);
    let (lr, b1, b2) = (0.05f32, 0.9f32, 0.999f32);
    for step in 1..=steps {
        let mut grad = vec![0.0f32; d];
        for ((xi, &yi), &wi) in x.iter().zip(y).zip(w) {
            let z: f32 = beta.iter().zip(xi).map(|(b, x)| b * x).sum();
            let p = 1.0 / (1.0 + (-z).exp());
            let e = (p - yi) * wi / wsum;
            grad.iter_mut().zip(xi).for_each(|(g, x)| *g += e * x);
        }
        for j in 1..d {
            grad[j] += l2 * beta[j];
        }
        for j in 0..d {
            m[j] = b1 * m[j] + (1.0 - b1) * grad[j];
            v[j] = b2 * v[j] + (1.0 - b2) * grad[j] * grad[j];
            let mh = m[j] / (1.0 - b1.powi(step as i32));
            let vh = v[j] / (1.0 - b2.powi(step as i32));
            beta[j] -= lr * mh / (vh.sqrt() + 1e-8);
        }
    }
    beta
}

/// Both models, trained on `samples`.
pub fn train(samples: &[Sample]) -> Model {
    let (mut x, mut y, mut w) = (Vec::new(), Vec::new(), Vec::new());
    for s in samples {
        for i in 0..s.features.len() {
            x.push(s.features[i].to_vec());
            y.push(s.labels[i]);
            w.push(s.weights[i]);
        }
    }
    let first = fit(&x, &y, &w, 1e-4, 400);
    let mut model = Model {
        first: to_array(&first),
        second: [0.0; FEATURES],
        context: [0.0; CONTEXT],
    };
    let mut x2 = Vec::with_capacity(x.len());
    for s in samples {
        let p: Vec<f32> = s.features.iter().map(|f| model.first(f)).collect();
        for i in 0..s.features.len() {
            let mut row = s.features[i].to_vec();
            row.extend_from_slice(&context(&p, i));
            x2.push(row);
        }
    }
    let second = fit(&x2, &y, &w, 1e-4, 400);
    model.second = to_array(&second[..FEATURES]);
    let mut c = [0.0; CONTEXT];
    c.copy_from_slice(&second[FEATURES..]);
    model.context = c;
    model
}

fn to_array(v: &[f32]) -> [f32; FEATURES] {
    let mut a = [0.0; FEATURES];
    a.copy_from_slice(&v[..FEATURES]);
    a
}

/// The model as the Rust source of `multidoc/src/segment/model_default.rs`.
pub fn source(model: &Model, note: &str) -> String {
    let list = |v: &[f32]| {
        v.chunks(8)
            .map(|c| {
                let items: Vec<String> = c.iter().map(|x| format!("{x:.4}")).collect();
                format!("            {},\n", items.join(", "))
            })
            .collect::<String>()
    };
    format!(
        "// Written by `bench-multidoc --train` ({note}); do not edit.\n\
         impl Model {{\n    pub const DEFAULT: Model = Model {{\n        first: [\n{}        ],\n        \
         second: [\n{}        ],\n        context: [\n{}        ],\n    }};\n}}\n",
        list(&model.first),
        list(&model.second),
        list(&model.context)
    )
}
