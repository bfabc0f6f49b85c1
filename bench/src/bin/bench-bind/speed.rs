//! Speed and content: a direct dictionary of 200 000 phrases (synthetic: n-grams of the pages'
//! own words, so that some match, and random combinations of wordfreq's frequent words, with
//! random advertiser counts) bound to the AEB and WCXB pages. Per page: the binders, the
//! collector and the tragic filter (ms), next to a plain Aho-Corasick scan of the same blocks'
//! text (the limit), decoding alone and MultiDoc's analysis alone; the whole page path in
//! pages/s; the dictionary's memory. Then, on the same pages with their ground-truth main text,
//! the share of bound phrases that matched in a main-text block, with the templater's weights
//! and with every block weighing 1.

use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

use aho_corasick::{AhoCorasick, MatchKind};
use anyhow::Context;
use focuser_bind::binder::Finder;
use focuser_bind::binding::{collected, TypeParams};
use focuser_bind::page::PageText;
use focuser_bind::tragic::{self, Lexicon};
use focuser_bind::{Dictionary, Kind};
use focuser_multidoc::analyze::{analyze, Analysis};
use focuser_multidoc::decode::{decode, DEFAULT_MAX_BYTES};
use focuser_multidoc::tokenize::Tokenizer;

use crate::data::{self, read};

/// Phrases in the benchmark's direct dictionary.
const PHRASES: usize = 200_000;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 2)
        .map(str::to_lowercase)
        .collect()
}

/// The dictionary file's text: a quarter page n-grams, the rest random frequent words.
fn dictionary_text(
    root: &Path,
    pages: &[Analysis],
    n: usize,
    tokenizer: &mut Tokenizer,
) -> anyhow::Result<String> {
    let mut vocab: Vec<String> = Vec::new();
    for lang in ["en", "ru"] {
        let rel = format!("phrases/wordfreq/wordfreq_top100k_{lang}.tsv");
        let text = String::from_utf8(read(root, &rel)?).context(rel)?;
        vocab.extend(
            text.lines()
                .skip(1)
                .filter_map(|l| l.split('\t').next())
                .filter(|w| w.chars().count() > 2 && w.chars().all(char::is_alphabetic))
                .take(30_000)
                .map(str::to_owned),
        );
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut seen: HashSet<String> = HashSet::new();
    let page_words: Vec<Vec<String>> = pages.iter().map(|a| words(&a.main_text)).collect();
    let mut out = String::from("#focuser-dictionary 1 kind=direct\n");
    let mut tries = 0;
    while seen.len() < n && tries < n * 20 {
        tries += 1;
        let len = 1 + rng.below(3);
        let phrase: Vec<&str> = if seen.len() < n / 4 {
            let w = &page_words[rng.below(page_words.len())];
            if w.len() < len {
                continue;
            }
            let at = rng.below(w.len() - len + 1);
            w[at..at + len].iter().map(String::as_str).collect()
        } else {
            (0..len)
                .map(|_| vocab[rng.below(vocab.len())].as_str())
                .collect()
        };
        let phrase = phrase.join(" ");
        // As the dictionary will see it: no stop words only, no link, no duplicate stems.
        let (mut stems, mut link, mut count) = (String::new(), false, 0);
        tokenizer.stems(&phrase, |w| {
            link |= w.link;
            count += 1;
            stems.push_str(w.text);
            stems.push(' ');
        });
        if !link && (1..=len).contains(&count) && seen.insert(stems) {
            out.push_str(&format!("{phrase}\t{}\n", 1 + rng.below(50)));
        }
    }
    Ok(out)
}

fn per_page_ms(start: Instant, pages: usize) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0 / pages.max(1) as f64
}

