//! Naive Bayes over a hierarchical catalog of any depth ("по URL-адресу и на основании
//! контента"): a page's weighted words and URL words → the path from a root to the deepest
//! category whose posterior passes a threshold, each binding type cutting it to its own depth.
//!
//! - [`Catalog`]: the categories (id, parent, name), from a TSV or from a corpus's labels;
//! - [`Corpus`] and [`train`]: a model from labelled documents; [`train_and_evaluate`] holds a
//!   part back, reports the accuracy on it and fits the posteriors' temperature;
//! - [`Model`]: [`Model::classify`] (the path), [`Model::posteriors`] (every class);
//! - the model file: [`Model::write`] and [`Model::read`], versioned and checksummed.
//!
//! docs/classifier.md gives the formulas, the hierarchy's smoothing, the thresholds and the
//! file's layout byte by byte.

mod catalog;
mod corpus;
mod file;
mod model;
mod train;

pub use catalog::{Catalog, Node, PATH_SEPARATOR};
pub use corpus::{parse_line, Corpus, LabelledLine};
pub use file::{FORMAT_VERSION, MAGIC};
pub use model::{Categories, Model};
pub use train::{train, train_and_evaluate, Report, ALPHAS};

/// Which naive Bayes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Multinomial: a class's own word distribution.
    Multinomial,
    /// Complement (Rennie et al. 2003): every other class's distribution, against.
    Complement,
    /// Both: the log-likelihood ratio of the class against all the others.
    OneVsAll,
}

/// How a model is trained and how it scores; recorded in the model file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub kind: Kind,
    /// Additive smoothing: pseudo-count of every feature in every node.
    pub alpha: f32,
    /// A feature's weight `w` counts `ln(1 + w)` (Rennie's TF transform).
    pub log_tf: bool,
    /// … times its inverse document frequency `ln((1 + N) / (1 + df)) + 1`.
    pub idf: bool,
    /// A page's vector is scaled to length 1.
    pub normalize: bool,
    /// URL features count this much more than words (0: URL words unused).
    pub url_weight: f32,
    /// Each node's weights divided by the sum of their magnitudes (Rennie's weight
    /// normalisation), so that nodes with more training text do not weigh more.
    pub weight_normalize: bool,
    /// A node's score is `(1 − λ)·own + λ·parent's` (smoothing toward the ancestors).
    pub hierarchy: f32,
    /// Weight of the class prior's log in a class's score (0: uniform prior).
    pub prior: f32,
    /// Features seen in fewer training documents are left out of the model.
    pub min_df: u32,
    /// Scores are multiplied by this before the softmax (fitted on held-back documents).
    pub temperature: f32,
    /// The path goes down while the subtree's posterior reaches this.
    pub threshold: f32,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            kind: Kind::Complement,
            alpha: 0.1,
            log_tf: true,
            idf: true,
            normalize: true,
            weight_normalize: false,
            url_weight: 1.0,
            hierarchy: 0.0,
            prior: 0.0,
            min_df: 2,
            temperature: 1.0,
            threshold: 0.5,
        }
    }
}

impl Params {
    /// A feature's value in a page's vector before normalisation.
    pub(crate) fn transform(&self, weight: f32, idf: f32) -> f32 {
        let w = weight.max(0.0);
        let w = if self.log_tf { w.ln_1p() } else { w };
        if self.idf {
            w * idf
        } else {
            w
        }
    }
}

/// What can go wrong: every message says where and why.
#[derive(Debug, thiserror::Error)]
pub enum ClassifyError {
    #[error("catalog line {line}: {reason}")]
    Catalog { line: usize, reason: String },
    #[error("corpus line {line}: {reason}")]
    Corpus { line: usize, reason: String },
    #[error("cannot train: {0}")]
    Train(String),
    #[error("not a focuser model file (it does not start with {MAGIC:?})")]
    NotAModel,
    #[error("model file format {found}, this program reads format {FORMAT_VERSION}: train the model again with this version")]
    Version { found: u32 },
    #[error("model file truncated: {expected} bytes expected, {found} present")]
    Truncated { expected: u64, found: u64 },
    #[error("model file damaged: checksum {found:08x}, {expected:08x} expected")]
    Checksum { expected: u32, found: u32 },
    #[error("model file damaged: {0}")]
    Damaged(String),
}

#[cfg(test)]
mod tests;
