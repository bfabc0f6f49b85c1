//! Stage (a): the loader next to `LOAD DATA` of the same rows into the same table, into an
//! empty `url` table and into a full one. Needs the `mariadb` client (LOAD DATA LOCAL).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, Context};
use focuser_bench::queue::{self, QueueSize, ARGS, COLUMNS};
use focuser_formats::urls;
use focuser_tests::TestDb;

use crate::Args;

/// `others` URLs of the full table that the queue never names, as a LOAD DATA file.
fn others_file(a: &Args, path: &Path) -> anyhow::Result<()> {
    let mut w = BufWriter::new(File::create(path)?);
    for j in 0..a.others {
        let url = format!("http://www.old{}.example/a/{j}.html", j % 10_000);
        writeln!(
            w,
            "{}\t{url}\told{}.example\t{}\t0\t0\t\t2026-01-01 00:00:00\t2026-01-01 00:00:00\t2026-02-01 00:00:00",
            urls::url_id(&url),
            j % 10_000,
            urls::path_hash(&url)
        )?;
    }
    w.flush()?;
    Ok(())
}

/// Runs SQL through the `mariadb` client, LOAD DATA LOCAL allowed; returns the seconds.
fn client(db: &TestDb, sql: &str) -> anyhow::Result<f64> {
    let t = Instant::now();
    let out = db
        .client()
        .arg("--local-infile=1")
        .arg("-e")
        .arg(sql)
        .output()?;
    if !out.status.success() {
        return Err(anyhow!(
            "mariadb: {}: {}",
            sql,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(t.elapsed().as_secs_f64())
}

fn load_data(db: &TestDb, file: &Path, replace: bool) -> anyhow::Result<f64> {
    client(
        db,
        &format!(
            "LOAD DATA LOCAL INFILE '{}' {}INTO TABLE url ({COLUMNS})",
            file.display(),
            if replace { "REPLACE " } else { "" }
        ),
    )
}

/// The rows of the queued URLs as they are now, as a LOAD DATA file: what LOAD DATA is
/// asked to write, in the order the loader writes them: file after file, each in id order
/// (a dump comes in id order, which would give LOAD DATA one sequential pass over the
/// primary key where the loader makes one per file).
fn dump(a: &Args, db: &TestDb, file: &Path) -> anyhow::Result<u64> {
    let out = db
        .client()
        .args(["--batch", "--skip-column-names", "--raw", "-e"])
        .arg(format!(
            "SELECT {COLUMNS} FROM url WHERE domain NOT LIKE 'old%'"
        ))
        .output()?;
    if !out.status.success() {
        return Err(anyhow!("dumping url failed"));
    }
    let per_file = a.urls.div_ceil(a.files.max(1));
    let mut lines: Vec<(u64, &[u8])> = Vec::new();
    for line in out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let text = std::str::from_utf8(line)?;
        let url = text.split('\t').nth(1).unwrap_or_default();
        lines.push((
            queued_index(url).ok_or_else(|| anyhow!("{url}: not queued"))? / per_file,
            line,
        ));
    }
    // Stable: within a file, the dump's id order stays.
    lines.sort_by_key(|(f, _)| *f);
    let mut w = BufWriter::new(File::create(file)?);
    for (_, line) in &lines {
        w.write_all(line)?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    Ok(lines.len() as u64)
}

/// `i` of a URL [`queue::queued_url`] made: `/p/{i}/` or `?id={i}`.
fn queued_index(url: &str) -> Option<u64> {
    let digits = |s: &str| s.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok();
    match url.split_once("?id=") {
        Some((_, rest)) => digits(rest),
        None => digits(url.split_once("/p/")?.1),
    }
}

fn count(db: &TestDb) -> anyhow::Result<u64> {
    let out = db
        .client()
        .args([
            "--batch",
            "--skip-column-names",
            "-e",
            "SELECT COUNT(*) FROM url",
        ])
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

fn line(what: &str, rows: u64, secs: f64) -> f64 {
    let rate = rows as f64 / secs;
    println!("{what:<44} {secs:>8.2} s {rate:>12.0} rows/s");
    rate
}

/// Stage (a) in `work` (made and removed here).
pub fn stage(a: &Args, work: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)?;
    let db = TestDb::create().map_err(|e| anyhow!("{e}"))?;
    let inbox = work.join("inbox");
    let t = Instant::now();
    let q = QueueSize {
        urls: a.urls,
        rules: a.rules,
        files: a.files,
        batch: a.batch,
    };
    let bytes = queue::queue_files(&q, &inbox)?;
    let others = work.join("others.tsv");
    others_file(a, &others)?;
    queue::insert_rules(&q, &db)?;
    println!(
        "data: {} queued URLs in {} files ({:.1} MB), {} path_arg_name rules, {} other URLs for the full table; {:.1} s",
        a.urls,
        a.files,
        bytes as f64 / 1e6,
        queue::ruled_paths(&q) * ARGS.len() as u64,
        a.others,
        t.elapsed().as_secs_f64()
    );
    let keep = work.join("queue-copy");
    copy_dir(&inbox, &keep)?;

    // Empty table.
    let secs = queue::loader(&q, work, &db)?;
    let rows = count(&db)?;
    let loaded = line("(a1) loader, empty url table", a.urls, secs);
    let after_first = work.join("after-first.tsv");
    dump(a, &db, &after_first)?;
    client(&db, "TRUNCATE url")?;
    let secs = load_data(&db, &after_first, false)?;
    let limit = line("limit: LOAD DATA of the same rows, empty table", rows, secs);
    println!(
        "(a1) ratio: {:.2} of LOAD DATA ({rows} rows; target >= 0.60)",
        loaded / limit
    );

    // Full table: the same URLs already there (a second cycle brings them again) and others.
    load_data(&db, &others, false).context("filling the table")?;
    client(&db, "DELETE FROM queue_applied")?;
    copy_dir(&keep, &inbox)?;
    let before = count(&db)?;
    let secs = queue::loader(&q, work, &db)?;
    let loaded = line(
        &format!("(a2) loader, full url table ({before} rows)"),
        a.urls,
        secs,
    );
    let after_second = work.join("after-second.tsv");
    dump(a, &db, &after_second)?;
    client(&db, "TRUNCATE url")?;
    load_data(&db, &others, false)?;
    load_data(&db, &after_first, false)?;
    let secs = load_data(&db, &after_second, true)?;
    let limit = line(
        "limit: LOAD DATA REPLACE of the same rows, full table",
        rows,
        secs,
    );
    println!(
        "(a2) ratio: {:.2} of LOAD DATA (target >= 0.60)",
        loaded / limit
    );
    std::fs::remove_dir_all(work)?;
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        if e.file_type()?.is_file() {
            std::fs::copy(e.path(), to.join(e.file_name()))?;
        }
    }
    Ok(())
}
