//! bench-multidoc: page analysis (focuser-multidoc) on the development sets of shared/data —
//! extraction quality page-only (AEB shingle-F1, WCXB dev word-F1, DAnIEL-RU word-F1), the
//! templater on the multi-page sites, speed and memory — next to trafilatura run in the same
//! benchmark and to a parse-only pass. See bench/README.md.

mod data;
mod metrics;
mod peers;
mod sites;
mod speed;
mod train;

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use focuser_multidoc::decode::{decode, DEFAULT_MAX_BYTES};
use focuser_multidoc::segment::{
    main_text, segment_with, segment_with_features, Model, MAIN_THRESHOLD,
};

use data::Page;

#[derive(Parser)]
struct Args {
    /// The development data (shared/data, gzipped, or a copy unpacked by its unpack.sh)
    #[arg(long, default_value = "../shared/data")]
    data: PathBuf,
    /// Where temporary files go (the venv for trafilatura, the evaluate scripts' inputs)
    #[arg(long, default_value = "/var/tmp")]
    work: PathBuf,
    /// A few pages of each set, no trafilatura (no venv), one timing round: for CI
    #[arg(long)]
    smoke: bool,
    /// Leave trafilatura out (it needs a venv made with pip)
    #[arg(long)]
    no_peers: bool,
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
    /// Print each page's word precision, recall and F1 (tab-separated), then exit
    #[arg(long)]
    per_page: bool,
    /// Only the speed and memory figures
    #[arg(long)]
    speed: bool,
    /// Only our quality figures (no peers, no speed)
    #[arg(long)]
    quality: bool,
}

