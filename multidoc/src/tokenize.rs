//! Weighted words ("вес слова внутри сегмента равен весу сегмента"): a page's blocks, each with
//! its weight, become a bag of stems whose weights are the sums of their blocks' weights; the
//! page's URL becomes a bag of its own. The rules (docs/classifier.md says why):
//!
//! - words are Unicode (UAX #29) words, lower-cased, `ё` read as `е`, `’` as `'`;
//! - Cyrillic words get the Russian Snowball stem, Latin ones the English stem, others (CJK
//!   characters, Greek, mixed scripts) are kept as they are;
//! - stop words (English and Russian function words) and one-letter words are dropped, except
//!   one CJK character, which is a word; words longer than 40 characters are dropped (base64,
//!   hashes);
//! - a number of up to four digits is a word (years, models: `1987`, `486`), a longer one or one
//!   with a separator is its shape (`<int>`, `<dec>`); words mixing letters and digits (`x11`,
//!   `mp3`) are kept whole;
//! - a link or an e-mail address in the text is one feature, its host (`@example.com`);
//! - with [`Options::bigrams`], each pair of neighbouring words in a sentence is a feature too
//!   (`bank america` for "bank of America");
//! - URL words: the host's labels and the path's words (percent-decoded), letters only, stemmed,
//!   the query left out; they are features of their own (a word in the URL and the same word in
//!   the text are different features).
//!
//! A [`Tokenizer`] keeps its buffers and a [`Bag`] its memory between pages: a page costs no
//! allocation once they have grown, but for words whose stems it has not seen yet.

mod bag;
mod stop;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashMap;
use unicode_segmentation::UnicodeSegmentation;
use xxhash_rust::xxh3::xxh3_64_with_seed;

pub use bag::{Bag, Term};
pub use stop::is_stop;

/// Each kind of feature hashes with its own seed, so that the same text in two kinds differs.
const WORD_SEED: u64 = 0;
const PAIR_SEED: u64 = 1;
const LINK_SEED: u64 = 2;
const URL_SEED: u64 = 3;

/// Longest word kept, in characters.
const MAX_WORD_CHARS: usize = 40;

/// How text becomes features. A model records the options it was trained with, and pages are
/// tokenized with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Pairs of neighbouring words as features too.
    pub bigrams: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self { bigrams: true }
    }
}

/// A page's features: its words (with their blocks' weights) and its URL's words.
#[derive(Clone, Debug, Default)]
pub struct Features {
    pub words: Bag,
    pub url: Bag,
}

impl Features {
    pub fn clear(&mut self) {
        self.words.clear();
        self.url.clear();
    }
}

/// The feature of a word's (stem's) text, as [`Bag`]s and models know it.
pub fn word_feature(stem: &str) -> u64 {
    xxh3_64_with_seed(stem.as_bytes(), WORD_SEED)
}

/// The feature of a URL word's (stem's) text.
pub fn url_feature(stem: &str) -> u64 {
    xxh3_64_with_seed(stem.as_bytes(), URL_SEED)
}

fn pair_feature(first: u64, second: u64) -> u64 {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&first.to_le_bytes());
    b[8..].copy_from_slice(&second.to_le_bytes());
    xxh3_64_with_seed(&b, PAIR_SEED)
}

/// What a lower-cased word is made of.
#[derive(Clone, Copy, Default)]
struct Shape {
    cyrillic: bool,
    latin: bool,
    other: bool,
    digits: usize,
    separators: bool,
    chars: usize,
}

/// Makes bags of features out of text; one per thread.
pub struct Tokenizer {
    options: Options,
    stems: Stems,
    /// The word being read, lower-cased.
    word: String,
    /// The previous word's stem, for pairs.
    prev: String,
    /// A URL's path, percent-decoded.
    decoded: Vec<u8>,
}

/// One kept word of a text, as [`Tokenizer::stems`] gives it: exactly what a bag counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word<'a> {
    /// The stem; a number's shape (`<int>`, `<dec>`); or, for a link or an e-mail address, its
    /// host (lower case, without `www.`; the bag's feature text is `@` and the host).
    pub text: &'a str,
    /// Whether this is a link or an e-mail address rather than a word.
    pub link: bool,
    /// The word's bytes in the text (a link's: its whole whitespace-separated chunk).
    pub start: usize,
    pub end: usize,
    /// Whether a sentence ends between the previous word and this one (always true for the
    /// first word of a text and for the word after a link): pairs do not cross it.
    pub sentence_start: bool,
}

impl Tokenizer {
    pub fn new(options: Options) -> Self {
        Self {
            options,
            stems: Stems::new(),
            word: String::new(),
            prev: String::new(),
            decoded: Vec::new(),
        }
    }

    pub fn options(&self) -> Options {
        self.options
    }

    /// A page's features: `blocks` are (text, weight) pairs (the segmenter's blocks with their
    /// weights), `url` the page's address. `out` is cleared first.
    pub fn page<'a>(
        &mut self,
        url: Option<&str>,
        blocks: impl IntoIterator<Item = (&'a str, f32)>,
        out: &mut Features,
    ) {
        out.clear();
        for (text, weight) in blocks {
            self.block(text, weight, &mut out.words);
        }
        if let Some(u) = url {
            self.url(u, &mut out.url);
        }
    }

