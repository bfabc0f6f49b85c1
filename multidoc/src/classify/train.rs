//! Training: counts of the documents' transformed vectors per catalog node (a node counts its
//! whole subtree's documents), turned into the model's linear scores; and the held-back
//! evaluation that reports accuracy and fits the posteriors' temperature.

use rustc_hash::{FxHashMap, FxHashSet};

use super::catalog::Catalog;
use super::corpus::{Corpus, Doc};
use super::model::{Feature, Model, Scored};
use super::{ClassifyError, Kind, Params};
use crate::tokenize::{self, Features};

/// Trains on the documents of `corpus` for which `used` says yes.
pub fn train(
    catalog: &Catalog,
    corpus: &Corpus,
    used: impl Fn(usize) -> bool,
    params: &Params,
    options: tokenize::Options,
) -> Result<Model, ClassifyError> {
    let docs: Vec<&Doc> = corpus
        .docs
        .iter()
        .enumerate()
        .filter(|&(i, d)| used(i) && !d.labels.is_empty())
        .map(|(_, d)| d)
        .collect();
    if docs.is_empty() {
        return Err(ClassifyError::Train("no labelled document".into()));
    }
    if let Some(bad) = docs
        .iter()
        .flat_map(|d| &d.labels)
        .find(|&&l| l as usize >= catalog.len())
    {
        return Err(ClassifyError::Train(format!(
            "label {bad} is not a catalog node"
        )));
    }
    let (mut features, rows) = vocabulary(corpus, &docs, params);
    let (scored, index) = scored_nodes(catalog, &docs);
    let counts = count(
        catalog,
        &docs,
        params,
        &features,
        &rows,
        &index,
        scored.len(),
    );
    let (scored, entries, background) = weigh(params, &counts, &scored, docs.len());
    let (offsets, postings) = postings(entries, features.len());
    for (f, b) in features.iter_mut().zip(&background) {
        f.background = *b as f32;
    }
    let mut model = Model {
        catalog: catalog.clone(),
        options,
        params: *params,
        scored,
        features,
        offsets,
        postings,
        lookup: FxHashMap::default(),
        dense: Vec::new(),
        documents: docs.len() as u64,
        checksum: 0,
    };
    model.index();
    Ok(model)
}

/// The training documents' vectors summed.
struct Counts {
    /// Per scored node, over its subtree's documents: feature row → count.
    node: Vec<FxHashMap<u32, f64>>,
    /// Per feature row, over every document.
    all: Vec<f64>,
    /// Per scored node, the documents labelled with it (a document with k labels counts 1/k).
    class_docs: Vec<f64>,
}

fn count(
    catalog: &Catalog,
    docs: &[&Doc],
    params: &Params,
    features: &[Feature],
    rows: &FxHashMap<u64, u32>,
    index: &NodeIndex,
    scored: usize,
) -> Counts {
    let mut c = Counts {
        node: vec![FxHashMap::default(); scored],
        all: vec![0.0; features.len()],
        class_docs: vec![0.0; scored],
    };
    let mut x = Vec::new();
    let mut nodes = FxHashSet::default();
    for d in docs {
        vector(params, features, rows, d, &mut x);
        nodes.clear();
        for &l in &d.labels {
            if let Some(&s) = index.get(&l) {
                c.class_docs[s as usize] += 1.0 / d.labels.len() as f64;
            }
            let path = catalog.path(l);
            nodes.extend(path.into_iter().filter_map(|n| index.get(&n).copied()));
        }
        for &(row, v) in &x {
            c.all[row as usize] += f64::from(v);
            for &s in &nodes {
                *c.node[s as usize].entry(row).or_insert(0.0) += f64::from(v);
            }
        }
    }
    c
}

/// Each scored node's weights (docs/classifier.md): the nodes, the (row, node, δ) entries and
/// each feature's background.
#[allow(clippy::type_complexity)]
fn weigh(
    params: &Params,
    counts: &Counts,
    scored: &[(u32, Option<u32>)],
    docs: usize,
) -> (Vec<Scored>, Vec<(u32, u32, f32)>, Vec<f64>) {
    let alpha = f64::from(params.alpha.max(1e-6));
    let all = &counts.all;
    let vocab = all.len() as f64;
    let total: f64 = all.iter().sum();
    let background: Vec<f64> = all
        .iter()
        .map(|&n| match params.kind {
            Kind::Multinomial => 0.0,
            Kind::Complement | Kind::OneVsAll => -(n + alpha).ln(),
        })
        .collect();
    let background_sum: f64 = background.iter().sum();
    let mut entries: Vec<(u32, u32, f32)> = Vec::new();
    let mut out = Vec::with_capacity(scored.len());
    for (s, &(node, parent)) in scored.iter().enumerate() {
        let c = &counts.node[s];
        let own: f64 = c.values().sum();
        let base_m = alpha.ln() - (own + alpha * vocab).ln();
        let base_c = (total - own + alpha * vocab).ln();
        let base = match params.kind {
            Kind::Multinomial => base_m,
            Kind::Complement => base_c,
            Kind::OneVsAll => base_m + base_c,
        };
        let mut deltas = 0.0;
        for (&row, &n) in c {
            let delta_m = (n / alpha).ln_1p();
            let delta_c = -(1.0 - n / (all[row as usize] + alpha)).ln();
            let delta = match params.kind {
                Kind::Multinomial => delta_m,
                Kind::Complement => delta_c,
                Kind::OneVsAll => delta_m + delta_c,
            };
            deltas += delta;
            entries.push((row, s as u32, delta as f32));
        }
        // Σ over the vocabulary of the node's weights' magnitudes: −Σ ln θ for multinomial,
        // −Σ ln θ̃ (every weight positive) for complement.
        let magnitude = match params.kind {
            Kind::Multinomial => -(vocab * base + deltas),
            Kind::Complement => background_sum + vocab * base + deltas,
            // Weights of both signs: no normalisation.
            Kind::OneVsAll => 0.0,
        };
        let scale = if params.weight_normalize && magnitude > 0.0 {
            1.0 / magnitude
        } else {
            1.0
        };
        let class = counts.class_docs[s];
        let prior = (class > 0.0).then(|| (class / docs as f64).ln() as f32);
        out.push(Scored {
            node,
            parent,
            base: base as f32,
            scale: scale as f32,
            prior,
        });
    }
    (out, entries, background)
}

