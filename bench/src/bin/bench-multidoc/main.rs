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
    /// Where --train writes the model (default: the multidoc crate's model_default.rs)
    #[arg(long)]
    model_out: Option<PathBuf>,
    /// Print one page's blocks with their weights and labels (its id or path), then exit
    #[arg(long)]
    page: Option<String>,
    /// Print each set's worst pages
    #[arg(long)]
    worst: Option<usize>,
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

/// Fold 0 or 1 of a page (by a hash of its id), for the two-fold check of the training.
fn fold(p: &Page) -> usize {
    let h = p.id.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
    (h >> 7) as usize % 2
}

/// Samples of AEB and WCXB with each set weighing the same, whatever its number of pages.
fn balanced(aeb: &[&Page], wcxb: &[&Page]) -> Vec<train::Sample> {
    let a = train::samples(aeb);
    let w = train::samples(wcxb);
    let scale = if a.is_empty() || w.is_empty() {
        1.0
    } else {
        w.len() as f32 / a.len() as f32
    };
    a.into_iter()
        .map(|mut s| {
            s.weights.iter_mut().for_each(|x| *x *= scale);
            s
        })
        .chain(w)
        .collect()
}

/// Trains on AEB and WCXB; prints each set's figure for a model trained on one set only, on
/// both (two-fold: each half of AEB and WCXB scored by the model trained on the other half),
/// and on all of both, which it writes as the default model.
fn train_and_check(args: &Args, sets: &[(&str, Vec<&Page>)]) -> anyhow::Result<()> {
    let (aeb, wcxb) = (&sets[0].1, &sets[1].1);
    fn half<'a>(v: &[&'a Page], f: usize) -> Vec<&'a Page> {
        v.iter().copied().filter(|p| fold(p) == f).collect()
    }
    let on_aeb = train::train(&balanced(aeb, &[]));
    let on_wcxb = train::train(&balanced(&[], wcxb));
    let folds: Vec<Model> = (0..2)
        .map(|f| train::train(&balanced(&half(aeb, f), &half(wcxb, f))))
        .collect();
    let on_both = train::train(&balanced(aeb, wcxb));
    println!(
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "set", "current", "AEB only", "WCXB only", "2-fold", "both"
    );
    let cur = quality(sets, &Model::DEFAULT);
    let qa = quality(sets, &on_aeb);
    let qw = quality(sets, &on_wcxb);
    let qb = quality(sets, &on_both);
    for (i, (name, pages)) in sets.iter().enumerate() {
        // Each page scored by the model that did not see it (sets other than AEB and WCXB
        // were seen by neither: the mean of the two).
        let texts: Vec<String> = pages
            .iter()
            .map(|p| extract(p, &folds[1 - fold(p)]))
            .collect();
        let cv = if i < 2 {
            score(pages, &texts)
        } else {
            (score(pages, &pages.iter().map(|p| extract(p, &folds[0])).collect::<Vec<_>>())
                + score(pages, &pages.iter().map(|p| extract(p, &folds[1])).collect::<Vec<_>>()))
                / 2.0
        };
        println!(
            "{name:<22} {:>9.4} {:>9.4} {:>9.4} {cv:>9.4} {:>9.4}",
            cur[i], qa[i], qw[i], qb[i]
        );
    }
    let path = args.model_out.clone().unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../multidoc/src/segment/model_default.rs")
    });
    std::fs::write(&path, train::source(&on_both, "AEB and WCXB dev pages"))
        .with_context(|| path.display().to_string())?;
    println!("wrote {}", path.display());
    Ok(())
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
    fn r(v: &[Page]) -> Vec<&Page> {
        v.iter().collect()
    }
    let sets = [
        ("AEB shingle-F1", r(&aeb)),
        ("WCXB dev word-F1", r(&wcxb)),
        ("DAnIEL-RU word-F1", r(&ru)),
        ("Big9 word-F1", r(&big9)),
        ("Chaos word-F1", r(&chaos)),
    ];
    if args.train {
        return train_and_check(&args, &sets);
    }
    if let Some(id) = &args.page {
        let page = sets.iter().flat_map(|(_, p)| p).find(|p| &p.id == id).context("no such page")?;
        let s = train::samples(&[page]);
        let d = decode(&page.html, None, DEFAULT_MAX_BYTES)?;
        let (seg, _) = segment_with_features(&d.text, &Model::DEFAULT);
        for (b, l) in seg.blocks.iter().zip(&s[0].labels) {
            let t: String = b.text.chars().take(100).collect();
            println!("{:.2} {l:.2} {:>5} {:<30} {}", b.weight, b.chars, b.path, t.replace('\n', " "));
        }
        return Ok(());
    }
    if let Some(n) = args.worst {
        for (name, pages) in &sets {
            let mut f: Vec<(f64, &str)> = pages
                .iter()
                .map(|p| (metrics::word_prf(&extract(p, &Model::DEFAULT), &p.gold), p.id.as_str()))
                .map(|((pr, rc, f1), id)| {
                    println!("{name}\t{id}\t{pr:.3}\t{rc:.3}\t{f1:.3}");
                    (f1, id)
                })
                .collect();
            f.sort_by(|a, b| a.0.total_cmp(&b.0));
            let _ = n;
        }
        return Ok(());
    }
    let q = quality(&sets, &Model::DEFAULT);
    for ((name, pages), q) in sets.iter().zip(q) {
        println!("{name:<22} {q:.4}  ({} pages)", pages.len());
    }
    Ok(())
}