pub fn run(root: &Path, smoke: bool) -> anyhow::Result<()> {
    let limit = if smoke { 10 } else { usize::MAX };
    let mut raw: Vec<data::Page> = data::aeb(root, limit)?;
    raw.extend(data::wcxb(root, if smoke { 10 } else { 400 })?);
    let decode_rounds = if smoke { 1 } else { 3 };
    // Decoding and analysis alone: the limits the binders come on top of.
    let start = Instant::now();
    for _ in 0..decode_rounds {
        for p in &raw {
            let _ = decode(&p.html, None, DEFAULT_MAX_BYTES);
        }
    }
    let decode_ms = per_page_ms(start, raw.len() * decode_rounds);
    let start = Instant::now();
    let mut pages: Vec<(Analysis, &data::Page)> = Vec::new();
    for p in &raw {
        if let Ok(a) = analyze(&p.html, None, DEFAULT_MAX_BYTES, None) {
            pages.push((a, p));
        }
    }
    let analyze_ms = per_page_ms(start, raw.len());
    let analyses: Vec<Analysis> = pages.iter().map(|(a, _)| a.clone()).collect();
    let n = if smoke { 20_000 } else { PHRASES };
    let mut tokenizer = Tokenizer::default();
    let text = dictionary_text(root, &analyses, n, &mut tokenizer)?;
    let start = Instant::now();
    let dict = Dictionary::parse(
        "bench.tsv",
        text.as_bytes(),
        Some(Kind::Direct),
        None,
        &mut tokenizer,
    )?;
    let load_s = start.elapsed().as_secs_f64();
    let lexicon = Lexicon::builtin(&mut tokenizer)?;
    let params = TypeParams::default_for(Kind::Direct);
    let tparams = tragic::Params::default();
    let blocks = |a: &Analysis| -> Vec<(String, f32)> {
        a.blocks
            .iter()
            .zip(&a.weights)
            .map(|(b, &w)| (b.text.clone(), w))
            .collect()
    };
    let texts: Vec<Vec<(String, f32)>> = analyses.iter().map(blocks).collect();
    let read: Vec<PageText> = texts
        .iter()
        .map(|t| {
            let mut page = PageText::new();
            page.read(&mut tokenizer, t.iter().map(|(s, w)| (s.as_str(), *w)));
            page
        })
        .collect();
    let mut limits = Limits::build(&text, &dict, &texts, &read)?;
    let mut rounds: Vec<Round> = Vec::new();
    let (mut phrases, mut tragic_pages) = (0usize, 0usize);
    for _ in 0..if smoke { 1 } else { 7 } {
        let mut r = Round::default();
        // The page's words (tokenizing and stemming): the binder's input.
        let mut page = PageText::new();
        let start = Instant::now();
        for t in &texts {
            page.read(&mut tokenizer, t.iter().map(|(s, w)| (s.as_str(), *w)));
        }
        r.read = per_page_ms(start, texts.len());
        // The tragic filter, the binder and the collector on those words.
        let mut finder = Finder::new();
        (phrases, tragic_pages) = (0, 0);
        let start = Instant::now();
        for page in &read {
            let t = Instant::now();
            let v = tragic::judge(&lexicon, page, &mut finder, &tparams);
            r.tragic += t.elapsed().as_secs_f64();
            let kept = collected(&dict, page, &[], &params, &mut finder);
            phrases += if v.tragic { 0 } else { kept.len() };
            tragic_pages += usize::from(v.tragic);
        }
        r.bind = per_page_ms(start, read.len());
        r.tragic *= 1000.0 / read.len().max(1) as f64;
        (r.ac_stems, r.ac_text) = limits.scan();
        rounds.push(r);
    }
    let n = pages.len().max(1) as f64;
    let bind = stats(&rounds, |r| r.bind);
    let read_ms = stats(&rounds, |r| r.read);
    let whole = 1000.0 / (analyze_ms + bind.1 + read_ms.1);
    println!(
        "speed: {} pages ({} AEB/WCXB), {} direct phrases loaded in {load_s:.2} s, {:.1} MB; {} rounds, best / median",
        pages.len(),
        raw.len(),
        dict.len(),
        dict.heap_bytes() as f64 / 1e6,
        rounds.len()
    );
    println!(
        "speed: bindings on the page's stems (tragic filter + direct binder + collector): {:.3} / {:.3} ms/page, of which the tragic filter {:.3}; {:.1} phrases kept/page, {:.1} % tragic",
        bind.0,
        bind.1,
        stats(&rounds, |r| r.tragic).1,
        phrases as f64 / n,
        100.0 * tragic_pages as f64 / n
    );
    let ac_stems = stats(&rounds, |r| r.ac_stems);
    println!(
        "speed: limit on the same input: Aho-Corasick over the page's stems for the phrases' stems {:.3} / {:.3} ms/page ({:.1} matches/page; {:.1} MB); bindings / limit {:.2} (median of the rounds' ratios)",
        ac_stems.0,
        ac_stems.1,
        limits.stem_matches as f64 / n,
        limits.stems.memory_usage() as f64 / 1e6,
        stats(&rounds, |r| r.bind / r.ac_stems).1
    );
    println!(
        "speed: reading the page's words (tokenizer stems) {:.3} / {:.3} ms/page; read + bindings {:.3} ms/page (median)",
        read_ms.0,
        read_ms.1,
        stats(&rounds, |r| r.read + r.bind).1
    );
    let ac_text = stats(&rounds, |r| r.ac_text);
    println!(
        "speed: Aho-Corasick over the blocks' lower-cased text for the phrases' surface forms {:.3} / {:.3} ms/page ({:.1} matches/page; built in {:.2} s, {:.1} MB); read + bindings / it {:.2}",
        ac_text.0,
        ac_text.1,
        limits.text_matches as f64 / n,
        limits.text_build_s,
        limits.text.memory_usage() as f64 / 1e6,
        stats(&rounds, |r| (r.read + r.bind) / r.ac_text).1
    );
    println!(
        "speed: decode alone {decode_ms:.3} ms/page, MultiDoc analysis alone {analyze_ms:.3} ms/page; whole path (analysis + reading + bindings) {whole:.0} pages/s"
    );
    content(&dict, &params, &pages, &mut tokenizer)
}

