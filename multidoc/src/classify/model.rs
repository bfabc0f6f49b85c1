//! A trained model and how it scores a page. Every scored node's score is linear in the page's
//! feature vector: `s(c) = scale(c)·(B + T·base(c) + Σ x(f)·δ(c, f))`, where `x` is the page's
//! transformed vector, `T = Σ x(f)`, `B = Σ x(f)·background(f)`, and `δ(c, f)` is stored only
//! where node `c`'s subtree saw `f` (the postings); docs/classifier.md derives it for both kinds
//! of naive Bayes.

use rustc_hash::FxHashMap;

use super::catalog::Catalog;
use super::Params;
use crate::tokenize::{self, Features, Tokenizer};

/// A node the model scores: one whose subtree had training documents.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Scored {
    /// The catalog node.
    pub node: u32,
    /// Index in the scored nodes of the nearest scored ancestor (parents come first).
    pub parent: Option<u32>,
    /// The score per unit of the page's feature mass (`T`).
    pub base: f32,
    /// The node's weight normalisation (1 without it).
    pub scale: f32,
    /// The log prior when documents were labelled with this node itself (a class), else `None`.
    pub prior: Option<f32>,
}

/// A feature the model knows.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Feature {
    pub hash: u64,
    pub text: String,
    pub url: bool,
    pub idf: f32,
    /// The feature's part of every node's weight (complement NB: `−ln(N(f) + α)`).
    pub background: f32,
}

/// A feature as scoring reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hot {
    idf: f32,
    background: f32,
    /// Its postings, `postings[start..end]`.
    start: u32,
    end: u32,
    /// Its dense row, `dense[dense..dense + scored]`; `u32::MAX` when it has none.
    dense: u32,
    /// What a dense row's step is worth (its largest δ / 32767).
    step: f32,
}

/// A trained naive Bayes model over a catalog.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub(crate) catalog: Catalog,
    pub(crate) options: tokenize::Options,
    pub(crate) params: Params,
    pub(crate) scored: Vec<Scored>,
    pub(crate) features: Vec<Feature>,
    /// Postings of feature `i`: `postings[offsets[i]..offsets[i + 1]]`, (scored index, δ).
    pub(crate) offsets: Vec<u32>,
    pub(crate) postings: Vec<(u32, f32)>,
    /// What scoring needs of each feature, found by its hash in one look-up (one cache miss
    /// rather than one per array). Made from the rest by [`Model::index`], never stored.
    pub(crate) lookup: FxHashMap<u64, Hot>,
    /// Features with postings in many nodes, as dense rows of every scored node's δ (added with
    /// SIMD instead of scattered). Made from the postings, never stored.
    pub(crate) dense: Vec<i16>,
    /// Training documents, for the record.
    pub(crate) documents: u64,
    /// The file's checksum once written or read: the model's version as pages record it.
    pub(crate) checksum: u32,
}

/// The categories of a page: the path from a root down to the deepest node whose posterior
/// passed the threshold, with each node's posterior (the sum over the classes below it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Categories {
    pub path: Vec<(u32, f32)>,
}

impl Categories {
    /// The path cut to at most `depth` nodes (a binding type's level).
    pub fn truncated(&self, depth: usize) -> &[(u32, f32)] {
        self.path.get(..depth.min(self.path.len())).unwrap_or(&[])
    }

    /// The deepest node kept.
    pub fn leaf(&self) -> Option<(u32, f32)> {
        self.path.last().copied()
    }

    /// The path as `yacobot classify` prints it: names joined by ` > `, each with its posterior
    /// (`Sports (0.97) > Soccer (0.81)`), cut to `depth` nodes.
    pub fn describe(&self, catalog: &Catalog, depth: usize) -> String {
        let parts: Vec<String> = self
            .truncated(depth)
            .iter()
            .map(|&(n, p)| {
                let name = catalog.node(n).map_or("?", |x| x.name.as_str());
                format!("{name} ({p:.2})")
            })
            .collect();
        parts.join(super::PATH_SEPARATOR)
    }
}

impl Model {
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    /// A tokenizer with the options the model was trained with.
    pub fn tokenizer(&self) -> Tokenizer {
        Tokenizer::new(self.options)
    }

