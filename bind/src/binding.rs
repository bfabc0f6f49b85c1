//! A page's binding: for each binding type, the phrases the collector kept (with their
//! relevance) and the page's categories cut to the type's depth, plus the tragic flag. A tragic
//! page keeps its flag and its categories but gets no phrases (no contextual ads on it).
//!
//! Its **canonical form** is its ad-server item ([`crate::adserver`], docs/formats.md, "Ad-server
//! items"): relevances and posteriors in thousandths, so that float noise between two runs on
//! the same page does not change it; its **MD5** (of that form) is what a worker compares with
//! the stored one to skip shipping an unchanged binding.

use md5::{Digest, Md5};

use crate::binder::{Finder, Relevance};
use crate::collect::{choose, Collected, Rules};
use crate::dict::{Dictionary, Kind};
use crate::page::PageText;

/// How one binding type binds: the binder's formula, the collector's rules, the categories'
/// depth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TypeParams {
    pub relevance: Relevance,
    pub rules: Rules,
    /// The page's category path is cut to at most this many nodes from the root.
    pub depth: usize,
}

impl TypeParams {
    /// The defaults of a binding type (docs/bindings.md): direct and media bind on the
    /// catalog's top two levels (advertisers' and banners' topics), market on three (product
    /// categories are deeper).
    pub fn default_for(kind: Kind) -> TypeParams {
        TypeParams {
            relevance: Relevance::default(),
            rules: Rules::default_for(kind),
            depth: match kind {
                Kind::Direct | Kind::Media => 2,
                Kind::Market => 3,
            },
        }
    }
}

/// A phrase of a binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundPhrase {
    /// The phrase as its dictionary writes it.
    pub text: String,
    /// Relevance in thousandths (0..=1000); in a section stub, the share of the section's
    /// bound pages that have it.
    pub relevance: u16,
    /// Advertisers bidding on it (direct); 0 for the other types.
    pub advertisers: u32,
}

/// One binding type's binding of a page (or a section).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub kind: Kind,
    /// The version of the dictionary it was bound with.
    pub dict_version: u64,
    /// Catalog ids from the root, each with its posterior in thousandths, at most the type's
    /// depth.
    pub categories: Vec<(String, u16)>,
    /// Best first; empty on a tragic page.
    pub phrases: Vec<BoundPhrase>,
}

/// Everything a page is bound to: what the worker stores, compares and ships.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageBinding {
    /// The URL's doc id.
    pub doc: u64,
    pub url: String,
    pub tragic: bool,
    /// One per binding type bound, in [`Kind`]'s order.
    pub bindings: Vec<Binding>,
}

/// 0..=1 as thousandths.
pub fn thousandths(x: f32) -> u16 {
    (x.clamp(0.0, 1.0) * 1000.0).round() as u16
}

/// What the binder and the collector keep of `dict`'s phrases in `page`, best first, with where
/// they matched (`yacobot bindings` shows it). `categories` is the page's full category path
/// (catalog ids from the root, posteriors); it is cut to the type's depth here.
pub fn collected(
    dict: &Dictionary,
    page: &PageText,
    categories: &[(String, f32)],
    params: &TypeParams,
    finder: &mut Finder,
) -> Vec<Collected> {
    let cut = cut(categories, params.depth);
    let hits = finder.scored(dict, page, cut, &params.relevance);
    let candidates: Vec<(u32, f32)> = hits.iter().map(|h| (h.phrase, h.relevance)).collect();
    // Only the phrases kept are made [`crate::binder::Found`]s.
    choose(dict, &candidates, &params.rules)
        .into_iter()
        .filter_map(|(i, rank)| {
            Some(Collected {
                found: hits.get(i)?.found(),
                rank,
            })
        })
        .collect()
}

/// The binding made of what [`collected`] kept: no phrases when the page is tragic.
pub fn binding(
    dict: &Dictionary,
    kept: &[Collected],
    categories: &[(String, f32)],
    params: &TypeParams,
    tragic: bool,
) -> Binding {
    let phrases = if tragic {
        Vec::new()
    } else {
        kept.iter()
            .filter_map(|c| {
                let p = dict.phrase(c.found.phrase)?;
                Some(BoundPhrase {
                    text: p.text.to_owned(),
                    relevance: thousandths(c.found.relevance),
                    advertisers: p.advertisers,
                })
            })
            .collect()
    };
    Binding {
        kind: dict.kind(),
        dict_version: dict.version(),
        categories: cut(categories, params.depth)
            .iter()
            .map(|(id, p)| (id.clone(), thousandths(*p)))
            .collect(),
        phrases,
    }
}

/// [`collected`] then [`binding`]: one type's binding of a page.
pub fn bind(
    dict: &Dictionary,
    page: &PageText,
    categories: &[(String, f32)],
    params: &TypeParams,
    tragic: bool,
    finder: &mut Finder,
) -> Binding {
    let kept = collected(dict, page, categories, params, finder);
    binding(dict, &kept, categories, params, tragic)
}

fn cut(categories: &[(String, f32)], depth: usize) -> &[(String, f32)] {
    categories.get(..depth.min(categories.len())).unwrap_or(&[])
}

impl PageBinding {
    /// A page's binding from its types' bindings (put in [`Kind`]'s order).
    pub fn new(doc: u64, url: &str, tragic: bool, mut bindings: Vec<Binding>) -> PageBinding {
        bindings.sort_by_key(|b| b.kind);
        PageBinding {
            doc,
            url: url.to_owned(),
            tragic,
            bindings,
        }
    }

    /// The canonical form: its ad-server item, one line without its newline.
    pub fn canonical(&self) -> String {
        crate::adserver::Item::Binding(self.clone()).render()
    }

    /// Lower-case hex MD5 of [`PageBinding::canonical`].
    pub fn md5(&self) -> String {
        md5_hex(self.canonical().as_bytes())
    }

    /// The dictionary versions it was bound with, per type.
    pub fn dict_versions(&self) -> Vec<(Kind, u64)> {
        self.bindings
            .iter()
            .map(|b| (b.kind, b.dict_version))
            .collect()
    }

    pub fn binding(&self, kind: Kind) -> Option<&Binding> {
        self.bindings.iter().find(|b| b.kind == kind)
    }
}

/// Lower-case hex MD5.
pub fn md5_hex(bytes: &[u8]) -> String {
    Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests;
