//! Stage (a): what qargfilter saves. A generated web (a mirror tree the crawler reads) of
//! `--hosts` hosts, each with `--articles` articles (`/item?id=N`: `id` changes the page) and
//! `--lists` lists (`/list?page=N`: `page` changes it), every page in one template; the ad
//! servers report every page once and as many variants again as make `--variant-share` of the
//! URLs: an article with one (nine in ten) or two of `utm_source`, `sid`, `ref`, which do not
//! change it, with values never seen before. Phase 1 loads, crawls and analyses that traffic,
//! then runs a qargfilter pass (scores, merging) and a crawl that withdraws the merged variants;
//! phase 2 brings the same kind of traffic again, with new values.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::anyhow;
use focuser_formats::queue::{QueueHeader, QueueRecord, QueueWriter};
use focuser_formats::urls;
use focuser_tests::TestDb;

use crate::{config, number, Args};

const T0: i64 = 1_700_000_000;
/// The arguments that do not change an article.
const IGNORED: [&str; 3] = ["utm_source", "sid", "ref"];

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
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

const WORDS: [&str; 32] = [
    "market", "river", "council", "season", "garden", "engine", "letter", "harbour", "concert",
    "village", "program", "weather", "station", "library", "festival", "bridge", "school",
    "museum", "factory", "island", "theatre", "forest", "railway", "hospital", "stadium",
    "airport", "college", "kitchen", "window", "painter", "doctor", "farmer",
];

/// `n` sentences of words drawn by `rng`.
fn prose(rng: &mut Rng, n: usize) -> String {
    let mut out = String::new();
    for _ in 0..n {
        let words: Vec<&str> = (0..12).map(|_| WORDS[rng.below(WORDS.len())]).collect();
        let mut s = words.join(" ");
        s[..1].make_ascii_uppercase();
        out.push_str(&s);
        out.push_str(". ");
    }
    out
}

fn host(h: usize) -> String {
    format!("h{h}.example")
}

/// A page of host `h`: the host's template around `main`.
fn page(h: usize, title: &str, main: &str) -> String {
    let menu: String = ["Home", "News", "Sport", "Culture", "Contact"]
        .iter()
        .map(|m| format!("<li><a href=\"/{m}\">{m}</a></li>"))
        .collect();
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>\n\
         <nav><ul>{menu}</ul></nav>\n<main><h1>{title}</h1>\n{main}</main>\n\
         <footer><p>Copyright {} Publishing. All rights reserved.</p></footer></body></html>\n",
        host(h)
    )
}

/// Writes every page of the web under `mirror` (hard links make the variants later).
fn make_web(a: &Args, mirror: &Path) -> anyhow::Result<u64> {
    let mut bytes = 0;
    for h in 0..a.hosts {
        let dir = mirror.join(host(h));
        std::fs::create_dir_all(&dir)?;
        for k in 0..a.articles {
            let mut rng = Rng::new((h * 100_003 + k) as u64);
            let main: String = (0..3)
                .map(|_| format!("<p>{}</p>\n", prose(&mut rng, 4)))
                .collect();
            let html = page(h, &format!("Article {k} of {}", host(h)), &main);
            bytes += html.len() as u64;
            std::fs::write(dir.join(format!("item?id={k}")), html)?;
        }
        for p in 1..=a.lists {
            let items: String = (0..10)
                .map(|i| {
                    let k = (p * 10 + i) % a.articles.max(1);
                    format!("<li><a href=\"/item?id={k}\">Article {k}: a long headline of the story {p}-{i}</a></li>")
                })
                .collect();
            let html = page(h, &format!("List page {p}"), &format!("<ul>{items}</ul>\n"));
            bytes += html.len() as u64;
            std::fs::write(dir.join(format!("list?page={p}")), html)?;
        }
    }
    Ok(bytes)
}