/// One round's figures, ms a page.
#[derive(Default)]
struct Round {
    read: f64,
    bind: f64,
    tragic: f64,
    ac_stems: f64,
    ac_text: f64,
}

/// The best and the median of a figure over the rounds.
fn stats(rounds: &[Round], f: impl Fn(&Round) -> f64) -> (f64, f64) {
    let mut v: Vec<f64> = rounds.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    (
        v.first().copied().unwrap_or(0.0),
        v.get(v.len() / 2).copied().unwrap_or(0.0),
    )
}

/// Plain Aho-Corasick scans, the limits: over the page's stems (what the binder reads: each
/// phrase's stems and the page's, space-separated, with a `|` where a phrase cannot run on),
/// and over the blocks' lower-cased text for the phrases as the file writes them.
struct Limits {
    stems: AhoCorasick,
    stem_pages: Vec<String>,
    stem_matches: usize,
    text: AhoCorasick,
    text_pages: Vec<Vec<String>>,
    text_matches: usize,
    text_build_s: f64,
}

impl Limits {
    fn build(
        file: &str,
        dict: &Dictionary,
        texts: &[Vec<(String, f32)>],
        read: &[PageText],
    ) -> anyhow::Result<Limits> {
        let stem_phrases: Vec<String> = (0..dict.len() as u32)
            .map(|p| format!(" {} ", dict.stems(p).collect::<Vec<_>>().join(" ")))
            .collect();
        let stems = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(&stem_phrases)?;
        let stem_pages = read
            .iter()
            .map(|page| {
                let mut s = String::from(" ");
                for (k, w) in page.words().iter().enumerate() {
                    if k > 0 && !w.joined {
                        s.push_str("| ");
                    }
                    s.push_str(page.stem(w));
                    s.push(' ');
                }
                s
            })
            .collect();
        let surface: Vec<&str> = file
            .lines()
            .skip(1)
            .filter_map(|l| l.split('\t').next())
            .collect();
        let start = Instant::now();
        let text = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(&surface)?;
        let text_build_s = start.elapsed().as_secs_f64();
        let text_pages = texts
            .iter()
            .map(|t| t.iter().map(|(s, _)| s.to_lowercase()).collect())
            .collect();
        Ok(Limits {
            stems,
            stem_pages,
            stem_matches: 0,
            text,
            text_pages,
            text_matches: 0,
            text_build_s,
        })
        .map(|mut l| {
            l.scan();
            l
        })
    }

    /// One scan of every page each way: ms a page (over the stems, over the text).
    fn scan(&mut self) -> (f64, f64) {
        let start = Instant::now();
        self.stem_matches = self
            .stem_pages
            .iter()
            .map(|p| self.stems.find_overlapping_iter(p.as_str()).count())
            .sum();
        let stems = per_page_ms(start, self.stem_pages.len());
        let start = Instant::now();
        self.text_matches = self
            .text_pages
            .iter()
            .flatten()
            .map(|b| self.text.find_overlapping_iter(b.as_str()).count())
            .sum();
        (stems, per_page_ms(start, self.text_pages.len()))
    }
}

fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether a block is main text: most of its words are in the ground truth.
fn main_blocks(a: &Analysis, gold: &str) -> Vec<bool> {
    let gold: HashSet<String> = tokens(gold).into_iter().collect();
    a.blocks
        .iter()
        .map(|b| {
            let t = tokens(&b.text);
            !t.is_empty() && t.iter().filter(|w| gold.contains(*w)).count() * 10 >= t.len() * 8
        })
        .collect()
}

/// The share of bound phrases that matched in a main-text block, with the templater's weights
/// and with every block weighing 1.
fn content(
    dict: &Dictionary,
    params: &TypeParams,
    pages: &[(Analysis, &data::Page)],
    tokenizer: &mut Tokenizer,
) -> anyhow::Result<()> {
    let mut page = PageText::new();
    let mut finder = Finder::new();
    for weighted in [true, false] {
        let (mut main, mut all) = (0usize, 0usize);
        for (a, p) in pages {
            let is_main = main_blocks(a, &p.gold);
            page.read(
                tokenizer,
                a.blocks
                    .iter()
                    .zip(&a.weights)
                    .map(|(b, &w)| (b.text.as_str(), if weighted { w } else { 1.0 })),
            );
            for c in collected(dict, &page, &[], params, &mut finder) {
                all += 1;
                main += usize::from(
                    c.found
                        .blocks
                        .iter()
                        .any(|&b| is_main.get(b as usize).copied().unwrap_or(false)),
                );
            }
        }
        println!(
            "content: {} bound phrases matched in the main text: {:.3} of {all}",
            if weighted {
                "templater weights:"
            } else {
                "every block 1:    "
            },
            main as f64 / all.max(1) as f64
        );
    }
    Ok(())
}
