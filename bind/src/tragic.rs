//! The tragic filter ("Трагический фильтр"): a 0/1 flag per page — disasters, deaths, terror,
//! war, violent crime — from a lexicon of weighted terms (Russian and English, matched on the
//! tokenizer's stems like dictionary phrases) and the page's weighted words: a term in the main
//! text counts fully, one in a menu link as little as the templater weighs it.
//!
//! ```text
//! S       = Σ over the lexicon's terms t found of w(t) · min(W(t), cap)
//!           (W(t): the sum of the weights of the blocks of t's occurrences; a hashtag
//!            holding a one-word term of ≥ 4 letters, `#yycflood`, is an occurrence of it)
//! density = S / (L + L0)                       (L: the page's weighted length)
//! tragic  = S ≥ min_score  and  density ≥ min_density
//! ```
//!
//! The shipped lexicon ([`Lexicon::builtin`]) and how the constants were chosen (on some
//! crises of CrisisLex T6 and half of 20 Newsgroups, checked on the others) are in
//! docs/bindings.md. [`tragic_line`] is `yacobot tragic`'s stable interface.

mod lexicon;

use crate::binder::Finder;
use crate::page::PageText;

pub use lexicon::{Lexicon, LexiconBuilder, LexiconError, Shape, BUILTIN_SOURCES};

/// The filter's constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// A term's weighted occurrences count up to this.
    pub cap: f32,
    /// L0: added to the page's length, so that a few words are not all density.
    pub length_offset: f32,
    pub min_score: f32,
    pub min_density: f32,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            cap: 2.0,
            length_offset: 0.0,
            min_score: 0.5,
            min_density: 0.03,
        }
    }
}

/// What the filter made of a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub tragic: bool,
    pub score: f32,
    pub density: f32,
    /// The terms found (lexicon term id, its part of the score), largest first.
    pub terms: Vec<(u32, f32)>,
}

/// Hashtags looked into on a page, at most (the first ones).
pub const MAX_HASHTAGS: usize = 64;

/// Judges a page's words.
pub fn judge(lexicon: &Lexicon, page: &PageText, finder: &mut Finder, params: &Params) -> Verdict {
    // W(t) of each term found as words.
    let mut found: Vec<(u32, f32)> = finder
        .scan(lexicon.index(), page)
        .iter()
        .map(|h| (h.phrase, h.weight))
        .collect();
    // A hashtag runs words together: a term inside one counts as the term.
    for w in page
        .words()
        .iter()
        .filter(|w| w.hashtag())
        .take(MAX_HASHTAGS)
    {
        let Some(t) = lexicon.inside(page.stem(w)) else {
            continue;
        };
        let weight = page.weight(w.block);
        match found.iter_mut().find(|(x, _)| *x == t) {
            Some((_, sum)) => *sum += weight,
            None => found.push((t, weight)),
        }
    }
    let mut terms: Vec<(u32, f32)> = found
        .into_iter()
        .map(|(t, sum)| (t, lexicon.weight(t) * sum.min(params.cap)))
        .filter(|&(_, s)| s > 0.0)
        .collect();
    terms.sort_by(|a, b| b.1.total_cmp(&a.1));
    let score: f32 = terms.iter().map(|&(_, s)| s).sum();
    let density = score / (page.length() + params.length_offset).max(f32::MIN_POSITIVE);
    Verdict {
        tragic: score >= params.min_score && density >= params.min_density,
        score,
        density,
        terms,
    }
}

/// Judges one text (one block of weight 1) with its own buffers: the tools' entry point.
pub struct TextJudge {
    tokenizer: focuser_multidoc::tokenize::Tokenizer,
    page: PageText,
    finder: Finder,
}

impl Default for TextJudge {
    fn default() -> Self {
        Self {
            tokenizer: focuser_multidoc::tokenize::Tokenizer::default(),
            page: PageText::new(),
            finder: Finder::new(),
        }
    }
}

impl TextJudge {
    pub fn judge(&mut self, lexicon: &Lexicon, text: &str, params: &Params) -> Verdict {
        self.page.read(&mut self.tokenizer, [(text, 1.0)]);
        judge(lexicon, &self.page, &mut self.finder, params)
    }
}

/// `yacobot tragic`'s line: `id \t text` → `id \t 0|1` (a line without a tab is all text and
/// its id empty). The text is judged as one block of weight 1; `\n` inside it may be written
/// `\n` (backslash, n), as `yacobot classify` reads it.
pub fn tragic_line(
    judge: &mut TextJudge,
    lexicon: &Lexicon,
    params: &Params,
    line: &str,
) -> String {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    let (id, text) = line.split_once('\t').unwrap_or(("", line));
    let text = text.replace("\\n", "\n");
    let v = judge.judge(lexicon, &text, params);
    format!("{id}\t{}", u8::from(v.tragic))
}

#[cfg(test)]
mod tests;
