//! A page's words for the binders: each block's kept words as the tokenizer stems them, with
//! the block they are in (so its weight) and whether a phrase may run on from the word before.
//! Read once per page; every dictionary and the tragic lexicon look its stems up.

use focuser_multidoc::tokenize::Tokenizer;

use crate::index::{PhraseIndex, NONE};

/// One kept word of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageWord {
    /// Its stem: `stems[start..end]` of the page.
    start: u32,
    end: u32,
    /// The block it is in.
    pub block: u32,
    /// Whether it follows the previous word in the same sentence of the same block (a phrase
    /// may span the two).
    pub joined: bool,
}

/// A page's words, ready for lookup. Keeps its memory from page to page.
#[derive(Debug, Default)]
pub struct PageText {
    words: Vec<PageWord>,
    stems: String,
    weights: Vec<f32>,
    length: f32,
}

impl PageText {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a page's blocks, each with its weight (the templater's: template text weighs
    /// little). A block whose weight is not a positive number is left out: no phrase found
    /// there could count.
    pub fn read<'a>(
        &mut self,
        tokenizer: &mut Tokenizer,
        blocks: impl IntoIterator<Item = (&'a str, f32)>,
    ) {
        self.words.clear();
        self.stems.clear();
        self.weights.clear();
        self.length = 0.0;
        for (text, weight) in blocks {
            let block = self.weights.len() as u32;
            let weight = if weight > 0.0 && weight.is_finite() {
                weight
            } else {
                0.0
            };
            self.weights.push(weight);
            if weight == 0.0 {
                continue;
            }
            let mut first = true;
            let (words, stems) = (&mut self.words, &mut self.stems);
            let before = words.len();
            tokenizer.stems(text, |w| {
                let joined = !first && !w.sentence_start && !w.link;
                first = false;
                if w.link || stems.len() + w.text.len() > u32::MAX as usize {
                    // A link is no word of a phrase; it only breaks one.
                    return;
                }
                let start = stems.len() as u32;
                stems.push_str(w.text);
                words.push(PageWord {
                    start,
                    end: stems.len() as u32,
                    block,
                    joined,
                });
            });
            self.length += weight * (self.words.len() - before) as f32;
        }
    }

    pub fn words(&self) -> &[PageWord] {
        &self.words
    }

    pub fn stem(&self, w: &PageWord) -> &str {
        self.stems
            .get(w.start as usize..w.end as usize)
            .unwrap_or("")
    }

    /// A block's weight (0 for one left out).
    pub fn weight(&self, block: u32) -> f32 {
        self.weights.get(block as usize).copied().unwrap_or(0.0)
    }

    pub fn blocks(&self) -> usize {
        self.weights.len()
    }

    /// The page's weighted length: the sum over its words of their blocks' weights.
    pub fn length(&self) -> f32 {
        self.length
    }

    /// The page's words as `index`'s stem ids, into `ids`, with a [`NONE`] wherever a phrase
    /// cannot run on (between blocks, sentences, across a link); `at[k]` is the word at
    /// position `k` (`u32::MAX` at a break).
    pub fn ids(&self, index: &PhraseIndex, ids: &mut Vec<u32>, at: &mut Vec<u32>) {
        ids.clear();
        at.clear();
        for (k, w) in self.words.iter().enumerate() {
            if !w.joined && k > 0 {
                ids.push(NONE);
                at.push(u32::MAX);
            }
            ids.push(index.id(self.stem(w)));
            at.push(k as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn words_keep_their_block_and_phrases_stop_at_sentences_links_and_blocks() {
        let mut t = Tokenizer::default();
        let mut p = PageText::new();
        p.read(
            &mut t,
            [
                ("Red wines. Cheap www.x.com flights", 0.5),
                ("menu", 0.0),
                ("of the Red wine", 2.0),
            ],
        );
        let got: Vec<(&str, u32, bool)> = p
            .words()
            .iter()
            .map(|w| (p.stem(w), w.block, w.joined))
            .collect();
        assert_eq!(
            got,
            [
                ("red", 0, false),
                ("wine", 0, true),
                ("cheap", 0, false),
                ("flight", 0, false),
                ("red", 2, false),
                ("wine", 2, true),
            ]
        );
        assert_eq!(p.blocks(), 3);
        assert_eq!(p.weight(1), 0.0);
        assert!((p.length() - (4.0 * 0.5 + 2.0 * 2.0)).abs() < 1e-6);
    }
}