    /// Adds one block's words, each with the block's `weight`, to `out`. A weight that is not a
    /// positive number adds nothing.
    pub fn block(&mut self, text: &str, weight: f32, out: &mut Bag) {
        if !(weight > 0.0 && weight.is_finite()) {
            return;
        }
        let bigrams = self.options.bigrams;
        let mut prev = std::mem::take(&mut self.prev);
        let mut prev_feature: Option<u64> = None;
        walk(&mut self.stems, &mut self.word, text, |w| {
            if w.link {
                let feature = xxh3_64_with_seed(w.text.as_bytes(), LINK_SEED);
                out.add(feature, weight, &["@", w.text]);
                prev_feature = None;
                return;
            }
            if w.sentence_start {
                prev_feature = None;
            }
            let feature = word_feature(w.text);
            out.add(feature, weight, &[w.text]);
            if bigrams {
                if let Some(p) = prev_feature {
                    out.add(pair_feature(p, feature), weight, &[&prev, " ", w.text]);
                }
                prev.clear();
                prev.push_str(w.text);
            }
            prev_feature = Some(feature);
        });
        self.prev = prev;
    }

    /// Every kept word of `text`, in order, to `f`: the stems (number shapes, link hosts) that
    /// [`Tokenizer::block`] counts, so that a phrase normalised here finds a page's words. No
    /// pairs: a caller that wants neighbours has the order and the sentence ends.
    pub fn stems(&mut self, text: &str, f: impl FnMut(Word<'_>)) {
        walk(&mut self.stems, &mut self.word, text, f);
    }

    /// Adds the words of a page's address to `out` (weight 1 each): the host's labels but `www`,
    /// and the path's words (percent-decoded), letters only; the query and fragment are left out.
    pub fn url(&mut self, url: &str, out: &mut Bag) {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = host.split(':').next().unwrap_or("");
        for label in host.split(['.', '-']) {
            if !label.eq_ignore_ascii_case("www") {
                self.url_word(label, out);
            }
        }
        let path = tail.split(['?', '#']).next().unwrap_or("");
        let mut decoded = std::mem::take(&mut self.decoded);
        percent_decode(path.as_bytes(), &mut decoded);
        let text = String::from_utf8_lossy(&decoded);
        for w in text.split(|c: char| !c.is_alphanumeric()) {
            self.url_word(w, out);
        }
        drop(text);
        self.decoded = decoded;
    }

    fn url_word(&mut self, raw: &str, out: &mut Bag) {
        if raw.is_empty() {
            return;
        }
        let shape = lower(raw, &mut self.word);
        // Numbers and ids (dates, article numbers) say nothing about a topic.
        if shape.digits > 0 || shape.chars < 2 || !keep(&self.word, &shape) {
            return;
        }
        let stem = self.stems.get(&self.word, &shape);
        if !stem.is_empty() {
            out.add(url_feature(stem), 1.0, &[stem]);
        }
    }
}

impl Default for Tokenizer {
    fn default() -> Self {
        Self::new(Options::default())
    }
}

/// The kept words of `text`, in order: links and e-mail addresses as their host, words (UAX
/// #29) as their stems, with where a sentence ends. The one reading of text both the bags and
/// [`Tokenizer::stems`] use.
fn walk(stems: &mut Stems, word: &mut String, text: &str, mut f: impl FnMut(Word<'_>)) {
    let base = text.as_ptr() as usize;
    let mut last_end = 0;
    let mut sentence_start = true;
    for chunk in text.split(char::is_whitespace).filter(|c| !c.is_empty()) {
        let chunk_start = chunk.as_ptr() as usize - base;
        if let Some(host) = link_host(chunk) {
            word.clear();
            word.push_str(host);
            word.make_ascii_lowercase();
            f(Word {
                text: word,
                link: true,
                start: chunk_start,
                end: chunk_start + chunk.len(),
                sentence_start,
            });
            sentence_start = true;
            continue;
        }
        for (i, w) in chunk.unicode_word_indices() {
            let start = chunk_start + i;
            if text.get(last_end..start).is_some_and(ends_sentence) {
                sentence_start = true;
            }
            last_end = start + w.len();
            if let Some(stem) = stem_of(stems, word, w) {
                f(Word {
                    text: stem,
                    link: false,
                    start,
                    end: last_end,
                    sentence_start,
                });
                sentence_start = false;
            }
        }
    }
}

/// A word's stem, its number shape, or `None` when the word is not kept.
fn stem_of<'a>(stems: &'a mut Stems, word: &'a mut String, raw: &str) -> Option<&'a str> {
    let shape = lower(raw, word);
    let stem: &str = if is_number(&shape) {
        // Short numbers are words (years, models), long ones their shape.
        if shape.separators {
            "<dec>"
        } else if shape.digits <= 4 {
            word.as_str()
        } else {
            "<int>"
        }
    } else if keep(word, &shape) {
        stems.get(word, &shape)
    } else {
        return None;
    };
    (!stem.is_empty()).then_some(stem)
}

/// A number: digits, maybe with separators (`1,000`, `3.14`), and no letters.
fn is_number(s: &Shape) -> bool {
    s.digits > 0 && !(s.cyrillic || s.latin || s.other)
}

/// Whether a (non-number) lower-cased word is kept.
fn keep(word: &str, shape: &Shape) -> bool {
    if shape.chars > MAX_WORD_CHARS {
        return false;
    }
    if shape.chars == 1 {
        return word.chars().next().is_some_and(is_ideographic);
    }
    !is_stop(word)
}

/// Stems of kept words: Russian for Cyrillic words, English for Latin ones, the word itself for
/// others and for words with digits or mixed scripts. The stemmers' answers are remembered (a
/// page repeats its words, a site its vocabulary): tokenizing measured 1.5-2x faster.
struct Stems {
    english: Stemmer,
    russian: Stemmer,
    known: FxHashMap<Box<str>, Box<str>>,
}

/// Words whose stems are remembered at most; then the memory starts again.
const KNOWN_STEMS: usize = 1 << 16;

impl Stems {
    fn new() -> Self {
        Self {
            english: Stemmer::create(Algorithm::English),
            russian: Stemmer::create(Algorithm::Russian),
            known: FxHashMap::default(),
        }
    }

    fn get<'a>(&'a mut self, word: &'a str, shape: &Shape) -> &'a str {
        let stemmer = if shape.digits > 0 || shape.other || (shape.cyrillic && shape.latin) {
            return word;
        } else if shape.cyrillic {
            &self.russian
        } else if shape.latin {
            &self.english
        } else {
            return word;
        };
        if !self.known.contains_key(word) {
            if self.known.len() >= KNOWN_STEMS {
                self.known.clear();
            }
            let stem = stemmer.stem(word).into_owned().into_boxed_str();
            self.known.insert(word.into(), stem);
        }
        self.known.get(word).map_or(word, |s| s)
    }
}

/// Whether the text between two words ends a sentence (pairs do not cross it).
fn ends_sentence(gap: &str) -> bool {
    gap.contains(['.', '!', '?', ';', ':', '…', '。', '！', '？', '|', '•'])
}

/// CJK ideographs and syllabaries, where one character is a word.
fn is_ideographic(c: char) -> bool {
    matches!(c as u32, 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// `raw` lower-cased into `out` (`ё` → `е`, right single quote → `'`), and what it is made of.
fn lower(raw: &str, out: &mut String) -> Shape {
    out.clear();
    let mut s = Shape::default();
    for c in raw.chars() {
        s.chars += 1;
        match c {
            'A'..='Z' => {
                s.latin = true;
                out.push(c.to_ascii_lowercase());
            }
            'a'..='z' => {
                s.latin = true;
                out.push(c);
            }
            '0'..='9' => {
                s.digits += 1;
                out.push(c);
            }
            'ё' | 'Ё' => {
                s.cyrillic = true;
                out.push('е');
            }
            '\u{2019}' | '\u{2018}' | '\u{02BC}' | '\'' => out.push('\''),
            '.' | ',' | '_' => {
                s.separators = true;
                out.push(c);
            }
            _ => {
                if ('\u{0400}'..='\u{04FF}').contains(&c) {
                    s.cyrillic = true;
                } else if ('\u{00C0}'..='\u{024F}').contains(&c) {
                    s.latin = true;
                } else if c.is_numeric() {
                    s.digits += 1;
                } else {
                    s.other = true;
                }
                out.extend(c.to_lowercase());
            }
        }
    }
    s
}

/// `%XX` sequences decoded (others kept as they are), `+` left alone.
fn percent_decode(s: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while let Some(&b) = s.get(i) {
        if b == b'%' {
            if let (Some(h), Some(l)) = (
                s.get(i + 1).and_then(|&c| (c as char).to_digit(16)),
                s.get(i + 2).and_then(|&c| (c as char).to_digit(16)),
            ) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
}

/// The host a whitespace-separated chunk of text links to, when it is a URL (`http://`,
/// `https://`, `www.`) or an e-mail address; surrounding punctuation is ignored.
fn link_host(chunk: &str) -> Option<&str> {
    let c = chunk.trim_matches(|c: char| !c.is_alphanumeric());
    if c.len() < 4 {
        return None;
    }
    let lower3 = |p: &str| c.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p));
    let rest = if lower3("http://") {
        c.get(7..)
    } else if lower3("https://") {
        c.get(8..)
    } else if lower3("www.") {
        Some(c)
    } else if let Some((user, domain)) = c.split_once('@') {
        let ok = !user.is_empty()
            && domain.contains('.')
            && domain
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
        return ok.then_some(domain);
    } else {
        None
    }?;
    let end = rest.find(['/', '?', '#', ':']).unwrap_or(rest.len());
    let host = rest.get(..end)?;
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = host
        .get(..4)
        .filter(|h| h.eq_ignore_ascii_case("www."))
        .map_or(host, |_| host.get(4..).unwrap_or(""));
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests;
