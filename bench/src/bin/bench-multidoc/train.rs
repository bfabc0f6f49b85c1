//! Training the segmenter's two logistic models on pages with reference text. A block's label
//! is the share of its token trigrams (bigrams, words for shorter blocks) found in the
//! reference; each block counts by its share of the page's tokens, so every page weighs the
//! same and, within a page, long blocks more (the metrics count tokens).

use std::collections::HashSet;

use focuser_multidoc::decode::{decode, DEFAULT_MAX_BYTES};
use focuser_multidoc::segment::model::{Net, ENSEMBLE, FEATURES, HIDDEN, SECOND_INPUTS};
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
            let sets: Vec<HashSet<String>> = (1..=3)
                .map(|n| grams(&gold, n).into_iter().collect())
                .collect();
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

/// A deterministic generator for the initial weights and the batches' order.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn uniform(&mut self) -> f32 {
        (self.next() % 1_000_000) as f32 / 1_000_000.0 - 0.5
    }
}

/// Trains a net on rows `x` (first column the constant 1) with soft labels `y` and weights
/// `w`: standardised inputs, cross-entropy, L2, mini-batch Adam. The standardisation is folded
/// into the first layer's weights at the end.
fn fit<const D: usize>(x: &[[f32; D]], y: &[f32], w: &[f32], epochs: usize, seed: u64) -> Net<D> {
    let n = x.len().max(1);
    let mut mean = [0.0f32; D];
    let mut sd = [1.0f32; D];
    for j in 1..D {
        let m = x.iter().map(|r| r[j]).sum::<f32>() / n as f32;
        let v = x.iter().map(|r| (r[j] - m).powi(2)).sum::<f32>() / n as f32;
        mean[j] = m;
        sd[j] = v.sqrt().max(1e-3);
    }
    let z: Vec<[f32; D]> = x
        .iter()
        .map(|r| {
            let mut o = *r;
            for j in 1..D {
                o[j] = (r[j] - mean[j]) / sd[j];
            }
            o
        })
        .collect();
    let wmean = w.iter().sum::<f32>() / n as f32;
    let mut rng = Lcg(42 + seed * 7919);
    // Parameters in one vector: hidden (HIDDEN × D), then out (HIDDEN + 1).
    let np = HIDDEN * D + HIDDEN + 1;
    let mut p: Vec<f32> = (0..np)
        .map(|_| rng.uniform() * 2.0 / (D as f32).sqrt())
        .collect();
    let (mut m, mut v) = (vec![0.0f32; np], vec![0.0f32; np]);
    let (lr, b1, b2) = (0.01f32, 0.9f32, 0.999f32);
    let l2 = L2;
    let mut order: Vec<usize> = (0..x.len()).collect();
    let batch = 2048;
    let mut step = 0;
    let mut a = [0.0f32; HIDDEN];
    for _ in 0..epochs {
        for i in (1..order.len()).rev() {
            order.swap(i, rng.next() as usize % (i + 1));
        }
        for chunk in order.chunks(batch) {
            let mut g = vec![0.0f32; np];
            for &i in chunk {
                let r = &z[i];
                let mut out = p[np - 1];
                for h in 0..HIDDEN {
                    let s: f32 = p[h * D..(h + 1) * D]
                        .iter()
                        .zip(r)
                        .map(|(a, b)| a * b)
                        .sum();
                    a[h] = s.tanh();
                    out += p[HIDDEN * D + h] * a[h];
                }
                let prob = 1.0 / (1.0 + (-out).exp());
                let e = (prob - y[i]) * w[i] / wmean / chunk.len() as f32;
                g[np - 1] += e;
                for h in 0..HIDDEN {
                    g[HIDDEN * D + h] += e * a[h];
                    let back = e * p[HIDDEN * D + h] * (1.0 - a[h] * a[h]);
                    g[h * D..(h + 1) * D]
                        .iter_mut()
                        .zip(r)
                        .for_each(|(g, x)| *g += back * x);
                }
            }
            step += 1;
            for j in 0..np {
                let gj = g[j] + l2 * p[j];
                m[j] = b1 * m[j] + (1.0 - b1) * gj;
                v[j] = b2 * v[j] + (1.0 - b2) * gj * gj;
                let mh = m[j] / (1.0 - b1.powi(step));
                let vh = v[j] / (1.0 - b2.powi(step));
                p[j] -= lr * mh / (vh.sqrt() + 1e-8);
            }
        }
    }
    let mut net = Net::<D>::ZERO;
    for h in 0..HIDDEN {
        let mut bias = p[h * D];
        for j in 1..D {
            net.hidden[h][j] = p[h * D + j] / sd[j];
            bias -= p[h * D + j] * mean[j] / sd[j];
        }
        net.hidden[h][0] = bias;
        net.out[h] = p[HIDDEN * D + h];
    }
    net.out[HIDDEN] = p[np - 1];
    net
}

