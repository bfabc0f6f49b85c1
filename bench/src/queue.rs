//! The loader's input, generated deterministically: queue files as the master writes them
//! (a fifth of the URLs without arguments, the rest on ruled paths with 1–4 arguments) and the
//! `path_arg_name` rules; and one timed loader pass over them. Used by bench-yacobot (a) and
//! bench-cluster.

use std::fs::File;
use std::io::BufWriter;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::anyhow;
use diesel::connection::SimpleConnection;
use diesel::RunQueryDsl;
use focuser_formats::queue::{QueueHeader, QueueRecord, QueueWriter};
use focuser_formats::urls;
use focuser_schema::models::NewPathArgName;
use focuser_tests::TestDb;
use focuser_yacobot::YacobotConfig;

/// How much to generate, and the loader's batch.
pub struct QueueSize {
    /// Queued URLs (0–4 query arguments each)
    pub urls: u64,
    /// path_arg_name rules (four per path)
    pub rules: u64,
    /// Queue files the URLs come in
    pub files: u64,
    /// Loader.Batch
    pub batch: usize,
}

pub const T0: i64 = 1_700_000_000;
/// The url columns both the loader and LOAD DATA write.
pub const COLUMNS: &str =
    "id, url, domain, path_hash, hits, download_prio, updatetag, first_seen, last_hit, next_indexed";

/// The arguments of a ruled path: (name, significant). Every URL with arguments has `id`
/// (kept, and distinct per URL), so dropping the others never merges two URLs.
pub const ARGS: [(&str, bool); 4] = [
    ("id", true),
    ("sid", false),
    ("utm_source", false),
    ("page", true),
];

pub fn ruled_paths(a: &QueueSize) -> u64 {
    (a.rules / ARGS.len() as u64).max(1)
}

fn ruled_path(p: u64) -> String {
    format!("http://www.d{}.example/cat/{p}/list.html", p % 10_000)
}

/// Queued URL `i`: a fifth without arguments on a path of its own, the rest on a ruled path
/// with 1–4 arguments; one in 50 also carries an argument met for the first time.
pub fn queued_url(i: u64, paths: u64) -> String {
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
pub fn queue_files(a: &QueueSize, inbox: &Path) -> anyhow::Result<u64> {
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

pub fn insert_rules(a: &QueueSize, db: &TestDb) -> anyhow::Result<()> {
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
pub fn loader(a: &QueueSize, work: &Path, db: &TestDb) -> anyhow::Result<f64> {
    let cfg = config(work, db, a.batch)?;
    let t = Instant::now();
    let files = focuser_yacobot::load_once(cfg)?;
    let secs = t.elapsed().as_secs_f64();
    if files as u64 != a.files.max(1) {
        return Err(anyhow!("the loader handled {files} files"));
    }
    Ok(secs)
}
