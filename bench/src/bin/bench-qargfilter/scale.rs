//! Stage (b): what a pass costs. `--rows` `url` rows with their MultiDoc rows, loaded with
//! `LOAD DATA`: paths of ten URLs, seven articles (`?id=N`, each its own main text) and three
//! variants of them (`utm_source` or `sid`, the same main text), 30 % of the rows; one path in a
//! hundred is a busy one, sixty URLs of which twenty variants, enough pairs for scores (and
//! merging). The pass (`Qargfilter.ProbeShare = 0`: the estimate, scores, merging) next to a
//! plain `SELECT` of the same rows and columns by the `mariadb` client, in table order and in
//! the pass's path order.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::anyhow;
use focuser_formats::urls;
use focuser_tests::TestDb;
use md5::{Digest, Md5};

use crate::{config, number, Args};

/// The rows of path `g`: (URL, the article whose main text it shows).
fn path_rows(g: u64) -> Vec<(String, u64)> {
    let base = format!("http://www.d{}.example/c{g}/view", g % 5000);
    let (articles, variants) = if g % 100 == 7 { (40, 20) } else { (7, 3) };
    let mut out: Vec<(String, u64)> = (0..articles)
        .map(|k| (format!("{base}?id={k}"), k))
        .collect();
    for v in 0..variants {
        let k = (v * 3 + g) % articles;
        let arg = if v % 2 == 0 { "utm_source" } else { "sid" };
        out.push((format!("{base}?id={k}&{arg}=v{g}x{v}"), k));
    }
    out
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The LOAD DATA files of `url` and `multidoc_page`; the rows written.
fn make_rows(a: &Args, dir: &Path) -> anyhow::Result<u64> {
    let mut u = BufWriter::new(File::create(dir.join("url.tsv"))?);
    let mut m = BufWriter::new(File::create(dir.join("page.tsv"))?);
    let mut n = 0u64;
    let mut g = 0u64;
    while n < a.rows {
        for (url, k) in path_rows(g) {
            if n >= a.rows {
                break;
            }
            let id = urls::url_id(&url);
            let domain = format!("d{}.example", g % 5000);
            writeln!(
                u,
                "{id}\t{url}\t{domain}\t{}\t0\t0\t\t2026-11-01 00:00:00\t2026-11-01 00:00:00\t2026-12-01 00:00:00",
                urls::path_hash(&url)
            )?;
            let main = hex(&Md5::digest(format!("{g}/{k}").as_bytes()));
            writeln!(
                m,
                "{id}\t1\t{main}\t2026-11-01 00:00:00\t1\t{}",
                n % 100_000 + 1
            )?;
            n += 1;
        }
        g += 1;
    }
    u.flush()?;
    m.flush()?;
    Ok(n)
}

/// Runs `sql` in the `mariadb` client (output thrown away), LOAD DATA LOCAL allowed; the
/// seconds it took.
fn client(db: &TestDb, sql: &str) -> anyhow::Result<f64> {
    let t = Instant::now();
    let out = db
        .client()
        .args([
            "--local-infile=1",
            "--quick",
            "--batch",
            "--skip-column-names",
            "-e",
            sql,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    if !out.status.success() {
        return Err(anyhow!(
            "mariadb: {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(t.elapsed().as_secs_f64())
}

fn line(what: &str, rows: u64, secs: f64) -> f64 {
    let rate = rows as f64 / secs;
    println!("{what:<58} {secs:>8.2} s {rate:>12.0} rows/s");
    rate
}

const SCAN: &str =
    "SELECT u.id, u.url, u.domain, u.path_hash, u.claim_expires, u.withdraw, m.main_md5 \
                    FROM url AS u LEFT JOIN multidoc_page AS m ON m.id = u.id AND m.outcome = 1";

/// Stage (b) in `work` (made and removed here).
pub fn stage(a: &Args, work: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)?;
    let db = TestDb::create().map_err(|e| anyhow!("{e}"))?;
    let t = Instant::now();
    let rows = make_rows(a, work)?;
    let load = client(
        &db,
        &format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE url (id, url, domain, path_hash, hits, download_prio, updatetag, first_seen, last_hit, next_indexed); \
             LOAD DATA LOCAL INFILE '{}' INTO TABLE multidoc_page (id, outcome, main_md5, analysed_at, archive_file, archive_item)",
            work.join("url.tsv").display(),
            work.join("page.tsv").display()
        ),
    )?;
    println!(
        "(b) data: {rows} url rows and their multidoc_page rows ({:.1} s to make, {load:.1} s to load)",
        t.elapsed().as_secs_f64() - load
    );
    let cfg = || {
        config(
            work,
            &db,
            a,
            "Loader.Enable = 0\nCrawl.Enable = 0\nQargfilter.ProbeShare = 0\n",
        )
    };
    // Warm: the same pages in the buffer pool for everyone.
    client(&db, SCAN)?;
    let scan = line(
        "(b) limit: plain SELECT of the rows (table order)",
        rows,
        client(&db, SCAN)?,
    );
    let ordered = line(
        "(b) limit: the same in path order (ix_url_path)",
        rows,
        client(&db, &format!("{SCAN} ORDER BY u.path_hash, u.id"))?,
    );
    let t = Instant::now();
    let q = focuser_yacobot::qargfilter_once(cfg()?)?;
    let first = line(
        "(b) qargfilter pass, first (scores, merging)",
        rows,
        t.elapsed().as_secs_f64(),
    );
    println!(
        "(b)   {} paths estimated, {} scores written, {} variants merged",
        q.paths_estimated.load(Ordering::Relaxed),
        q.scores_written.load(Ordering::Relaxed),
        q.variants_merged.load(Ordering::Relaxed)
    );
    let left = number(&db, "SELECT COUNT(*) AS n FROM url")? as u64;
    let t = Instant::now();
    focuser_yacobot::qargfilter_once(cfg()?)?;
    let second = line(
        "(b) qargfilter pass, again (nothing new)",
        left,
        t.elapsed().as_secs_f64(),
    );
    println!(
        "(b) ratio: pass {:.2} / {:.2} (first / again) of the plain SELECT, {:.2} / {:.2} of the path-ordered one",
        first / scan,
        second / scan,
        first / ordered,
        second / ordered
    );
    Ok(())
}
