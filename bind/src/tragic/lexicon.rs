//! The tragic filter's lexicon: terms (one or more words, matched on stems) with weights, from
//! lists in three shapes: a term a line (every term the list's weight), `term \t weight` lines,
//! and Empath's `category \t term \t term …` rows (each category its own weight, categories
//! not named left out). A term in several lists keeps its largest weight.

use focuser_multidoc::tokenize::Tokenizer;

use rustc_hash::FxHashMap;

use crate::dict::DictError;
use crate::index::{Builder, PhraseIndex};

/// A bad lexicon list: which list, which line, why (the dictionaries' error).
pub type LexiconError = DictError;

/// How a list is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape<'a> {
    /// One term a line, each of this weight.
    Terms(f32),
    /// `term \t weight`.
    Weighted,
    /// Empath's `category \t term \t term …`: the categories to take, with their weights.
    Categories(&'a [(&'a str, f32)]),
}

/// The lists shipped in `bind/lexicon/` (NOTICE: where each comes from and its licence): name,
/// text, shape. CrisisLex's terms were gathered from crisis tweets (floods, storms, bombings),
/// some of them everyday words (`affected`, `residents`, `events`): they weigh half.
pub const BUILTIN_SOURCES: &[(&str, &str, Shape<'static>)] = &[
    (
        "crisislex-rec.txt",
        include_str!("../../lexicon/crisislex-rec.txt"),
        Shape::Terms(0.5),
    ),
    (
        "empath-tragic.tsv",
        include_str!("../../lexicon/empath-tragic.tsv"),
        Shape::Categories(EMPATH),
    ),
    (
        "tragic-en.tsv",
        include_str!("../../lexicon/tragic-en.tsv"),
        Shape::Weighted,
    ),
    (
        "tragic-ru.tsv",
        include_str!("../../lexicon/tragic-ru.tsv"),
        Shape::Weighted,
    ),
];

/// The Empath categories taken, and their weights.
const EMPATH: &[(&str, f32)] = &[
    ("death", 0.25),
    ("terrorism", 0.25),
    ("war", 0.25),
    ("kill", 0.25),
    ("violence", 0.25),
];

/// Terms with weights, compiled.
#[derive(Debug)]
pub struct Lexicon {
    index: PhraseIndex,
    weights: Vec<f32>,
    /// The one-word terms of at least [`MIN_INSIDE_BYTES`] bytes, heaviest first (then
    /// longest): what a hashtag may hold ([`Lexicon::inside`]).
    inside: Vec<(u32, Box<str>)>,
}

/// A term shorter than this is not looked for inside hashtags (`war` in `#software`).
pub const MIN_INSIDE_BYTES: usize = 4;

/// Collects terms from lists.
#[derive(Default)]
pub struct LexiconBuilder {
    /// Each term's stems joined by spaces, and its largest weight.
    terms: FxHashMap<String, f32>,
    stems: String,
}

impl LexiconBuilder {
    /// Adds a list's terms; `name` names it in errors.
    pub fn add(
        &mut self,
        tokenizer: &mut Tokenizer,
        name: &str,
        text: &str,
        shape: Shape<'_>,
    ) -> Result<&mut Self, LexiconError> {
        let bad = |line: usize, reason: String| DictError {
            file: name.to_owned(),
            line,
            reason,
        };
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let cols: Vec<&str> = line.split('\t').collect();
            match shape {
                Shape::Terms(w) => self.term(tokenizer, line, w),
                Shape::Weighted => {
                    let [term, weight] = cols[..] else {
                        return Err(bad(
                            i + 1,
                            format!("{} columns, `term \\t weight` expected", cols.len()),
                        ));
                    };
                    let w: f32 = weight
                        .trim()
                        .parse()
                        .ok()
                        .filter(|w: &f32| w.is_finite() && *w >= 0.0)
                        .ok_or_else(|| {
                            bad(i + 1, format!("weight {weight:?}: not a number ≥ 0"))
                        })?;
                    self.term(tokenizer, term, w)
                }
                Shape::Categories(take) => {
                    let Some((&category, terms)) = cols.split_first() else {
                        continue;
                    };
                    if let Some(&(_, w)) = take.iter().find(|(c, _)| *c == category) {
                        for t in terms {
                            self.term(tokenizer, t, w);
                        }
                    }
                }
            }
        }
        Ok(self)
    }

    fn term(&mut self, tokenizer: &mut Tokenizer, term: &str, weight: f32) {
        self.stems.clear();
        let stems = &mut self.stems;
        tokenizer.stems(term, |w| {
            if !w.link {
                if !stems.is_empty() {
                    stems.push(' ');
                }
                stems.push_str(w.text);
            }
        });
        if self.stems.is_empty() || weight <= 0.0 {
            return;
        }
        let w = self.terms.entry(self.stems.clone()).or_insert(0.0);
        *w = w.max(weight);
    }

    pub fn build(self) -> Lexicon {
        let mut builder = Builder::new();
        let mut weights_added = Vec::with_capacity(self.terms.len());
        for (stems, w) in &self.terms {
            builder.add(stems.split(' '));
            weights_added.push(*w);
        }
        let built = builder.build();
        let weights: Vec<f32> = built
            .order
            .iter()
            .map(|&o| weights_added.get(o as usize).copied().unwrap_or(0.0))
            .collect();
        let mut inside: Vec<(u32, Box<str>)> = (0..built.index.len() as u32)
            .filter_map(|t| match built.index.phrase(t) {
                &[s] => Some((t, built.index.stem(s).into())),
                _ => None,
            })
            .filter(|(_, s): &(u32, Box<str>)| s.len() >= MIN_INSIDE_BYTES)
            .collect();
        let weight = |t: u32| weights.get(t as usize).copied().unwrap_or(0.0);
        inside.sort_by(|a, b| {
            weight(b.0)
                .total_cmp(&weight(a.0))
                .then(b.1.len().cmp(&a.1.len()))
                .then(a.1.cmp(&b.1))
        });
        Lexicon {
            index: built.index,
            weights,
            inside,
        }
    }
}

