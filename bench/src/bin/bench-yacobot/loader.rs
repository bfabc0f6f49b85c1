//! Stage (a): the loader next to `LOAD DATA` of the same rows into the same table, into an
//! empty `url` table and into a full one. Needs the `mariadb` client (LOAD DATA LOCAL).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, Context};
use diesel::connection::SimpleConnection;
use diesel::RunQueryDsl;
use focuser_formats::queue::{QueueHeader, QueueRecord, QueueWriter};
use focuser_formats::urls;
use focuser_schema::models::NewPathArgName;
use focuser_tests::TestDb;
use focuser_yacobot::YacobotConfig;

use crate::Args;

const T0: i64 = 1_700_000_000;
/// The url columns both the loader and LOAD DATA write.
const COLUMNS: &str =
    "id, url, domain, path_hash, hits, download_prio, updatetag, first_seen, last_hit, next_indexed";

/// The arguments of a ruled path: (name, significant). Every URL with arguments has `id`
/// (kept, and distinct per URL), so dropping the others never merges two URLs.
const ARGS: [(&str, bool); 4] = [
    ("id", true),
    ("sid", false),
    ("utm_source", false),
    ("page", true),
];

fn ruled_paths(a: &Args) -> u64 {
    (a.rules / ARGS.len() as u64).max(1)
}

fn ruled_path(p: u64) -> String {
    format!("http://www.d{}.example/cat/{p}/list.html", p % 10_000)
}

/// Queued URL `i`: a fifth without arguments on a path of its own, the rest on a ruled path
/// with 1–4 arguments; one in 50 also carries an argument met for the first time.
fn queued_url(i: u64, paths: u64) -> String {
    let n = i % 5;
    if n == 0 {
        return format!("http://www.d{}.example/p/{i}/index.html", i % 10_000);
    }
    let mut u = format!("{}?id={i}", ruled_path(i.wrapping_mul(0x9e37_79b9) % paths));
    for (name, _) in ARGS.iter().skip(1).take(n as usize - 1) {
        u.push_str(&format!("&{name}={}", i % 97));
    }
    if i % 50 == 1 {
        u.push_str(&format!("&x{}=1", i % 100));
    }
    u
}

fn record(url: &str, i: u64) -> QueueRecord {
    QueueRecord {
        id: urls::url_id(url),
        url: url.to_string(),
        domain: urls::domain_of(
            url.trim_start_matches("http://")
                .split('/')
                .next()
                .unwrap_or_default(),
        ),
        timestamp: T0 + (i % 3600) as i64,
        hits: 1 + i % 7,
        updatetag: if i.is_multiple_of(100) {
            format!("t{i}")
        } else {
            String::new()
        },
        new: true,
    }
}

/// The queue files, in `inbox` (records sorted by id within each file, as the master writes).
fn queue_files(a: &Args, inbox: &Path) -> anyhow::Result<u64> {
    std::fs::create_dir_all(inbox)?;
    let paths = ruled_paths(a);
    let per_file = a.urls.div_ceil(a.files.max(1));
    let mut bytes = 0;
    for f in 0..a.files.max(1) {
        let from = f * per_file;
        let to = ((f + 1) * per_file).min(a.urls);
        let mut records: Vec<QueueRecord> = (from..to)
            .map(|i| record(&queued_url(i, paths), i))
            .collect();
        records.sort_by_key(|r| r.id);
        let path = inbox.join(format!("bench-{:010}.q", f + 1));
        let header = QueueHeader {
            master: "bench".into(),
            cycle: f + 1,
            node: 1,
            time: T0,
        };
        let mut w = QueueWriter::new(BufWriter::new(File::create(&path)?), &header)?;
        for r in &records {
            w.write(r)?;
        }
        w.finish()?.0.flush()?;
        bytes += std::fs::metadata(&path)?.len();
    }
    Ok(bytes)
}

fn insert_rules(a: &Args, db: &TestDb) -> anyhow::Result<()> {
    let mut c = db.conn();
    c.batch_execute("DELETE FROM path_arg_name")?;
    let now = chrono::DateTime::from_timestamp(T0, 0)
        .ok_or_else(|| anyhow!("clock"))?
        .naive_utc();
    let mut rows = Vec::new();
    let hashes: Vec<u64> = (0..ruled_paths(a))
        .map(|p| urls::path_hash(&ruled_path(p)))
        .collect();
    for &path_hash in &hashes {
        for (name, significant) in ARGS {
            rows.push(NewPathArgName {
                path_hash,
                name,
                significant,
                updated_at: now,
            });
        }
    }
    for chunk in rows.chunks(1000) {
        diesel::insert_into(focuser_schema::schema::path_arg_name::table)
            .values(chunk)
            .execute(&mut c)?;
    }
    Ok(())
}

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

/// `i` of a URL [`queued_url`] made: `/p/{i}/` or `?id={i}`.
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

fn config(
    work: &Path,
    db: &TestDb,
    batch: usize,
) -> anyhow::Result<focuser_daemon::Config<YacobotConfig>> {
    let cf = work.join("yacobot.cf");
    std::fs::write(
        &cf,
        format!(
            "rootdir = {}\ndatabase = {}\nnode = bench\nLoader.Inbox.bench = inbox\nLoader.Batch = {batch}\n\
             Crawl.Enable = 0\nQargfilter.Enable = 0\ndebuglevel = 20\n",
            work.display(),
            db.url()
        ),
    )?;
    Ok(focuser_daemon::Config::load(&cf, None)?)
}

/// One loader pass over the inbox, timed.
fn loader(a: &Args, work: &Path, db: &TestDb) -> anyhow::Result<f64> {
    let cfg = config(work, db, a.batch)?;
    let t = Instant::now();
    let files = focuser_yacobot::load_once(cfg)?;
    let secs = t.elapsed().as_secs_f64();
    if files as u64 != a.files.max(1) {
        return Err(anyhow!("the loader handled {files} files"));
    }
    Ok(secs)
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
    let bytes = queue_files(a, &inbox)?;
    let others = work.join("others.tsv");
    others_file(a, &others)?;
    insert_rules(a, &db)?;
    println!(
        "data: {} queued URLs in {} files ({:.1} MB), {} path_arg_name rules, {} other URLs for the full table; {:.1} s",
        a.urls,
        a.files,
        bytes as f64 / 1e6,
        ruled_paths(a) * ARGS.len() as u64,
        a.others,
        t.elapsed().as_secs_f64()
    );
    let keep = work.join("queue-copy");
    copy_dir(&inbox, &keep)?;

    // Empty table.
    let secs = loader(a, work, &db)?;
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
    let secs = loader(a, work, &db)?;
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
