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
    let direct = dict.kind() == Kind::Direct;
    let advertisers = |f: &Found| dict.phrase(f.phrase).map_or(0, |p| p.advertisers);
    let mut kept: Vec<Found> = found
        .into_iter()
        .filter(|f| f.relevance >= rules.min_relevance)
        .filter(|f| !direct || advertisers(f) >= rules.min_advertisers)
        .collect();
    if rules.drop_nested {
        kept = without_nested(dict, kept);
    }
    let mut ranked: Vec<Collected> = kept
        .into_iter()
        .map(|f| {
            let a = advertisers(&f).max(1) as f32;
            let boost = if direct {
                1.0 + rules.advertiser_weight * a.ln()
            } else {
                1.0
            };
            Collected {
                rank: f.relevance * boost,
                found: f,
            }
        })
        .collect();
    // Stable: equal ranks keep the page's order.
    ranked.sort_by(|a, b| b.rank.total_cmp(&a.rank));
    ranked.truncate(rules.max_phrases);
    ranked
}

/// The phrases that are no run of a longer one among them.
fn without_nested(dict: &Dictionary, found: Vec<Found>) -> Vec<Found> {
    let words = |f: &Found| dict.stem_ids(f.phrase);
    let mut by_length: Vec<usize> = (0..found.len()).collect();
    by_length.sort_by_key(|&i| std::cmp::Reverse(words(&found[i]).len()));
    let mut nested = vec![false; found.len()];
    for (k, &i) in by_length.iter().enumerate() {
        let w = words(&found[i]);
        // Only a longer phrase can hold it; the longer ones come before it.
        nested[i] = by_length[..k].iter().any(|&j| {
            let longer = words(&found[j]);
            !nested[j] && longer.len() > w.len() && longer.windows(w.len()).any(|x| x == w)
        });
    }
    found
        .into_iter()
        .zip(nested)
        .filter_map(|(f, n)| (!n).then_some(f))
        .collect()
}

#[cfg(test)]
mod tests;