/// (row, node, δ) entries as each row's postings: offsets and (node, δ) pairs.
fn postings(mut entries: Vec<(u32, u32, f32)>, rows: usize) -> (Vec<u32>, Vec<(u32, f32)>) {
    entries.sort_unstable_by_key(|&(row, s, _)| (row, s));
    let mut offsets = Vec::with_capacity(rows + 1);
    let mut postings = Vec::with_capacity(entries.len());
    let mut e = entries.iter().peekable();
    for row in 0..rows as u32 {
        offsets.push(postings.len() as u32);
        while let Some(&&(r, s, d)) = e.peek() {
            if r != row {
                break;
            }
            postings.push((s, d));
            e.next();
        }
    }
    offsets.push(postings.len() as u32);
    (offsets, postings)
}

/// The features seen in at least `min_df` documents, in order of their hash, with their idf.
fn vocabulary(
    corpus: &Corpus,
    docs: &[&Doc],
    params: &Params,
) -> (Vec<Feature>, FxHashMap<u64, u32>) {
    let mut df: FxHashMap<(u64, bool), u32> = FxHashMap::default();
    for d in docs {
        for &(f, _, url) in &d.terms {
            *df.entry((f, url)).or_insert(0) += 1;
        }
    }
    let n = docs.len() as f64;
    let mut kept: Vec<((u64, bool), u32)> = df
        .into_iter()
        .filter(|&(_, c)| c >= params.min_df.max(1))
        .collect();
    kept.sort_unstable();
    kept.dedup_by_key(|((f, _), _)| *f);
    let features: Vec<Feature> = kept
        .iter()
        .map(|&((hash, url), c)| Feature {
            hash,
            text: corpus
                .texts
                .get(&hash)
                .map_or_else(String::new, |t| t.to_string()),
            url,
            idf: (((1.0 + n) / (1.0 + f64::from(c))).ln() + 1.0) as f32,
            background: 0.0,
        })
        .collect();
    let rows = features
        .iter()
        .enumerate()
        .map(|(i, f)| (f.hash, i as u32))
        .collect();
    (features, rows)
}

/// A catalog node's index among the scored nodes.
type NodeIndex = FxHashMap<u32, u32>;

/// The nodes with documents in their subtree, parents first, each with its parent's index;
/// and the index of each.
fn scored_nodes(catalog: &Catalog, docs: &[&Doc]) -> (Vec<(u32, Option<u32>)>, NodeIndex) {
    let mut marked = vec![false; catalog.len()];
    for d in docs {
        for &l in &d.labels {
            for n in catalog.path(l) {
                marked[n as usize] = true;
            }
        }
    }
    let mut scored = Vec::new();
    let mut index = FxHashMap::default();
    for (i, node) in catalog.nodes().iter().enumerate() {
        if marked[i] {
            let parent = node.parent.and_then(|p| index.get(&p).copied());
            index.insert(i as u32, scored.len() as u32);
            scored.push((i as u32, parent));
        }
    }
    (scored, index)
}

/// A training document's vector, as [`Model::vector`] makes a page's.
fn vector(
    params: &Params,
    features: &[Feature],
    rows: &FxHashMap<u64, u32>,
    d: &Doc,
    out: &mut Vec<(u32, f32)>,
) {
    out.clear();
    for &(f, w, url) in &d.terms {
        let scale = if url { params.url_weight } else { 1.0 };
        if scale <= 0.0 {
            continue;
        }
        if let Some(&row) = rows.get(&f) {
            out.push((row, params.transform(w, features[row as usize].idf) * scale));
        }
    }
    if params.normalize {
        let norm = out.iter().map(|&(_, x)| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            out.iter_mut().for_each(|(_, x)| *x /= norm);
        }
    }
}

