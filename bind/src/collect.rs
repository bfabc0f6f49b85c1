//! The collector ("Коллектор"): which of a binder's phrases go into the binding. Its rules, in
//! the order they apply, each configurable:
//!
//! 1. **relevance**: a phrase below `min_relevance` is dropped;
//! 2. **advertisers** (direct only): a phrase with fewer than `min_advertisers` advertisers
//!    is dropped;
//! 3. **nesting**: a phrase whose words are a run of a longer phrase still kept (`купить
//!    iphone` holds `iphone`) is dropped, when `drop_nested`;
//! 4. **rank and size**: phrases are ranked by relevance — for direct, times
//!    `1 + advertiser_weight·ln(advertisers)`, so that phrases more advertisers bid on come
//!    first — and at most `max_phrases` are kept (direct: 20).
//!
//! Ties keep the order in which the phrases first occur on the page.

use rustc_hash::FxHashMap;

use crate::binder::Found;
use crate::dict::{Dictionary, Kind};

/// The collector's rules for one binding type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    pub min_relevance: f32,
    /// At most this many phrases in a binding.
    pub max_phrases: usize,
    /// Drop a phrase contained in a longer kept one.
    pub drop_nested: bool,
    /// Direct only: fewer advertisers and the phrase is dropped.
    pub min_advertisers: u32,
    /// Direct only: how much the number of advertisers raises a phrase's rank.
    pub advertiser_weight: f32,
}

impl Rules {
    /// The defaults of a binding type (docs/bindings.md).
    pub fn default_for(kind: Kind) -> Rules {
        match kind {
            Kind::Direct => Rules {
                min_relevance: 0.1,
                max_phrases: 20,
                drop_nested: true,
                min_advertisers: 1,
                advertiser_weight: 0.2,
            },
            Kind::Market | Kind::Media => Rules {
                min_relevance: 0.1,
                max_phrases: 10,
                drop_nested: true,
                min_advertisers: 0,
                advertiser_weight: 0.0,
            },
        }
    }
}

/// A phrase the collector kept, with its rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Collected {
    pub found: Found,
    pub rank: f32,
}

/// Applies `rules` to what a binder found in `dict`; the phrases kept, best first.
pub fn collect(dict: &Dictionary, found: Vec<Found>, rules: &Rules) -> Vec<Collected> {
    let candidates: Vec<(u32, f32)> = found.iter().map(|f| (f.phrase, f.relevance)).collect();
    let chosen = choose(dict, &candidates, rules);
    let mut found: Vec<Option<Found>> = found.into_iter().map(Some).collect();
    chosen
        .into_iter()
        .filter_map(|(i, rank)| {
            let found = found.get_mut(i)?.take()?;
            Some(Collected { found, rank })
        })
        .collect()
}

/// The collector's rules on candidates `(phrase, relevance)` in page order: the kept ones'
/// places in `candidates` with their ranks, best first.
pub(crate) fn choose(
    dict: &Dictionary,
    candidates: &[(u32, f32)],
    rules: &Rules,
) -> Vec<(usize, f32)> {
    let direct = dict.kind() == Kind::Direct;
    let advertisers = |p: u32| dict.phrase(p).map_or(0, |p| p.advertisers);
    let mut kept: Vec<usize> = (0..candidates.len())
        .filter(|&i| {
            let (p, relevance) = candidates[i];
            relevance >= rules.min_relevance && (!direct || advertisers(p) >= rules.min_advertisers)
        })
        .collect();
    if rules.drop_nested {
        kept = without_nested(dict, candidates, kept);
    }
    let mut ranked: Vec<(usize, f32)> = kept
        .into_iter()
        .map(|i| {
            let (p, relevance) = candidates[i];
            let boost = if direct {
                1.0 + rules.advertiser_weight * (advertisers(p).max(1) as f32).ln()
            } else {
                1.0
            };
            (i, relevance * boost)
        })
        .collect();
    // Stable: equal ranks keep the page's order.
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked.truncate(rules.max_phrases);
    ranked
}

/// Of the candidates `kept`, those that are no run of a longer one kept. Longest first, each
/// phrase not nested itself marks every shorter run of its words that is a candidate: a few
/// dozen lookups a phrase, where comparing every pair was quadratic in a page's phrases.
fn without_nested(dict: &Dictionary, candidates: &[(u32, f32)], kept: Vec<usize>) -> Vec<usize> {
    let words = |i: usize| dict.stem_ids(candidates[i].0);
    let mut by_words: FxHashMap<&[u32], Vec<usize>> = FxHashMap::default();
    for (k, &i) in kept.iter().enumerate() {
        by_words.entry(words(i)).or_default().push(k);
    }
    let mut by_length: Vec<usize> = (0..kept.len()).collect();
    by_length.sort_by_key(|&k| std::cmp::Reverse(words(kept[k]).len()));
    let mut nested = vec![false; kept.len()];
    for &k in &by_length {
        // Final: only longer phrases nest it, and they came before.
        if nested[k] {
            continue;
        }
        let w = words(kept[k]);
        for len in 1..w.len() {
            for run in w.windows(len) {
                for &inner in by_words.get(run).map_or(&[][..], Vec::as_slice) {
                    nested[inner] = true;
                }
            }
        }
    }
    kept.into_iter()
        .zip(nested)
        .filter_map(|(i, n)| (!n).then_some(i))
        .collect()
}

#[cfg(test)]
mod tests;
