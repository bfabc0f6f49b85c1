//! bench-multidoc: page analysis (focuser-multidoc) on the development sets of shared/data —
//! extraction quality page-only (AEB shingle-F1, WCXB dev word-F1, DAnIEL-RU word-F1), the
//! templater on the multi-page sites, speed and memory — next to trafilatura run in the same
//! benchmark and to a parse-only pass. See bench/README.md.

mod data;
mod metrics;
mod train;

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use focuser_multidoc::decode::{decode, DEFAULT_MAX_BYTES};
use focuser_multidoc::segment::{main_text, segment_with_features, Model, MAIN_THRESHOLD};

use data::Page;

#[derive(Parser)]
struct Args {
    /// The development data (shared/data, gzipped, or a copy unpacked by its unpack.sh)
    #[arg(long, default_value = "../shared/data")]
    data: PathBuf,
    /// Where temporary files go (the venv for trafilatura, the evaluate scripts' inputs)
    #[arg(long, default_value = "/var/tmp")]
    work: PathBuf,
    /// A few pages of each set, for CI
    #[arg(long)]
    smoke: bool,
    /// Train the segmenter's model on AEB and WCXB, print the cross-set check, and write
    /// multidoc/src/segment/model_default.rs
    #[arg(long)]
    train: bool,
    /// Only our quality figures (no peers, no speed)
    #[arg(long)]
    quality: bool,
}

/// Our page-only main text of a page.
fn extract(page: &Page, model: &Model) -> String {
    match decode(&page.html, None, DEFAULT_MAX_BYTES) {
        Ok(d) => {
            let (seg, _) = segment_with_features(&d.text, model);
            main_text(seg.blocks.iter().map(|b| (b, b.weight)), MAIN_THRESHOLD)
        }
        Err(_) => String::new(),
    }
}

/// The set's metric over `texts` (AEB: shingle-F1, others: mean word-F1).
fn score(pages: &[&Page], texts: &[String]) -> f64 {
    if pages.first().is_some_and(|p| p.set == "aeb") {
        let c: Vec<_> = pages
            .iter()
            .zip(texts)
            .map(|(p, t)| metrics::shingle_counts(t, &p.gold))
            .collect();
        metrics::shingle_f1(&c)
    } else {
        let f: f64 = pages
            .iter()
            .zip(texts)
            .map(|(p, t)| metrics::word_prf(t, &p.gold).2)
            .sum();
        f / pages.len().max(1) as f64
    }
}

fn quality(sets: &[(&str, Vec<&Page>)], model: &Model) -> Vec<f64> {
    sets.iter()
        .map(|(_, pages)| {
            let texts: Vec<String> = pages.iter().map(|p| extract(p, model)).collect();
            score(pages, &texts)
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    data::check(&args.data)?;
    let limit = if args.smoke { 12 } else { usize::MAX };
    let aeb = data::aeb(&args.data, limit)?;
    let wcxb = data::wcxb(&args.data, limit)?;
    let ru = data::sites(&args.data, "daniel", Some("ru"), limit)?;
    let big9 = data::sites(&args.data, "big9", None, limit)?;
    let chaos = data::sites(&args.data, "chaos", None, limit)?;
    let r = |v: &[Page]| v.iter().collect::<Vec<_>>();
    let sets = [
        ("AEB shingle-F1", r(&aeb)),
        ("WCXB dev word-F1", r(&wcxb)),
        ("DAnIEL-RU word-F1", r(&ru)),
        ("Big9 word-F1", r(&big9)),
        ("Chaos word-F1", r(&chaos)),
    ];
    if args.train {
        let a = train::samples(&sets[0].1);
        let w = train::samples(&sets[1].1);
        let on_aeb = train::train(&a);
        let on_wcxb = train::train(&w);
        let both: Vec<train::Sample> = a.into_iter().chain(w).collect();
        let on_both = train::train(&both);
        println!("{:<22} {:>10} {:>10} {:>10} {:>10}", "set", "current", "AEB only", "WCXB only", "both");
        let cur = quality(&sets, &Model::DEFAULT);
        let qa = quality(&sets, &on_aeb);
        let qw = quality(&sets, &on_wcxb);
        let qb = quality(&sets, &on_both);
        for (i, (name, _)) in sets.iter().enumerate() {
            println!("{name:<22} {:>10.4} {:>10.4} {:>10.4} {:>10.4}", cur[i], qa[i], qw[i], qb[i]);
        }
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../multidoc/src/segment/model_default.rs");
        std::fs::write(&path, train::source(&on_both, "AEB and WCXB dev pages"))
            .with_context(|| path.display().to_string())?;
        println!("wrote {}", path.display());
        return Ok(());
    }
    let q = quality(&sets, &Model::DEFAULT);
    for ((name, pages), q) in sets.iter().zip(q) {
        println!("{name:<22} {q:.4}  ({} pages)", pages.len());
    }
    Ok(())
}