/// Our page-only main text of a page.
fn extract(page: &Page, model: &Model) -> String {
    match decode(&page.html, None, DEFAULT_MAX_BYTES) {
        Ok(d) => {
            let seg = segment_with(&d.text, model);
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
    let h = p.id.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    (h >> 7) as usize % 2
}

/// How much more an AEB page weighs than a WCXB page in training, beyond evening out the
/// numbers of pages: news articles are what most sets here (and most of a crawl) are, and
/// with 2 the held-out halves of AEB, DAnIEL-RU and Big9 scored best (docs/multidoc.md).
const AEB_WEIGHT: f32 = 2.0;

/// Samples of AEB and WCXB, AEB weighing [`AEB_WEIGHT`] times as much as WCXB in all.
fn balanced(aeb: &[&Page], wcxb: &[&Page]) -> Vec<train::Sample> {
    let a = train::samples(aeb);
    let w = train::samples(wcxb);
    let scale = if a.is_empty() || w.is_empty() {
        1.0
    } else {
        w.len() as f32 / a.len() as f32 * AEB_WEIGHT
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
            (score(
                pages,
                &pages
                    .iter()
                    .map(|p| extract(p, &folds[0]))
                    .collect::<Vec<_>>(),
            ) + score(
                pages,
                &pages
                    .iter()
                    .map(|p| extract(p, &folds[1]))
                    .collect::<Vec<_>>(),
            )) / 2.0
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
    if let Err(e) = data::check(&args.data) {
        // Not a failure: a clone of the repository has no data (see bench/README.md).
        println!("bench-multidoc: {e}");
        return Ok(());
    }
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
        return show_page(&sets, id);
    }
    if args.per_page {
        for (name, pages) in &sets {
            for p in pages {
                let (pr, rc, f1) = metrics::word_prf(&extract(p, &Model::DEFAULT), &p.gold);
                println!("{name}\t{}\t{pr:.3}\t{rc:.3}\t{f1:.3}", p.id);
            }
        }
        return Ok(());
    }
    if args.speed {
        let pages: Vec<&Page> = sets[0].1.iter().chain(&sets[1].1).copied().collect();
        speed_and_memory(&pages, if args.smoke { 1 } else { 3 }, &[]);
        return Ok(());
    }
    if args.quality {
        for ((name, pages), q) in sets.iter().zip(quality(&sets, &Model::DEFAULT)) {
            println!("{name:<22} {q:.4}  ({} pages)", pages.len());
        }
        return Ok(());
    }
    benchmark(&args, &sets)?;
    Ok(())
}

/// Prints a page's blocks: weight, label (share of its trigrams in the reference), characters,
/// tag path, text.
fn show_page(sets: &[(&str, Vec<&Page>)], id: &str) -> anyhow::Result<()> {
    let page = sets
        .iter()
        .flat_map(|(_, p)| p)
        .find(|p| p.id == id)
        .context("no such page")?;
    let s = train::samples(&[page]);
    let d = decode(&page.html, None, DEFAULT_MAX_BYTES)?;
    let (seg, _) = segment_with_features(&d.text, &Model::DEFAULT);
    for (b, l) in seg.blocks.iter().zip(&s[0].labels) {
        let t: String = b.text.chars().take(100).collect();
        println!(
            "{:.2} {l:.2} {:>5} {:<30} {}",
            b.weight,
            b.chars,
            b.path,
            t.replace('\n', " ")
        );
    }
    Ok(())
}

/// Targets of issue 25, per set (page-only).
const TARGETS: [&str; 5] = [">= 0.96", ">= 0.86", ">= 0.80", "", ""];

fn benchmark(args: &Args, sets: &[(&str, Vec<&Page>)]) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.work)?;
    let tmp = tempfile::Builder::new()
        .prefix("bench-multidoc-")
        .tempdir_in(&args.work)?;
    let peers = !(args.smoke || args.no_peers);
    let python = if peers {
        peers::venv(&args.work)?
    } else {
        PathBuf::from("python3")
    };
    println!("== extraction quality, page-only (our metric code; the sets' own scripts below)");
    println!(
        "{:<22} {:>6} {:>10} {:>12} {:>13} {:>9}",
        "set", "pages", "focuser", "trafilatura", "dom_smoothie", "target"
    );
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let mut smoothie = Vec::new();
    let (mut traf_s, mut smoothie_s) = (0.0, 0.0);
    for (i, (name, pages)) in sets.iter().enumerate() {
        let texts: Vec<String> = pages.iter().map(|p| extract(p, &Model::DEFAULT)).collect();
        let q = score(pages, &texts);
        let (t, tq) = if peers {
            let (t, s) = peers::trafilatura(&python, pages, tmp.path())?;
            if i < 2 {
                traf_s += s;
            }
            let tq = score(pages, &t);
            (t, format!("{tq:.4}"))
        } else {
            (Vec::new(), "-".to_owned())
        };
        let (d, s) = peers::dom_smoothie(pages);
        if i < 2 {
            smoothie_s += s;
        }
        println!(
            "{name:<22} {:>6} {q:>10.4} {tq:>12} {:>13.4} {:>9}",
            pages.len(),
            score(pages, &d),
            TARGETS[i]
        );
        ours.push(texts);
        theirs.push(t);
        smoothie.push(d);
    }
    println!();
    println!("== AEB, its evaluate.py (published outputs of other tools as *_published)");
    let mut named: Vec<(&str, &[String])> = vec![
        ("focuser", &ours[0]),
        ("dom_smoothie_0.18_measured", &smoothie[0]),
    ];
    if peers {
        named.push(("trafilatura_2.3.1_measured", &theirs[0]));
    }
    print!(
        "{}",
        peers::aeb_evaluate(&python, &args.data, &sets[0].1, &named, tmp.path())?
    );
    println!();
    println!("== WCXB dev, its evaluate.py --split dev");
    let (f1, out) = peers::wcxb_evaluate(
        &python,
        &args.data,
        &sets[1].1,
        "focuser",
        &ours[1],
        tmp.path(),
    )?;
    println!("focuser: F1 {f1:.4}");
    print!(
        "{}",
        out.lines()
            .skip_while(|l| !l.starts_with("Per page type"))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
    let (f1, _) = peers::wcxb_evaluate(
        &python,
        &args.data,
        &sets[1].1,
        "dom_smoothie",
        &smoothie[1],
        tmp.path(),
    )?;
    println!("dom_smoothie 0.18: F1 {f1:.4}");
    if peers {
        let (f1, _) = peers::wcxb_evaluate(
            &python,
            &args.data,
            &sets[1].1,
            "trafilatura",
            &theirs[1],
            tmp.path(),
        )?;
        println!("trafilatura 2.3.1: F1 {f1:.4}");
    }
    println!();
    templater(args, sets);
    println!();
    let pages: Vec<&Page> = sets[0].1.iter().chain(&sets[1].1).copied().collect();
    let others = [
        (
            "trafilatura 2.3.1 extract (same pages)",
            peers.then_some(traf_s),
        ),
        (
            "dom_smoothie 0.18 (same pages, one round)",
            Some(smoothie_s),
        ),
    ];
    speed_and_memory(&pages, if args.smoke { 1 } else { 3 }, &others);
    Ok(())
}

/// Speed on one core over `pages` (trafilatura's time on them if it ran) and memory.
fn speed_and_memory(pages: &[&Page], rounds: usize, others: &[(&str, Option<f64>)]) {
    let sp = speed::measure(pages, rounds);
    let per_s = |s: f64| sp.pages as f64 / s;
    println!(
        "== speed, one core, {} AEB and WCXB dev pages ({} KB on average), best of {} rounds",
        sp.pages,
        sp.bytes / sp.pages.max(1) / 1000,
        rounds
    );
    println!(
        "{:<44} {:>10} {:>8} {:>9}",
        "stage", "pages/s", "MB/s", "ratio"
    );
    let mbs = |s: f64| sp.bytes as f64 / s / 1e6;
    println!(
        "{:<44} {:>10.0} {:>8.1}",
        "limit: parse only (decode, tokens, block tree)",
        per_s(sp.parse_s),
        mbs(sp.parse_s)
    );
    println!(
        "{:<44} {:>10.0} {:>8.1} {:>9.3}  (of the parse; target 300 pages/s, goal 0.25)",
        "whole analysis (decode → weights → main text)",
        per_s(sp.analysis_s),
        mbs(sp.analysis_s),
        sp.parse_s / sp.analysis_s
    );
    for (name, secs) in others {
        if let Some(secs) = secs {
            println!(
                "{name:<44} {:>10.1} {:>8.1}",
                sp.pages as f64 / secs,
                sp.bytes as f64 / secs / 1e6
            );
        }
    }
    println!(
        "memory in flight / page size: median {:.2}, p95 {:.2}, max {:.2}; all pages {:.2} (target <= 2)",
        sp.memory[0], sp.memory[1], sp.memory[2], sp.memory_total
    );
}

/// The templater's figures on the multi-page site sets.
fn templater(args: &Args, sets: &[(&str, Vec<&Page>)]) {
    println!("== templater: F1 with site data (all of a site's pages) vs page-only; template share of bytes");
    let daniel = data::sites(
        &args.data,
        "daniel",
        None,
        if args.smoke { 12 } else { usize::MAX },
    )
    .unwrap_or_default();
    let daniel: Vec<&Page> = daniel.iter().collect();
    let site_sets: [(&str, &[&Page]); 3] = [
        ("big9", &sets[3].1),
        ("chaos", &sets[4].1),
        ("daniel (ru, zh)", &daniel),
    ];
    println!(
        "{:<18} {:>6} {:>6} {:>10} {:>10} {:>8} {:>9}",
        "set", "sites", "pages", "page-only", "with site", "gain", "template"
    );
    for (name, pages) in site_sets {
        let sites = sites::per_site(pages);
        let n: usize = sites.iter().map(|s| s.pages).sum();
        let w = |f: fn(&sites::Site) -> f64| {
            sites.iter().map(|s| f(s) * s.pages as f64).sum::<f64>() / n.max(1) as f64
        };
        let (po, ws, share) = (
            w(|s| s.page_only),
            w(|s| s.with_site),
            w(|s| s.template_share),
        );
        let multi: Vec<&sites::Site> = sites.iter().filter(|s| s.pages >= 2).collect();
        let m: usize = multi.iter().map(|s| s.pages).sum();
        let mw = |f: fn(&sites::Site) -> f64| {
            multi.iter().map(|s| f(s) * s.pages as f64).sum::<f64>() / m.max(1) as f64
        };
        println!(
            "{name:<18} {:>6} {n:>6} {po:>10.4} {ws:>10.4} {:>+8.4} {share:>9.3}",
            sites.len(),
            ws - po
        );
        println!(
            "{:<18} {:>6} {m:>6} {:>10.4} {:>10.4} {:>+8.4} {:>9.3}",
            "  sites of 2+ pages",
            multi.len(),
            mw(|s| s.page_only),
            mw(|s| s.with_site),
            mw(|s| s.with_site) - mw(|s| s.page_only),
            mw(|s| s.template_share)
        );
        if name == "big9" {
            for s in &sites {
                println!(
                    "  {:<16} {:>6} {:>6} {:>10.4} {:>10.4} {:>+8.4} {:>9.3}",
                    s.name,
                    1,
                    s.pages,
                    s.page_only,
                    s.with_site,
                    s.with_site - s.page_only,
                    s.template_share
                );
            }
        }
    }
    let ns = [0, 1, 2, 3, 4, 6, 8, 12, 20];
    let curve = sites::trust_curve(&sets[3].1, &ns);
    println!(
        "trust: Big9 F1 when every page is weighed with full trust in n other pages of its site (rule in use: trust grows to 1 at {} pages)",
        sites::trust_pages()
    );
    for (n, f1, count) in curve {
        println!("  n = {n:>2}: {f1:.4} ({count} pages)");
    }
}
