//! A bag of weighted features: each distinct feature once, with the sum of the weights of its
//! occurrences and its text (for people: the "why this category" tool). Made to be cleared and
//! filled again: its table, list and text keep their memory between pages.

use rustc_hash::FxHashMap;

/// One distinct feature of a bag.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term {
    /// The feature's 64-bit hash (its namespace is part of it: see [`super::Tokenizer`]).
    pub feature: u64,
    /// The sum of the weights of its occurrences.
    pub weight: f32,
    start: u32,
    end: u32,
}

/// Weighted features of one text (a page's words, or its URL's).
#[derive(Clone, Debug, Default)]
pub struct Bag {
    index: FxHashMap<u64, u32>,
    terms: Vec<Term>,
    text: String,
    total: f64,
}

impl Bag {
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the bag, keeping its memory.
    pub fn clear(&mut self) {
        self.index.clear();
        self.terms.clear();
        self.text.clear();
        self.total = 0.0;
    }

    /// How many distinct features.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The distinct features, in the order they first occurred.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// A feature's text: a stem, `stem stem` for a pair of words, `@host` for a link or an
    /// e-mail address, `<number shape>` for a long number.
    pub fn text(&self, term: &Term) -> &str {
        self.text
            .get(term.start as usize..term.end as usize)
            .unwrap_or("")
    }

    /// The sum of every occurrence's weight.
    pub fn total(&self) -> f64 {
        self.total
    }

    /// The weight of `feature` (0 when absent).
    pub fn weight(&self, feature: u64) -> f32 {
        self.index
            .get(&feature)
            .and_then(|&i| self.terms.get(i as usize))
            .map_or(0.0, |t| t.weight)
    }

    /// The `n` heaviest features with their text, heaviest first (ties in order of occurrence).
    pub fn top(&self, n: usize) -> Vec<(&str, f32)> {
        let mut all: Vec<&Term> = self.terms.iter().collect();
        all.sort_by(|a, b| b.weight.total_cmp(&a.weight));
        all.into_iter()
            .take(n)
            .map(|t| (self.text(t), t.weight))
            .collect()
    }

    /// Adds `weight` to `feature`, whose text is `parts` joined.
    pub(crate) fn add(&mut self, feature: u64, weight: f32, parts: &[&str]) {
        self.total += f64::from(weight);
        if let Some(&i) = self.index.get(&feature) {
            if let Some(t) = self.terms.get_mut(i as usize) {
                t.weight += weight;
            }
            return;
        }
        let start = self.text.len();
        for p in parts {
            self.text.push_str(p);
        }
        let (Ok(start), Ok(end), Ok(i)) = (
            u32::try_from(start),
            u32::try_from(self.text.len()),
            u32::try_from(self.terms.len()),
        ) else {
            // More than 4 GiB of distinct text: the page is garbage, its later words are not kept.
            self.text.truncate(start);
            return;
        };
        self.index.insert(feature, i);
        self.terms.push(Term {
            feature,
            weight,
            start,
            end,
        });
    }
}