/// One phase's reported URLs: every page once, and variants to make `--variant-share` of all
/// (their mirror files made). Returns the URLs and how many are variants.
fn traffic(a: &Args, mirror: &Path, phase: u64) -> anyhow::Result<(Vec<String>, usize)> {
    let base = a.articles + a.lists;
    let per_host = (base as f64 * a.variant_share / (1.0 - a.variant_share)).round() as usize;
    let mut out = Vec::new();
    let mut rng = Rng::new(phase * 7919 + 1);
    for h in 0..a.hosts {
        let dir = mirror.join(host(h));
        out.extend((0..a.articles).map(|k| format!("http://{}/item?id={k}", host(h))));
        out.extend((1..=a.lists).map(|p| format!("http://{}/list?page={p}", host(h))));
        for _ in 0..per_host {
            let k = rng.below(a.articles);
            let first = rng.below(IGNORED.len());
            let mut args = vec![format!(
                "{}={phase}v{}",
                IGNORED[first],
                rng.next() % 1_000_000_007
            )];
            if rng.below(10) == 0 {
                let second = (first + 1 + rng.below(IGNORED.len() - 1)) % IGNORED.len();
                args.push(format!(
                    "{}={phase}w{}",
                    IGNORED[second],
                    rng.next() % 1_000_000_007
                ));
            }
            let at = rng.below(args.len() + 1);
            args.insert(at, format!("id={k}"));
            // The page under the URL and under each URL the loader may make of it.
            let file = format!("item?{}", args.join("&"));
            for i in 0..args.len() {
                let less: Vec<&str> = args
                    .iter()
                    .enumerate()
                    .filter(|(j, a)| *j != i || a.starts_with("id="))
                    .map(|(_, a)| a.as_str())
                    .collect();
                for name in [format!("item?{}", less.join("&")), file.clone()] {
                    let link = dir.join(&name);
                    if !link.exists() {
                        std::fs::hard_link(dir.join(format!("item?id={k}")), &link)?;
                    }
                }
            }
            out.push(format!("http://{}/{file}", host(h)));
        }
    }
    Ok((out, per_host * a.hosts))
}

