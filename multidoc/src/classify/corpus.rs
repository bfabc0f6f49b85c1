//! Labelled documents for training. A corpus file has one document a line, `labels \t text`,
//! where `labels` is one label or several joined by `|` (a document about two topics), and a
//! label is a catalog id or a path of names joined by ` > `. (The one-file-per-document layout,
//! label folders, is read by the command that walks the folders: each file's folder path is its
//! label path.)

use rustc_hash::FxHashMap;

use super::ClassifyError;
use crate::tokenize::{Bag, Features};

/// One line of a corpus file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelledLine<'a> {
    pub labels: Vec<&'a str>,
    pub text: &'a str,
}

/// Reads `labels \t text` (line numbers from 1, for the error).
pub fn parse_line(line: &str, number: usize) -> Result<LabelledLine<'_>, ClassifyError> {
    let bad = |reason: &str| ClassifyError::Corpus {
        line: number,
        reason: reason.to_owned(),
    };
    let line = line.trim_end_matches(['\r', '\n']);
    let (labels, text) = line
        .split_once('\t')
        .ok_or_else(|| bad("expected a label, a tab and the text"))?;
    let labels: Vec<&str> = labels
        .split('|')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if labels.is_empty() {
        return Err(bad("no label"));
    }
    Ok(LabelledLine { labels, text })
}

/// A document as training keeps it: its classes and its features.
#[derive(Clone, Debug)]
pub(crate) struct Doc {
    pub labels: Vec<u32>,
    /// (feature, weight, from the URL)
    pub terms: Vec<(u64, f32, bool)>,
}

/// Labelled documents, each with its features (made by a tokenizer with the options the model
/// is to have), and the text of every feature seen.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    pub(crate) docs: Vec<Doc>,
    pub(crate) texts: FxHashMap<u64, Box<str>>,
}

impl Corpus {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a document labelled with catalog nodes `labels` (at least one).
    pub fn add(&mut self, labels: &[u32], f: &Features) {
        let mut terms = Vec::with_capacity(f.words.len() + f.url.len());
        for (bag, url) in [(&f.words, false), (&f.url, true)] {
            self.note(bag, url, &mut terms);
        }
        let mut labels = labels.to_vec();
        labels.sort_unstable();
        labels.dedup();
        self.docs.push(Doc { labels, terms });
    }

    fn note(&mut self, bag: &Bag, url: bool, terms: &mut Vec<(u64, f32, bool)>) {
        for t in bag.terms() {
            terms.push((t.feature, t.weight, url));
            self.texts
                .entry(t.feature)
                .or_insert_with(|| bag.text(t).into());
        }
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Document `i`'s labels (catalog nodes).
    pub fn labels(&self, i: usize) -> &[u32] {
        self.docs.get(i).map_or(&[], |d| d.labels.as_slice())
    }

    /// Document `i`'s features again (for classifying a training document).
    pub fn features(&self, i: usize, out: &mut Features) {
        out.clear();
        let Some(d) = self.docs.get(i) else { return };
        for &(feature, weight, url) in &d.terms {
            let text = self.texts.get(&feature).map_or("", |t| t);
            let bag = if url { &mut out.url } else { &mut out.words };
            bag.add(feature, weight, &[text]);
        }
    }
}