/// Both stages' nets, trained on `samples`.
pub fn train(samples: &[Sample]) -> Model {
    let (mut x, mut y, mut w) = (Vec::new(), Vec::new(), Vec::new());
    for s in samples {
        for i in 0..s.features.len() {
            x.push(s.features[i]);
            y.push(s.labels[i]);
            w.push(s.weights[i]);
        }
    }
    let first: [Net<FEATURES>; ENSEMBLE] =
        std::array::from_fn(|k| fit(&x, &y, &w, EPOCHS, k as u64));
    let mut model = Model {
        first,
        second: std::array::from_fn(|_| Net::ZERO),
    };
    let mut x2 = Vec::with_capacity(x.len());
    for s in samples {
        let p: Vec<f32> = s.features.iter().map(|f| model.first(f)).collect();
        for i in 0..s.features.len() {
            let mut row = [0.0; SECOND_INPUTS];
            row[..FEATURES].copy_from_slice(&s.features[i]);
            row[FEATURES..].copy_from_slice(&context(&p, i));
            x2.push(row);
        }
    }
    model.second = std::array::from_fn(|k| fit(&x2, &y, &w, EPOCHS, 100 + k as u64));
    model
}

/// Passes over the training blocks, and the L2 penalty: fewer passes and a stronger penalty
/// than a fit of the training pages wants (their held-out halves scored best so, see
/// docs/multidoc.md).
const EPOCHS: usize = 10;
const L2: f32 = 3e-3;

/// The model as the Rust source of `multidoc/src/segment/model_default.rs`.
pub fn source(model: &Model, note: &str) -> String {
    let list = |v: &[f32], indent: &str| {
        v.chunks(8)
            .map(|c| {
                let items: Vec<String> = c.iter().map(|x| format!("{x:.5}")).collect();
                format!("{indent}{},\n", items.join(", "))
            })
            .collect::<String>()
    };
    fn net<const D: usize>(n: &Net<D>, list: &dyn Fn(&[f32], &str) -> String) -> String {
        let rows: String = n
            .hidden
            .iter()
            .map(|r| {
                format!(
                    "                    [\n{}                    ],\n",
                    list(r, "                        ")
                )
            })
            .collect();
        format!(
            "            Net {{\n                hidden: [\n{rows}                ],\n                out: [\n{}                ],\n            }},\n",
            list(&n.out, "                    ")
        )
    }
    let first: String = model.first.iter().map(|n| net(n, &list)).collect();
    let second: String = model.second.iter().map(|n| net(n, &list)).collect();
    format!(
        "// Written by `bench-multidoc --train` ({note}); do not edit.\n\
         // The coefficients are numbers, whatever constant one of them is close to.\n\
         #[allow(clippy::approx_constant)]\n\
         impl Model {{\n    pub const DEFAULT: Model = Model {{\n        first: [\n{first}        ],\n        second: [\n{second}        ],\n    }};\n}}\n"
    )
}