impl Lexicon {
    pub fn builder() -> LexiconBuilder {
        LexiconBuilder::default()
    }

    /// The shipped lexicon: [`BUILTIN_SOURCES`].
    pub fn builtin(tokenizer: &mut Tokenizer) -> Result<Lexicon, LexiconError> {
        let mut b = Lexicon::builder();
        for &(name, text, shape) in BUILTIN_SOURCES {
            b.add(tokenizer, name, text, shape)?;
        }
        Ok(b.build())
    }

    pub fn index(&self) -> &PhraseIndex {
        &self.index
    }

    /// Term `t`'s weight.
    pub fn weight(&self, t: u32) -> f32 {
        self.weights.get(t as usize).copied().unwrap_or(0.0)
    }

    /// Term `t` as its stems.
    pub fn term(&self, t: u32) -> String {
        let words: Vec<&str> = self
            .index
            .phrase(t)
            .iter()
            .map(|&s| self.index.stem(s))
            .collect();
        words.join(" ")
    }

    /// The lexicon matching words only, never looking inside hashtags (the published
    /// CrisisLex baseline, for comparison).
    pub fn words_only(mut self) -> Lexicon {
        self.inside.clear();
        self
    }

    /// The heaviest one-word term (then the longest) inside `stem` and shorter than it: a
    /// hashtag's words are run together (`yycflood` holds `flood`).
    pub fn inside(&self, stem: &str) -> Option<u32> {
        self.inside
            .iter()
            .find(|(_, t)| t.len() < stem.len() && stem.contains(&**t))
            .map(|&(t, _)| t)
    }

    pub fn len(&self) -> usize {
        self.weights.len()
    }

    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }
}