    pub fn tokenizer_options(&self) -> tokenize::Options {
        self.options
    }

    /// The model file's CRC-32C (0 before it was written or read): what a page records as the
    /// model that classified it.
    pub fn checksum(&self) -> u32 {
        self.checksum
    }

    pub fn documents(&self) -> u64 {
        self.documents
    }

    pub fn feature_count(&self) -> usize {
        self.features.len()
    }

    /// The classes (catalog nodes that had documents of their own).
    pub fn classes(&self) -> impl Iterator<Item = u32> + '_ {
        self.scored
            .iter()
            .filter(|s| s.prior.is_some())
            .map(|s| s.node)
    }

    /// The page's transformed vector over the model's features.
    fn vector(&self, f: &Features, out: &mut Vec<(Hot, f32)>) {
        out.clear();
        let p = &self.params;
        for (bag, scale) in [(&f.words, 1.0), (&f.url, p.url_weight)] {
            if scale <= 0.0 {
                continue;
            }
            for t in bag.terms() {
                let Some(&hot) = self.lookup.get(&t.feature) else {
                    continue;
                };
                out.push((hot, p.transform(t.weight, hot.idf) * scale));
            }
        }
        if p.normalize {
            let norm = out.iter().map(|&(_, x)| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                out.iter_mut().for_each(|(_, x)| *x /= norm);
            }
        }
    }

    /// Each scored node's score, after smoothing toward its ancestors'.
    fn scores(&self, x: &[(Hot, f32)], s: &mut Vec<f32>) {
        s.clear();
        s.resize(self.scored.len(), 0.0);
        let mut mass = 0.0;
        let mut background = 0.0;
        let width = self.scored.len();
        for &(hot, v) in x {
            mass += v;
            background += v * hot.background;
            let at = hot.dense as usize;
            if let Some(dense) = self.dense.get(at..at + width) {
                let vs = v * hot.step;
                for (si, &d) in s.iter_mut().zip(dense) {
                    *si += vs * f32::from(d);
                }
                continue;
            }
            for &(c, d) in &self.postings[hot.start as usize..hot.end as usize] {
                s[c as usize] += v * d;
            }
        }
        let lambda = self.params.hierarchy;
        for (i, n) in self.scored.iter().enumerate() {
            let own = n.scale * (s[i] + mass * n.base + background);
            s[i] = match n.parent {
                Some(p) if lambda > 0.0 => (1.0 - lambda) * own + lambda * s[p as usize],
                _ => own,
            };
        }
    }

    /// Each class's score (its log-likelihood up to a constant, plus its weighted log prior), as
    /// (catalog node, score) in the model's order of classes: the most probable class has the
    /// highest.
    pub fn class_scores(&self, f: &Features) -> Vec<(u32, f32)> {
        let mut x = Vec::new();
        self.vector(f, &mut x);
        let mut s = Vec::new();
        self.scores(&x, &mut s);
        self.scored
            .iter()
            .zip(&s)
            .filter_map(|(n, &v)| n.prior.map(|p| (n.node, v + self.params.prior * p)))
            .collect()
    }

    /// Each class's posterior, as (catalog node, posterior) in the model's order of classes:
    /// the softmax of the scores times the temperature.
    pub fn posteriors(&self, f: &Features) -> Vec<(u32, f32)> {
        let mut out = self.class_scores(f);
        let t = self.params.temperature;
        let max = out
            .iter()
            .map(|&(_, v)| v)
            .fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0.0;
        for (_, v) in out.iter_mut() {
            *v = (t * (*v - max)).exp();
            sum += *v;
        }
        if sum > 0.0 && sum.is_finite() {
            out.iter_mut().for_each(|(_, v)| *v /= sum);
        }
        out
    }

    /// The page's categories with the model's threshold.
    pub fn classify(&self, f: &Features) -> Categories {
        self.classify_with(f, self.params.threshold)
    }

    /// The path from a root: at each level the child whose subtree has the most posterior, as
    /// long as that reaches `threshold`.
    pub fn classify_with(&self, f: &Features, threshold: f32) -> Categories {
        let post = self.posteriors(f);
        if f.words.is_empty() && f.url.is_empty() {
            return Categories::default();
        }
        // Each node's mass: its own class's posterior plus its children's (children come after
        // their parents, so one pass from the end adds every subtree up).
        let nodes = self.catalog.nodes();
        let mut mass = vec![0.0f32; nodes.len()];
        for &(node, p) in &post {
            if let Some(m) = mass.get_mut(node as usize) {
                *m += p;
            }
        }
        for i in (0..nodes.len()).rev() {
            if let Some(p) = nodes[i].parent {
                mass[p as usize] += mass[i];
            }
        }
        let mut path = Vec::new();
        let mut at: Option<u32> = None;
        loop {
            let best = self
                .catalog
                .nodes()
                .iter()
                .enumerate()
                .filter(|(_, x)| x.parent == at)
                .map(|(i, _)| (i as u32, mass[i]))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((i, m)) if m >= threshold && m > 0.0 => {
                    path.push((i, m));
                    at = Some(i);
                }
                _ => break,
            }
        }
        Categories { path }
    }
}

