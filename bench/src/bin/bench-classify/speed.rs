//! The classifier's speed on a ~700-node catalog: the IAB Content Taxonomy 3.1 (704 nodes), each
//! node a class, trained on 20 Newsgroups documents dealt to the nodes in turn (every feature
//! then has postings in many classes: more work per word than a real model's); classified: the
//! WCXB dev pages' main text with their title and URL (~9.6 KB of text a page).

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use focuser_multidoc::classify::{train, Catalog, Corpus};
use focuser_multidoc::tokenize::{Features, Tokenizer};

use crate::Args;

const IAB: &str = include_str!("../../../../multidoc/catalog/iab-content-taxonomy-3.1.tsv");

/// (url, title + main text) of the WCXB dev pages.
fn pages(data: &Path, limit: usize) -> anyhow::Result<Vec<(String, String)>> {
    let dir = data.join("extraction/wcxb_dev/dev/ground-truth");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .with_context(|| dir.display().to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for p in names.into_iter().take(limit) {
        let mut s = String::new();
        let f = std::fs::File::open(&p)?;
        if p.extension().is_some_and(|e| e == "gz") {
            flate2::read::GzDecoder::new(f).read_to_string(&mut s)?;
        } else {
            std::io::BufReader::new(f).read_to_string(&mut s)?;
        }
        let v: serde_json::Value = serde_json::from_str(&s)?;
        let gt = &v["ground_truth"];
        let text = format!(
            "{}\n{}",
            gt["title"].as_str().unwrap_or(""),
            gt["main_content"].as_str().unwrap_or("")
        );
        out.push((v["url"].as_str().unwrap_or("").to_owned(), text));
    }
    Ok(out)
}

pub fn run(data: &Path, args: &Args) -> anyhow::Result<()> {
    let catalog = Catalog::parse(IAB)?;
    let news = crate::sets::newsgroups(data)?;
    let docs = if args.smoke { 2_000 } else { news.train.len() };
    let options = args.options();
    let params = args.params();
    let mut t = Tokenizer::new(options);
    let mut f = Features::default();
    let mut corpus = Corpus::new();
    for (i, item) in news.train.iter().take(docs).enumerate() {
        t.page(None, [(item.text.as_str(), 1.0)], &mut f);
        corpus.add(&[(i % catalog.len()) as u32], &f);
    }
    let t0 = Instant::now();
    let model = train(&catalog, &corpus, |_| true, &params, options)?;
    let train_s = t0.elapsed().as_secs_f64();
    let pages = pages(data, if args.smoke { 50 } else { usize::MAX })?;
    let bytes: usize = pages.iter().map(|p| p.1.len()).sum();

    // Tokenize and classify separately, each over every page, the best of five rounds.
    let mut all = Vec::with_capacity(pages.len());
    let mut tok_s = f64::MAX;
    for _ in 0..5 {
        all.clear();
        let t1 = Instant::now();
        for (url, text) in &pages {
            t.page(Some(url), [(text.as_str(), 1.0)], &mut f);
            all.push(f.clone());
        }
        tok_s = tok_s.min(t1.elapsed().as_secs_f64());
    }
    let mut cls_s = f64::MAX;
    let mut depth = 0usize;
    for _ in 0..5 {
        depth = 0;
        let t2 = Instant::now();
        for f in &all {
            depth += model.classify(f).path.len();
        }
        cls_s = cls_s.min(t2.elapsed().as_secs_f64());
    }
    let n = pages.len().max(1) as f64;
    let words: usize = all.iter().map(|f| f.words.len() + f.url.len()).sum();
    println!(
        "speed: {} catalog nodes, {} classes, model of {} features and {} postings trained on {docs} documents in {train_s:.2} s",
        catalog.len(),
        model.classes().count(),
        model.feature_count(),
        model.posting_count()
    );
    println!(
        "speed: {} pages, {:.1} KB of text and {:.0} distinct features a page, mean path depth {:.2}",
        pages.len(),
        bytes as f64 / n / 1000.0,
        words as f64 / n,
        depth as f64 / n
    );
    println!(
        "speed: tokenize {:.4} ms a page ({:.1} MB/s)",
        tok_s / n * 1e3,
        bytes as f64 / tok_s / 1e6
    );
    println!("speed: classify {:.4} ms a page", cls_s / n * 1e3);
    Ok(())
}
