//! A page's words for the binders: each block's kept words as the tokenizer stems them, with
//! the block they are in (so its weight) and whether a phrase may run on from the word before.
//! Read once per page; every dictionary and the tragic lexicon look its stems up.

use std::hash::Hasher;

use focuser_multidoc::tokenize::Tokenizer;
use rustc_hash::FxHasher;

use crate::index::{PhraseIndex, NONE};

/// One kept word of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageWord {
    /// Its stem's page-local id ([`PageText::stem_id`]).
    stem: u32,
    /// The block it is in.
    pub block: u32,
    /// Whether it follows the previous word in the same sentence of the same block (a phrase
    /// may span the two).
    pub joined: bool,
    /// Whether it is written as a hashtag (`#yycflood`): words run together.
    hashtag: bool,
}

impl PageWord {
    /// Whether it is written as a hashtag (`#yycflood`, `#PrayForBoston`): words written
    /// together, which a lexicon may look into ([`crate::tragic`]).
    pub fn hashtag(&self) -> bool {
        self.hashtag
    }
}

/// A page's words, ready for lookup. Keeps its memory from page to page.
#[derive(Debug, Default)]
pub struct PageText {
    words: Vec<PageWord>,
    stems: Interner,
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
                if w.link {
                    // A link is no word of a phrase; it only breaks one.
                    return;
                }
                let hashtag = w.start > 0 && text.as_bytes().get(w.start - 1) == Some(&b'#');
                if let Some(stem) = stems.intern(w.text) {
                    words.push(PageWord {
                        stem,
                        block,
                        joined,
                        hashtag,
                    });
                }
            });
            self.length += weight * (self.words.len() - before) as f32;
        }
    }

    pub fn words(&self) -> &[PageWord] {
        &self.words
    }

    pub fn stem(&self, w: &PageWord) -> &str {
        self.stems.get(w.stem)
    }

    /// A word's stem as a page-local id: the same stem, the same id; ids count up from 0 in
    /// the order the stems first occur, to [`PageText::stem_count`].
    pub fn stem_id(&self, w: &PageWord) -> u32 {
        w.stem
    }

    /// The page's distinct stems.
    pub fn stem_count(&self) -> usize {
        self.stems.spans.len()
    }

    /// The stem of page-local id `id`.
    pub fn stem_of(&self, id: u32) -> &str {
        self.stems.get(id)
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
        self.ids_with(index, &mut Vec::new(), ids, at);
    }

    /// [`PageText::ids`] with a buffer for the distinct stems' ids: each distinct stem is
    /// looked up in `index` once, however often the page repeats it.
    pub(crate) fn ids_with(
        &self,
        index: &PhraseIndex,
        distinct: &mut Vec<u32>,
        ids: &mut Vec<u32>,
        at: &mut Vec<u32>,
    ) {
        distinct.clear();
        distinct.extend((0..self.stem_count() as u32).map(|s| index.id(self.stems.get(s))));
        ids.clear();
        at.clear();
        for (k, w) in self.words.iter().enumerate() {
            if !w.joined && k > 0 {
                ids.push(NONE);
                at.push(u32::MAX);
            }
            ids.push(distinct.get(w.stem as usize).copied().unwrap_or(NONE));
            at.push(k as u32);
        }
    }
}

/// A page's distinct stems, each stored once with a page-local id: the page's words are
/// hashed once, and each dictionary looks up only the distinct stems.
#[derive(Debug, Default)]
struct Interner {
    text: String,
    /// Stem `id` is `text[spans[id].0..spans[id].1]`.
    spans: Vec<(u32, u32)>,
    /// Open addressing: a stem's id + 1, 0 for a free slot; a power of two, at most half
    /// full.
    table: Vec<u32>,
}

impl Interner {
    fn clear(&mut self) {
        self.text.clear();
        self.spans.clear();
        self.table.fill(0);
    }

    fn get(&self, id: u32) -> &str {
        self.spans
            .get(id as usize)
            .and_then(|&(a, b)| self.text.get(a as usize..b as usize))
            .unwrap_or("")
    }

    /// The stem's id, a new one if the page had not had it (none when the page's stems
    /// outgrow 4 GB).
    fn intern(&mut self, stem: &str) -> Option<u32> {
        if (self.spans.len() + 1) * 2 > self.table.len() {
            self.grow();
        }
        let mask = self.table.len() - 1;
        let mut slot = hash(stem) as usize & mask;
        loop {
            match self.table[slot] {
                0 => {
                    let start = self.text.len();
                    if start + stem.len() > u32::MAX as usize {
                        return None;
                    }
                    self.text.push_str(stem);
                    let id = self.spans.len() as u32;
                    self.spans.push((start as u32, self.text.len() as u32));
                    self.table[slot] = id + 1;
                    return Some(id);
                }
                x if self.get(x - 1) == stem => return Some(x - 1),
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    fn grow(&mut self) {
        let size = (self.table.len() * 2).max(256);
        self.table.clear();
        self.table.resize(size, 0);
        let mask = size - 1;
        for id in 0..self.spans.len() as u32 {
            let mut slot = hash(self.get(id)) as usize & mask;
            while self.table[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            self.table[slot] = id + 1;
        }
    }
}

fn hash(s: &str) -> u64 {
    let mut h = FxHasher::default();
    h.write(s.as_bytes());
    h.finish()
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

    #[test]
    fn each_distinct_stem_gets_one_id_from_page_to_page() {
        let mut t = Tokenizer::default();
        let mut p = PageText::new();
        // Enough distinct words that the table grows a few times.
        let many: Vec<String> = (0..3000).map(|i| format!("word{i}x")).collect();
        let text = format!("{} {}", many.join(" "), many.join(" "));
        for _ in 0..2 {
            p.read(&mut t, [(text.as_str(), 1.0), ("wines wine", 1.0)]);
            assert_eq!(p.stem_count(), 3001);
            let w = p.words();
            assert_eq!(w.len(), 6002);
            for k in 0..3000 {
                assert_eq!(p.stem_id(&w[k]), k as u32);
                assert_eq!(p.stem_id(&w[k + 3000]), k as u32);
                assert_eq!(p.stem(&w[k]), p.stem_of(k as u32));
            }
            assert_eq!(p.stem(&w[6000]), "wine");
            assert_eq!(p.stem_id(&w[6000]), p.stem_id(&w[6001]));
        }
        p.read(&mut t, [("red wine", 1.0)]);
        assert_eq!(
            (p.stem_count(), p.stem_of(0), p.stem_of(1)),
            (2, "red", "wine")
        );
        assert_eq!(p.stem_of(2), "");
    }

    #[test]
    fn a_word_written_as_a_hashtag_is_marked() {
        let mut p = PageText::new();
        p.read(
            &mut Tokenizer::default(),
            [("Water everywhere #YYCFlood today. #abflood", 1.0)],
        );
        let got: Vec<(&str, bool)> = p.words().iter().map(|w| (p.stem(w), w.hashtag())).collect();
        assert_eq!(
            got,
            [
                ("water", false),
                ("everywher", false),
                ("yycflood", true),
                ("today", false),
                ("abflood", true),
            ]
        );
    }
}