impl Model {
    /// Makes the look-up table, and the dense rows of the features with postings in more than
    /// an eighth of the scored nodes (measured: bench/README.md).
    pub(crate) fn index(&mut self) {
        let width = self.scored.len();
        self.dense.clear();
        self.lookup.clear();
        self.lookup.reserve(self.features.len());
        for (i, f) in self.features.iter().enumerate() {
            let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
            let mut dense = u32::MAX;
            let mut step = 0.0;
            if (b - a) * 8 > width {
                // Stored in 16 bits: half the memory to read, δ within 1/65534 of the largest.
                let postings = &self.postings[a..b];
                let max = postings.iter().map(|p| p.1.abs()).fold(0.0f32, f32::max);
                step = if max > 0.0 { max / 32767.0 } else { 1.0 };
                dense = self.dense.len() as u32;
                let at = self.dense.len();
                self.dense.resize(at + width, 0);
                for &(c, d) in postings {
                    self.dense[at + c as usize] = (d / step).round() as i16;
                }
            }
            let hot = Hot {
                idf: f.idf,
                background: f.background,
                start: a as u32,
                end: b as u32,
                dense,
                step,
            };
            self.lookup.insert(f.hash, hot);
        }
    }

    /// The page's features that speak most for catalog node `node` (the "why this category"
    /// tool): each feature's part of the node's score that the node's own documents gave it,
    /// `scale · x(f) · δ(node, f)`, the `n` largest, largest first.
    pub fn evidence(&self, f: &Features, node: u32, n: usize) -> Vec<(String, f32)> {
        let Some(at) = self.scored.iter().position(|s| s.node == node) else {
            return Vec::new();
        };
        let scale = self.scored[at].scale;
        let mut x = Vec::new();
        self.vector(f, &mut x);
        // vector() keeps the bags' features the model knows, in order: the same walk names them.
        let names = [(&f.words, 1.0), (&f.url, self.params.url_weight)]
            .into_iter()
            .filter(|&(_, scale)| scale > 0.0)
            .flat_map(|(bag, _)| bag.terms().iter().map(move |t| (bag, t)))
            .filter(|(_, t)| self.lookup.contains_key(&t.feature))
            .map(|(bag, t)| bag.text(t));
        let mut out: Vec<(String, f32)> = names
            .zip(&x)
            .map(|(name, &(hot, v))| (name.to_owned(), scale * v * self.delta(hot, at)))
            .filter(|&(_, e)| e != 0.0)
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out.truncate(n);
        out
    }

    /// δ(scored node `at`, feature).
    fn delta(&self, hot: Hot, at: usize) -> f32 {
        if let Some(&d) = self.dense.get(hot.dense as usize + at) {
            if hot.dense != u32::MAX {
                return hot.step * f32::from(d);
            }
        }
        let postings = &self.postings[hot.start as usize..hot.end as usize];
        postings
            .binary_search_by_key(&(at as u32), |&(c, _)| c)
            .map_or(0.0, |i| postings[i].1)
    }

    /// How many (node, feature) weights the model stores.
    pub fn posting_count(&self) -> usize {
        self.postings.len()
    }
}
