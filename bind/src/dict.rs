//! Dictionaries, one per binding type: *direct* (advertisers' keyword phrases, each with its
//! number of advertisers), *market* (product categories' phrases), *media* (catalog categories'
//! phrases). A file (docs/formats.md, "Dictionary files") is parsed whole or refused with its
//! name and line; its phrases are normalised with the MultiDoc tokenizer's stems (the stems a
//! page's words get) and compiled into a [`PhraseIndex`].
//!
//! A dictionary's **version** is 64 bits of the MD5 of its normalised content, in the index's
//! order (the stems' sorted order): the same phrases, advertiser counts and categories give the
//! same version whatever their order in the file, their case or their stop words.

mod parse;

use focuser_multidoc::classify::Catalog;
use focuser_multidoc::tokenize::Tokenizer;

use crate::index::PhraseIndex;

pub use parse::{MAX_LINE_BYTES, MAX_PHRASE_BYTES, MAX_PHRASE_WORDS};

/// A binding type, and the kind of dictionary it binds with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Direct,
    Market,
    Media,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Direct, Kind::Market, Kind::Media];

    /// As files, configs and tools name it: `direct`, `market`, `media`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Direct => "direct",
            Kind::Market => "market",
            Kind::Media => "media",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Its code in the ad-server item format: 1, 2, 3.
    pub fn code(self) -> u8 {
        match self {
            Kind::Direct => 1,
            Kind::Market => 2,
            Kind::Media => 3,
        }
    }

    pub fn from_code(code: u8) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.code() == code)
    }
}

/// A bad dictionary file: which file, which line (0: the file as a whole), and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {reason}")]
pub struct DictError {
    pub file: String,
    pub line: usize,
    pub reason: String,
}

/// A category phrases point at, with its ancestors (from the catalog, when one was given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Category {
    pub id: String,
    /// Catalog ids from the root down to this category (just itself without a catalog).
    pub chain: Vec<String>,
}

/// A parsed, compiled dictionary.
#[derive(Debug)]
pub struct Dictionary {
    kind: Kind,
    name: String,
    version: u64,
    pub(crate) index: PhraseIndex,
    /// Phrase `p`'s text as the file has it: `text[text_at[p]..text_at[p + 1]]`.
    text: String,
    text_at: Vec<u32>,
    advertisers: Vec<u32>,
    /// Index into `categories`, or `u32::MAX`.
    category: Vec<u32>,
    categories: Vec<Category>,
    /// The phrase's rarity in the dictionary, 0..=1 (docs/bindings.md).
    rarity: Vec<f32>,
    /// The file's line of each phrase.
    line: Vec<u32>,
}

/// One phrase of a dictionary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phrase<'a> {
    /// Its number in the dictionary (the index's order).
    pub id: u32,
    pub text: &'a str,
    /// Advertisers bidding on it (direct); 0 for the other kinds.
    pub advertisers: u32,
    pub category: Option<&'a Category>,
    pub rarity: f32,
    pub line: u32,
}

impl Dictionary {
    /// Parses and compiles a dictionary file's bytes. `file` names it in errors; `expected`, if
    /// given, is the kind it must declare; `catalog`, if given, is the classifier's catalog,
    /// which every category must be in (and which gives their ancestors, for agreement).
    pub fn parse(
        file: &str,
        bytes: &[u8],
        expected: Option<Kind>,
        catalog: Option<&Catalog>,
        tokenizer: &mut Tokenizer,
    ) -> Result<Dictionary, DictError> {
        parse::parse(file, bytes, expected, catalog, tokenizer)
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The file name it was parsed from.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// 64 bits of the MD5 of the normalised content.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The version as stored and shown: 16 lower-case hex digits.
    pub fn version_hex(&self) -> String {
        format!("{:016x}", self.version)
    }

    pub fn len(&self) -> usize {
        self.advertisers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn phrase(&self, id: u32) -> Option<Phrase<'_>> {
        let i = id as usize;
        let (&a, &b) = (self.text_at.get(i)?, self.text_at.get(i + 1)?);
        Some(Phrase {
            id,
            text: self.text.get(a as usize..b as usize).unwrap_or(""),
            advertisers: *self.advertisers.get(i)?,
            category: self
                .category
                .get(i)
                .and_then(|&c| self.categories.get(c as usize)),
            rarity: self.rarity.get(i).copied().unwrap_or(0.0),
            line: self.line.get(i).copied().unwrap_or(0),
        })
    }

    /// Phrase `id`'s stems, as the tokenizer gives them.
    pub fn stems(&self, id: u32) -> impl Iterator<Item = &str> {
        self.index
            .phrase(id)
            .iter()
            .map(move |&s| self.index.stem(s))
    }

    /// Phrase `id`'s stem ids (for nesting: a phrase inside another).
    pub fn stem_ids(&self, id: u32) -> &[u32] {
        self.index.phrase(id)
    }

    pub fn index(&self) -> &PhraseIndex {
        &self.index
    }

    /// Bytes of memory the compiled dictionary holds.
    pub fn heap_bytes(&self) -> usize {
        let cats: usize = self
            .categories
            .iter()
            .map(|c| c.id.len() + c.chain.iter().map(|x| x.len() + 24).sum::<usize>() + 48)
            .sum();
        self.index.heap_bytes()
            + self.text.capacity()
            + (self.text_at.capacity()
                + self.advertisers.capacity()
                + self.category.capacity()
                + self.rarity.capacity()
                + self.line.capacity())
                * 4
            + cats
    }
}

#[cfg(test)]
mod tests;