/// `urls` as one queue file in `inbox`.
fn queue(inbox: &Path, urls_: &[String], phase: u64) -> anyhow::Result<()> {
    std::fs::create_dir_all(inbox)?;
    let mut records: Vec<QueueRecord> = urls_
        .iter()
        .map(|u| {
            let n = urls::normalize(u, urls::MAX_URL_LENGTH).map_err(|e| anyhow!("{u}: {e}"))?;
            Ok(QueueRecord {
                id: n.id,
                hits: 1 + n.id % 5,
                url: n.url,
                domain: n.domain,
                timestamp: T0,
                updatetag: String::new(),
                new: true,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    records.sort_by_key(|r| r.id);
    records.dedup_by_key(|r| r.id);
    let header = QueueHeader {
        master: "bench".into(),
        cycle: phase,
        node: 1,
        time: T0,
    };
    let path = inbox.join(format!(".bench-{phase:010}.q"));
    let mut w = QueueWriter::new(BufWriter::new(File::create(&path)?), &header)?;
    for r in &records {
        w.write(r)?;
    }
    w.finish()?.0.flush()?;
    std::fs::rename(&path, inbox.join(format!("bench-{phase:010}.q")))?;
    Ok(())
}

/// `url` rows that carry an ignored argument (`live`: not marked for withdrawal).
fn variant_rows(db: &TestDb, extra: &str) -> anyhow::Result<i64> {
    let like: Vec<String> = IGNORED
        .iter()
        .map(|n| format!("url LIKE '%?{n}=%' OR url LIKE '%&{n}=%'"))
        .collect();
    number(
        db,
        &format!(
            "SELECT COUNT(*) AS n FROM url WHERE ({}) {extra}",
            like.join(" OR ")
        ),
    )
}

/// Stage (a) in `work` (made and removed here).
pub fn stage(a: &Args, work: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)?;
    let db = TestDb::create().map_err(|e| anyhow!("{e}"))?;
    let mirror = work.join("mirror");
    let t = Instant::now();
    let bytes = make_web(a, &mirror)?;
    let cfg = || {
        config(
            work,
            &db,
            a,
            "Fetch.Backend = mirror\nFetch.MirrorDir = mirror\nMultiDoc.Enable = 1\nMultiDoc.Batch = 200\n",
        )
    };
    let (first, variants1) = traffic(a, &mirror, 1)?;
    println!(
        "(a) web: {} hosts, {} pages ({:.1} MB); phase 1 reports {} URLs, {variants1} of them variants ({:.1} %); {:.1} s",
        a.hosts,
        a.hosts * (a.articles + a.lists),
        bytes as f64 / 1e6,
        first.len(),
        100.0 * variants1 as f64 / first.len() as f64,
        t.elapsed().as_secs_f64()
    );

    // Phase 1: the crawl, MultiDoc, then qargfilter.
    queue(&work.join("inbox"), &first, 1)?;
    focuser_yacobot::load_once(cfg()?)?;
    let t = Instant::now();
    let crawl = focuser_yacobot::crawl_once(cfg()?)?;
    let fetched1 = crawl.pages.load(Ordering::Relaxed);
    focuser_yacobot::multidoc_once(cfg()?)?;
    let rows1 = number(&db, "SELECT COUNT(*) AS n FROM url")?;
    let kept1 = variant_rows(&db, "")?;
    println!(
        "(a) before learning: {fetched1} pages fetched, {kept1} of them variants; {rows1} URLs stored; crawl and analysis {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let q = focuser_yacobot::qargfilter_once(cfg()?)?;
    let pass = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let crawl = focuser_yacobot::crawl_once(cfg()?)?;
    focuser_yacobot::multidoc_once(cfg()?)?;
    let rows2 = number(&db, "SELECT COUNT(*) AS n FROM url")?;
    let learned = number(
        &db,
        "SELECT COUNT(*) AS n FROM path_arg_name WHERE significant = 0 \
         AND name IN ('utm_source', 'sid', 'ref')",
    )?;
    let dropped = number(
        &db,
        "SELECT COUNT(*) AS n FROM path_arg_name WHERE significant = 0 AND name NOT IN ('utm_source', 'sid', 'ref')",
    )?;
    println!(
        "(a) qargfilter pass: {pass:.2} s, {} scores written; {learned} of {} (path, ignored argument) pairs learned insignificant; {} variants merged",
        q.scores_written.load(Ordering::Relaxed),
        a.hosts * IGNORED.len(),
        q.variants_merged.load(Ordering::Relaxed),
    );
    println!(
        "(a) after merging: {rows2} URLs stored ({:.1} % fewer), {} variants withdrawn with a DELETE item, {} pages fetched; {:.1} s",
        100.0 * (rows1 - rows2) as f64 / rows1.max(1) as f64,
        crawl.withdrawn_merged.load(Ordering::Relaxed),
        crawl.pages.load(Ordering::Relaxed),
        t.elapsed().as_secs_f64()
    );

    // Phase 2: the same kind of traffic, new values. (Variants of arguments not learned stay
    // from phase 1: they are not counted again.)
    let fetched_before = variant_rows(&db, "AND last_fetch IS NOT NULL AND withdraw IS NULL")?;
    let (second, variants2) = traffic(a, &mirror, 2)?;
    queue(&work.join("inbox"), &second, 2)?;
    focuser_yacobot::load_once(cfg()?)?;
    let stored = variant_rows(&db, "AND withdraw IS NULL AND last_fetch IS NULL")?;
    let crawl = focuser_yacobot::crawl_once(cfg()?)?;
    let fetched2 = crawl.pages.load(Ordering::Relaxed);
    let fetched_variants =
        variant_rows(&db, "AND last_fetch IS NOT NULL AND withdraw IS NULL")? - fetched_before;
    let rows3 = number(&db, "SELECT COUNT(*) AS n FROM url")?;
    let saved = 100.0 * (variants2 as f64 - fetched_variants as f64) / variants2.max(1) as f64;
    println!(
        "(a) after learning: phase 2 reports {} URLs, {variants2} of them new variants; {fetched2} pages fetched, {fetched_variants} of them variants ({stored} variants stored); {rows3} URLs stored",
        second.len()
    );
    println!(
        "(a) insignificant variants no longer fetched: {saved:.1} % (goal >= 90 %); significant arguments dropped: {dropped} (goal 0)"
    );
    Ok(())
}