/// The smoothings [`train_and_evaluate`] chooses from by default.
pub const ALPHAS: [f32; 4] = [0.03, 0.1, 0.3, 1.0];

/// What [`train_and_evaluate`] measured on the held-back documents.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub trained_on: usize,
    pub held_back: usize,
    /// Share of held-back documents whose most probable class is one of their labels, with the
    /// chosen smoothing.
    pub accuracy: f64,
    /// The same with the classes cut to depth 1 (the top level).
    pub accuracy_top: f64,
    /// Each smoothing tried and its accuracy.
    pub tried: Vec<(f32, f64)>,
    /// The smoothing chosen.
    pub alpha: f32,
    /// The fitted temperature.
    pub temperature: f32,
}

/// One model's results on the held-back documents.
struct Held {
    right: usize,
    right_top: usize,
    n: usize,
    /// Each document's class scores and which classes are its labels.
    raw: Vec<(Vec<f32>, Vec<bool>)>,
}

fn held_back(
    model: &Model,
    catalog: &Catalog,
    corpus: &Corpus,
    held: impl Fn(usize) -> bool,
) -> Held {
    let mut f = Features::default();
    let mut h = Held {
        right: 0,
        right_top: 0,
        n: 0,
        raw: Vec::new(),
    };
    let top = |c: u32| catalog.path(c).first().copied();
    for i in (0..corpus.len()).filter(|&i| held(i)) {
        let labels = corpus.labels(i);
        if labels.is_empty() {
            continue;
        }
        corpus.features(i, &mut f);
        let scores = model.class_scores(&f);
        let best = scores
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|&(c, _)| c);
        h.n += 1;
        if best.is_some_and(|b| labels.contains(&b)) {
            h.right += 1;
        }
        if best.is_some_and(|b| labels.iter().any(|&l| top(l) == top(b))) {
            h.right_top += 1;
        }
        let is_label = scores.iter().map(|(c, _)| labels.contains(c)).collect();
        h.raw
            .push((scores.into_iter().map(|(_, s)| s).collect(), is_label));
    }
    h
}

/// Holds back every `every`-th document (the last of each run of `every`), trains on the rest
/// with each smoothing of `alphas` (none: `params.alpha` alone), keeps the one most accurate on
/// the held-back documents and fits the temperature there (the posterior of their labels made
/// as likely as can be); then trains on everything with both.
pub fn train_and_evaluate(
    catalog: &Catalog,
    corpus: &Corpus,
    params: &Params,
    options: tokenize::Options,
    every: usize,
    alphas: &[f32],
) -> Result<(Model, Report), ClassifyError> {
    let every = every.max(2);
    let held = |i: usize| i % every == every - 1;
    let own = [params.alpha];
    let alphas = if alphas.is_empty() { &own[..] } else { alphas };
    let mut best: Option<(f32, Held)> = None;
    let mut tried = Vec::new();
    for &alpha in alphas {
        let p = Params { alpha, ..*params };
        let model = train(catalog, corpus, |i| !held(i), &p, options)?;
        let h = held_back(&model, catalog, corpus, held);
        tried.push((alpha, h.right as f64 / h.n.max(1) as f64));
        if best
            .as_ref()
            .is_none_or(|(_, b)| (h.right, h.right_top) > (b.right, b.right_top))
        {
            best = Some((alpha, h));
        }
    }
    let Some((alpha, h)) = best else {
        return Err(ClassifyError::Train("no smoothing to try".into()));
    };
    let temperature = fit_temperature(&h.raw);
    let p = Params {
        alpha,
        temperature,
        ..*params
    };
    let model = train(catalog, corpus, |_| true, &p, options)?;
    let ratio = |k: usize| if h.n == 0 { 0.0 } else { k as f64 / h.n as f64 };
    let report = Report {
        trained_on: corpus.len() - h.n,
        held_back: h.n,
        accuracy: ratio(h.right),
        accuracy_top: ratio(h.right_top),
        tried,
        alpha,
        temperature,
    };
    Ok((model, report))
}

/// The temperature that makes the labels most likely: golden-section search on its logarithm.
fn fit_temperature(raw: &[(Vec<f32>, Vec<bool>)]) -> f32 {
    let loss = |log_t: f64| -> f64 {
        let t = log_t.exp();
        let mut l = 0.0;
        for (s, is_label) in raw {
            let max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
            let z: f64 = s.iter().map(|&v| (t * (f64::from(v) - max)).exp()).sum();
            let p: f64 = s
                .iter()
                .zip(is_label)
                .filter(|(_, &y)| y)
                .map(|(&v, _)| (t * (f64::from(v) - max)).exp())
                .sum();
            l -= (p / z).max(1e-300).ln();
        }
        l
    };
    if raw.is_empty() {
        return 1.0;
    }
    let (mut a, mut b) = ((1e-3f64).ln(), (1e4f64).ln());
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..60 {
        let c = b - g * (b - a);
        let d = a + g * (b - a);
        if loss(c) < loss(d) {
            b = d;
        } else {
            a = c;
        }
    }
    ((a + b) / 2.0).exp() as f32
}
