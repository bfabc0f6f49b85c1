//! A binder: a dictionary's phrases found in a page's words, each with its relevance and where
//! it matched. The relevance (docs/bindings.md) multiplies three parts, each in 0..=1:
//!
//! ```text
//! W      = Σ over the phrase's occurrences of the weight of the block it is in
//! L      = the page's weighted length (Σ over its words of their block's weight)
//! tf     = W / (W + k1·(1 − b + b·L / avg_length))                 -- BM25's saturation
//! spec   = (1 − ρ) + ρ·rarity                                      -- rarity: dict::Dictionary
//! agree  = 1 − γ·(1 − a)                                           -- a: below
//! relevance = tf · spec · agree
//! ```
//!
//! `a` is the mean, over the nodes of the page's category path (cut to the binding type's
//! depth), of each node's posterior where the node is the phrase's category or one of its
//! ancestors and 0 where it is not; 0.5 (no evidence either way) when the page has no
//! categories or the phrase none.

use crate::dict::{Category, Dictionary};
use crate::index::PhraseIndex;
use crate::page::PageText;

/// Blocks recorded per phrase (where it matched), at most.
pub const MAX_PLACES: usize = 8;

/// The relevance formula's constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Relevance {
    /// BM25's k1: how soon more occurrences stop adding.
    pub k1: f32,
    /// BM25's b: how much a long page divides an occurrence's worth (0: not at all).
    pub b: f32,
    /// The weighted length of an ordinary page.
    pub avg_length: f32,
    /// ρ: how much the phrase's rarity in its dictionary counts.
    pub rarity: f32,
    /// γ: how much disagreeing with the page's categories costs.
    pub categories: f32,
}

impl Default for Relevance {
    fn default() -> Self {
        Self {
            k1: 1.2,
            b: 0.5,
            avg_length: 300.0,
            rarity: 0.5,
            categories: 0.5,
        }
    }
}

/// A phrase found in a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The phrase's id in its dictionary.
    pub phrase: u32,
    /// Occurrences in the page.
    pub count: u32,
    /// W: the sum of the weights of the blocks of its occurrences.
    pub weight: f32,
    /// The first [`MAX_PLACES`] distinct blocks it matched in, in page order.
    pub blocks: Vec<u32>,
    pub relevance: f32,
}

/// A phrase found, as the finder keeps it while it scans: no allocation per phrase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hit {
    pub phrase: u32,
    pub count: u32,
    pub weight: f32,
    pub relevance: f32,
    places: [u32; MAX_PLACES],
    placed: u8,
}

impl Hit {
    fn new(phrase: u32) -> Hit {
        Hit {
            phrase,
            count: 0,
            weight: 0.0,
            relevance: 0.0,
            places: [0; MAX_PLACES],
            placed: 0,
        }
    }

    fn add(&mut self, block: u32, weight: f32) {
        self.count += 1;
        self.weight += weight;
        let n = self.placed as usize;
        if n < MAX_PLACES && !self.places[..n].contains(&block) {
            self.places[n] = block;
            self.placed += 1;
        }
    }

    pub fn found(&self) -> Found {
        Found {
            phrase: self.phrase,
            count: self.count,
            weight: self.weight,
            blocks: self.places[..self.placed as usize].to_vec(),
            relevance: self.relevance,
        }
    }
}

/// Finds phrases; keeps its buffers from page to page (one per thread).
#[derive(Debug, Default)]
pub struct Finder {
    distinct: Vec<u32>,
    ids: Vec<u32>,
    at: Vec<u32>,
    /// A sparse set: phrase `p` is in `hits[slot[p]]` when that hit is `p`'s (so that it
    /// needs no clearing between pages).
    slot: Vec<u32>,
    hits: Vec<Hit>,
}

impl Finder {
    pub fn new() -> Self {
        Self::default()
    }

    /// `dict`'s phrases in `page`, with their relevance given the page's category path
    /// `categories` (catalog ids from the root with posteriors, already cut to the type's
    /// depth); in the order they first occur.
    pub fn find(
        &mut self,
        dict: &Dictionary,
        page: &PageText,
        categories: &[(String, f32)],
        params: &Relevance,
    ) -> Vec<Found> {
        self.scored(dict, page, categories, params)
            .iter()
            .map(Hit::found)
            .collect()
    }

    /// [`Finder::find`]'s phrases as the finder keeps them (the collector takes its pick
    /// before any is made a [`Found`]).
    pub(crate) fn scored(
        &mut self,
        dict: &Dictionary,
        page: &PageText,
        categories: &[(String, f32)],
        params: &Relevance,
    ) -> &[Hit] {
        self.scan(&dict.index, page);
        let norm = 1.0 - params.b + params.b * page.length() / params.avg_length.max(1.0);
        for h in &mut self.hits {
            let Some(p) = dict.phrase(h.phrase) else {
                continue;
            };
            let tf = h.weight / (h.weight + params.k1 * norm).max(f32::MIN_POSITIVE);
            let spec = 1.0 - params.rarity + params.rarity * p.rarity;
            let agree = 1.0 - params.categories * (1.0 - agreement(p.category, categories));
            h.relevance = (tf * spec * agree).clamp(0.0, 1.0);
        }
        &self.hits
    }

    /// Where `index`'s phrases occur in `page` (relevance left 0), in the order they first
    /// occur.
    pub fn occurrences(&mut self, index: &PhraseIndex, page: &PageText) -> Vec<Found> {
        self.scan(index, page).iter().map(Hit::found).collect()
    }

    /// [`Finder::occurrences`] as the finder keeps them.
    pub(crate) fn scan(&mut self, index: &PhraseIndex, page: &PageText) -> &[Hit] {
        page.ids_with(index, &mut self.distinct, &mut self.ids, &mut self.at);
        if self.slot.len() < index.len() {
            self.slot.resize(index.len(), 0);
        }
        self.hits.clear();
        let (slot, hits, at, words) = (&mut self.slot, &mut self.hits, &self.at, page.words());
        index.find(&self.ids, |p, pos| {
            let Some(w) = at.get(pos).and_then(|&k| words.get(k as usize)) else {
                return;
            };
            let Some(s) = slot.get_mut(p as usize) else {
                return;
            };
            let i = match hits.get(*s as usize) {
                Some(h) if h.phrase == p => *s as usize,
                _ => {
                    *s = hits.len() as u32;
                    hits.push(Hit::new(p));
                    hits.len() - 1
                }
            };
            if let Some(h) = hits.get_mut(i) {
                h.add(w.block, page.weight(w.block));
            }
        });
        &self.hits
    }
}

/// `a` of the formula: the mean over the page's category path of each node's posterior where
/// the node is on the phrase's chain (the phrase's category or an ancestor), 0 where not.
pub fn agreement(category: Option<&Category>, page: &[(String, f32)]) -> f32 {
    let Some(c) = category else { return 0.5 };
    if page.is_empty() {
        return 0.5;
    }
    let on_chain: f32 = page
        .iter()
        .filter(|(id, _)| c.chain.iter().any(|x| x == id))
        .map(|&(_, p)| p.clamp(0.0, 1.0))
        .sum();
    on_chain / page.len() as f32
}

#[cfg(test)]
pub(crate) mod tests;
