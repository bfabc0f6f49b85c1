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
    let rounds = if smoke { 1 } else { 3 };
    // Decoding and analysis alone: the limits the binders come on top of.
    let start = Instant::now();
    for _ in 0..rounds {
        for p in &raw {
            let _ = decode(&p.html, None, DEFAULT_MAX_BYTES);
        }
    }
    let decode_ms = per_page_ms(start, raw.len() * rounds);
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
    let mut page = PageText::new();
    let mut finder = Finder::new();
    let blocks = |a: &Analysis| -> Vec<(String, f32)> {
        a.blocks
            .iter()
            .zip(&a.weights)
            .map(|(b, &w)| (b.text.clone(), w))
            .collect()
    };
    let texts: Vec<Vec<(String, f32)>> = analyses.iter().map(blocks).collect();
    // The page's words alone (tokenizing and stemming): part of what follows.
    let start = Instant::now();
    for _ in 0..rounds {
        for t in &texts {
            page.read(&mut tokenizer, t.iter().map(|(s, w)| (s.as_str(), *w)));
        }
    }
    let read_ms = per_page_ms(start, texts.len() * rounds);
    // The binders, the collector and the tragic filter.
    let (mut phrases, mut tragic_pages) = (0usize, 0usize);
    let start = Instant::now();
    for _ in 0..rounds {
        for t in &texts {
            page.read(&mut tokenizer, t.iter().map(|(s, w)| (s.as_str(), *w)));
            let v = tragic::judge(&lexicon, &page, &mut finder, &tparams);
            let kept = collected(&dict, &page, &[], &params, &mut finder);
            phrases += if v.tragic { 0 } else { kept.len() };
            tragic_pages += usize::from(v.tragic);
        }
    }
    let bind_ms = per_page_ms(start, texts.len() * rounds);
    // The limit: a plain Aho-Corasick scan of the same text, lower-cased, for the surface forms.
    let surface: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .collect();
    let start = Instant::now();
    let ac = AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .build(&surface)?;
    let ac_build_s = start.elapsed().as_secs_f64();
    let lowered: Vec<Vec<String>> = texts
        .iter()
        .map(|t| t.iter().map(|(s, _)| s.to_lowercase()).collect())
        .collect();
    let mut ac_hits = 0usize;
    let start = Instant::now();
    for _ in 0..rounds {
        for page in &lowered {
            for b in page {
                ac_hits += ac.find_overlapping_iter(b.as_str()).count();
            }
        }
    }
    let ac_ms = per_page_ms(start, lowered.len() * rounds);
    let whole = 1000.0 / (analyze_ms + bind_ms);
    let r = pages.len() * rounds;
    println!(
        "speed: {} pages ({} AEB/WCXB), {} direct phrases loaded in {load_s:.2} s, {:.1} MB",
        pages.len(),
        raw.len(),
        dict.len(),
        dict.heap_bytes() as f64 / 1e6
    );
    println!(
        "speed: binders+collector+tragic {bind_ms:.3} ms/page, of which the page's words (stems) {read_ms:.3} ({:.0} pages/s; {:.1} phrases kept/page, {:.1} % tragic)",
        1000.0 / bind_ms,
        phrases as f64 / r as f64,
        100.0 * tragic_pages as f64 / r as f64
    );
    println!(
        "speed: limit: Aho-Corasick scan of the same text {ac_ms:.3} ms/page ({:.1} matches/page; built in {ac_build_s:.2} s, {:.1} MB)",
        ac_hits as f64 / r as f64,
        ac.memory_usage() as f64 / 1e6
    );
    println!(
        "speed: decode alone {decode_ms:.3} ms/page, MultiDoc analysis alone {analyze_ms:.3} ms/page; whole path (analysis + bindings) {whole:.0} pages/s"
    );
    content(&dict, &params, &pages, &mut tokenizer)
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
