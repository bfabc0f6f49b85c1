//! bench-master: the master cycle next to the classic sort/join/awk pipeline and a single
//! pass over the same reflog (bench/README.md). Everything is generated here, deterministically.
//!
//!     cargo build --release -p focuser-master -p focuser-bench
//!     target/release/bench-master --lines 10000000
//!
//! Needs the private database (scripts/db.sh up) for the domain map.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{anyhow, Context};
use clap::Parser;
use diesel::connection::SimpleConnection;
use focuser_formats::stamp;
use focuser_formats::urls;
use focuser_master::current_log;
use focuser_master::filter::Entry;

#[derive(Parser)]
struct Args {
    /// Reflog lines
    #[arg(long, default_value_t = 10_000_000)]
    lines: u64,
    /// Distinct URLs to draw from (about as many appear)
    #[arg(long, default_value_t = 2_000_000)]
    urls: u64,
    #[arg(long, default_value_t = 100_000)]
    domains: u64,
    #[arg(long, default_value_t = 8)]
    nodes: u32,
    /// Work directory [target/bench-master]
    #[arg(long)]
    work: Option<PathBuf>,
    /// Skip the classic pipeline (while working on the master)
    #[arg(long)]
    skip_classic: bool,
}

const T0: i64 = 1_700_000_000;

/// Writes every dirty page out before a stage is timed: a stage must not pay for the writeback
/// of what the generator or an earlier stage wrote (a gigabyte of it, for the master).
fn settle() -> anyhow::Result<()> {
    let status = Command::new("sync").status().context("running sync")?;
    if !status.success() {
        return Err(anyhow!("sync failed"));
    }
    Ok(())
}

/// xorshift64*: the same data on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn domain_of(u: u64, domains: u64) -> u64 {
    u.wrapping_mul(0x9e37_79b9_7f4a_7c15) % domains
}

fn url(u: u64, domains: u64) -> String {
    format!(
        "http://www.d{}.example/p/{u}/index.html?id={u}",
        domain_of(u, domains)
    )
}

/// Zipf(1) over `n` ranks, sampled by inverting its cumulative weights.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: u64) -> Zipf {
        let mut acc = 0.0;
        Zipf(
            (1..=n)
                .map(|r| {
                    acc += 1.0 / r as f64;
                    acc
                })
                .collect(),
        )
    }

    fn sample(&self, rng: &mut Rng) -> u64 {
        let total = self.0.last().copied().unwrap_or(1.0);
        let x = rng.unit() * total;
        self.0.partition_point(|&c| c < x) as u64
    }
}

struct Data {
    reflog: PathBuf,
    bytes: u64,
    now: i64,
}

fn generate(a: &Args, work: &Path) -> anyhow::Result<Data> {
    let reflog = work.join("reflog.log");
    let mut rng = Rng(0x5eed_f0c0_5e12_0001);
    let zipf = Zipf::new(a.urls);
    let mut w = BufWriter::with_capacity(4 << 20, File::create(&reflog)?);
    writeln!(w, "batch\tpriority\ttimestamp\tpage\turl\thits\tupdatetag")?;
    for i in 0..a.lines {
        // Half Zipf-popular, half uniform: a head of hot URLs and about `urls` distinct ones.
        let u = if rng.next().is_multiple_of(2) {
            zipf.sample(&mut rng)
        } else {
            rng.next() % a.urls
        };
        let ts = T0 + (i * 3600 / a.lines.max(1)) as i64;
        let r = rng.next();
        let tag = if r.is_multiple_of(100) {
            format!("v{}", (r >> 8) % 3)
        } else {
            String::new()
        };
        let hits = 1 + (r >> 16) % 3;
        if r % 1000 == 7 {
            writeln!(
                w,
                "{}\t5\tnot-a-time\t{}\t{}\t{hits}\t{tag}",
                2011072806593795u64,
                r % 9999,
                url(u, a.domains)
            )?;
        } else {
            writeln!(
                w,
                "{}\t5\t{}\t{}\t{}\t{hits}\t{tag}",
                2011072806593795u64,
                stamp::format(ts),
                r % 9999,
                url(u, a.domains)
            )?;
        }
    }
    w.flush()?;
    let bytes = std::fs::metadata(&reflog)?.len();
    Ok(Data {
        reflog,
        bytes,
        now: T0 + 3600,
    })
}

/// The previous current_log (40 % of the URLs, forwarded up to two hours ago), for both
/// pipelines; and the domain map (90 % of domains), in the database and as a file.
fn previous_state(a: &Args, work: &Path, db: &focuser_tests::TestDb) -> anyhow::Result<()> {
    let mut rng = Rng(0x0dd5_eed5_0000_0002);
    let mut entries: Vec<(u64, String, Entry<'static>)> = (0..a.urls)
        .filter(|u| u % 5 < 2)
        .map(|u| {
            let url = url(u, a.domains);
            let fwd_ts = T0 - (rng.next() % 7200) as i64;
            let last_seen = fwd_ts + (rng.next() % 1800) as i64;
            let tag = if rng.next().is_multiple_of(4) {
                "v0"
            } else {
                ""
            };
            let e = Entry {
                id: urls::url_id(&url),
                fwd_ts,
                tag,
                pending: rng.next() % 3,
                last_seen,
            };
            (u, url, e)
        })
        .collect();
    entries.sort_by_key(|(_, _, e)| e.id);
    std::fs::create_dir_all(work.join("master/state"))?;
    let mut w = current_log::Writer::new(
        BufWriter::new(File::create(work.join("master/state/current_log"))?),
        1,
    )?;
    for (u, url, e) in &entries {
        w.write(e, &format!("d{}.example", domain_of(*u, a.domains)), url)?;
    }
    w.finish()?.0.flush()?;
    entries.sort_by(|a, b| a.1.as_bytes().cmp(b.1.as_bytes()));
    let mut c = BufWriter::new(File::create(work.join("classic_current_log"))?);
    for (_, url, e) in &entries {
        writeln!(
            c,
            "{url}\t{}\t{}\t{}\t{}",
            e.fwd_ts, e.tag, e.pending, e.last_seen
        )?;
    }
    c.flush()?;

    let mut conn = db.conn();
    let nodes: Vec<String> = (1..=a.nodes)
        .map(|n| format!("({n}, 'yb{n}', '127.0.0.1:{}', 1)", 7300 + n))
        .collect();
    conn.batch_execute(&format!(
        "INSERT INTO yacobot_node (id, name, host, enabled) VALUES {}",
        nodes.join(",")
    ))?;
    let mut mapped: Vec<(String, u32)> = (0..a.domains)
        .filter(|d| d % 10 != 0)
        .map(|d| (format!("d{d}.example"), (d % u64::from(a.nodes)) as u32 + 1))
        .collect();
    for chunk in mapped.chunks(5000) {
        let rows: Vec<String> = chunk
            .iter()
            .map(|(d, n)| format!("('{d}', {n}, 'bench')"))
            .collect();
        conn.batch_execute(&format!(
            "INSERT INTO partner_domain (domain, yacobot_id, assigned_by) VALUES {}",
            rows.join(",")
        ))?;
    }
    mapped.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut m = BufWriter::new(File::create(work.join("domain_map"))?);
    for (d, n) in &mapped {
        writeln!(m, "{d}\t{n}")?;
    }
    m.flush()?;
    Ok(())
}

/// The limit: one pass that splits lines and sums the hits column.
fn single_pass(path: &Path) -> anyhow::Result<(u64, u64)> {
    let mut input = BufReader::with_capacity(1 << 20, File::open(path)?);
    let (mut lines, mut hits) = (0u64, 0u64);
    let mut buf = Vec::with_capacity(1 << 20);
    let mut carry = Vec::new();
    loop {
        buf.clear();
        buf.extend_from_slice(&carry);
        carry.clear();
        let n = input.by_ref().take(1 << 20).read_to_end(&mut buf)?;
        if n == 0 && buf.is_empty() {
            break;
        }
        let end = if n == 0 {
            buf.len()
        } else {
            memchr::memrchr(b'\n', &buf).map(|i| i + 1).unwrap_or(0)
        };
        carry.extend_from_slice(&buf[end..]);
        for line in buf[..end].split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            lines += 1;
            if let Some(field) = line.split(|&b| b == b'\t').nth(5) {
                hits += field.iter().fold(0u64, |acc, d| {
                    acc * 10 + u64::from(d.wrapping_sub(b'0') % 10)
                });
            }
        }
        if n == 0 {
            break;
        }
    }
    Ok((lines.saturating_sub(1), hits))
}

/// CPU seconds (user + system) of the children waited for so far.
fn children_cpu_s() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map(|u| {
            let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 + v.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}

fn peak_children_rss_mb() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map(|u| u.max_rss() as f64 / 1024.0)
        .unwrap_or(0.0)
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let root = focuser_tests::repo_root();
    let work = a
        .work
        .clone()
        .unwrap_or_else(|| root.join("target/bench-master"));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let exe_dir = std::env::current_exe()?
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| anyhow!("no exe dir"))?;
    let master = exe_dir.join("master");
    if !master.exists() {
        return Err(anyhow!(
            "{} is missing: cargo build -p focuser-master (same profile)",
            master.display()
        ));
    }

    let t = Instant::now();
    let data = generate(&a, &work)?;
    let db = focuser_tests::TestDb::create().map_err(|e| anyhow!("{e}"))?;
    previous_state(&a, &work, &db)?;
    println!(
        "data: {} lines, {:.1} MB, {} URLs to draw from, {} domains (90 % mapped), {} nodes; generated in {:.1} s",
        a.lines,
        data.bytes as f64 / 1e6,
        a.urls,
        a.domains,
        a.nodes,
        t.elapsed().as_secs_f64()
    );

    // (b) the limit, twice (the first read may come from disk).
    settle()?;
    single_pass(&data.reflog)?;
    let t = Instant::now();
    let (lines, hits) = single_pass(&data.reflog)?;
    let pass = t.elapsed().as_secs_f64();
    if lines != a.lines {
        return Err(anyhow!(
            "single pass counted {lines} lines, not {}",
            a.lines
        ));
    }

    // (c) one master cycle, a process of its own (its peak RSS is ours to read).
    std::fs::create_dir_all(work.join("master/incoming"))?;
    std::fs::write(
        work.join("master/master.cf"),
        format!(
            "rootdir = {}\ndatabase = {}\nname = bench\nincoming_dir = incoming\nqueue_dir = queue\n\
             logfile = master.log\ndebuglevel = 40\nCycle.MemoryLimit = 1536\n",
            work.join("master").display(),
            db.url()
        ),
    )?;
    settle()?;
    let t = Instant::now();
    let out =
        Command::new(std::env::var("BENCH_WRAP").unwrap_or_else(|_| master.display().to_string()))
            .args(
                std::env::var("BENCH_WRAP")
                    .map(|_| vec![master.display().to_string()])
                    .unwrap_or_default(),
            )
            .arg("-c")
            .arg(work.join("master/master.cf"))
            .args(["--now", &stamp::format(data.now), "replay"])
            .arg(&data.reflog)
            .env_remove("DATABASE_URL")
            .output()?;
    let cycle = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(anyhow!(
            "master failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let rss = peak_children_rss_mb();
    // Steadier than wall time on a machine whose speed moves: what the cycle cost.
    let cpu = children_cpu_s();
    let mut master_forwarded = 0u64;
    let mut master_urls = HashSet::new();
    for node in std::fs::read_dir(work.join("master/queue"))? {
        for f in std::fs::read_dir(node?.path())? {
            let (_, records) = focuser_formats::queue::read(BufReader::new(File::open(f?.path())?))
                .map_err(|e| anyhow!("{e}"))?;
            master_forwarded += records.len() as u64;
            master_urls.extend(records.into_iter().map(|r| r.url));
        }
    }

    for phase in String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(" DEBUG ") || l.contains(" INFO "))
    {
        println!(
            "  master: {}",
            phase
                .split_once("  ")
                .map(|(_, m)| m)
                .unwrap_or(phase)
                .trim()
        );
    }
    if a.skip_classic {
        println!("(c) master cycle: {cycle:.2} s ({cpu:.2} CPU s), {:.0} lines/s; single pass {pass:.2} s; ratio {:.3}; peak RSS {rss:.0} MB", a.lines as f64 / cycle, pass / cycle);
        return Ok(());
    }

    // (a) the classic pipeline.
    settle()?;
    let t = Instant::now();
    let status = Command::new(root.join("bench/master/classic.sh"))
        .arg(&data.reflog)
        .arg(work.join("classic_current_log"))
        .arg(work.join("domain_map"))
        .arg(data.now.to_string())
        .arg(work.join("classic"))
        .status()
        .context("running bench/master/classic.sh")?;
    let classic = t.elapsed().as_secs_f64();
    if !status.success() {
        return Err(anyhow!("classic.sh failed"));
    }
    let classic_forwarded: u64 = std::fs::read_to_string(work.join("classic/forwarded"))?
        .trim()
        .parse()?;
    let mut classic_urls = HashSet::new();
    for f in std::fs::read_dir(work.join("classic/queue"))? {
        for line in BufReader::new(File::open(f?.path())?).lines() {
            if let Some(u) = line?.split('\t').next() {
                classic_urls.insert(u.to_string());
            }
        }
    }

    let rate = |secs: f64| a.lines as f64 / secs;
    println!("{:<34} {:>9} {:>14}", "stage", "seconds", "lines/s");
    println!(
        "{:<34} {:>9.2} {:>14.0}",
        "(a) classic sort/join/awk",
        classic,
        rate(classic)
    );
    println!(
        "{:<34} {:>9.2} {:>14.0}",
        "(b) single-pass read (the limit)",
        pass,
        rate(pass)
    );
    println!(
        "{:<34} {:>9.2} {:>14.0}",
        "(c) master cycle",
        cycle,
        rate(cycle)
    );
    println!(
        "master / classic:          {:>6.1}x   (target >= 25x)",
        classic / cycle
    );
    println!(
        "master / single pass:      {:>6.3}    (target >= 0.167)",
        pass / cycle
    );
    println!(
        "master peak RSS:           {:>6.0} MB (target < 2048 MB)",
        rss
    );
    println!("master CPU (user + sys):   {cpu:>6.2} s");
    println!("hits in the reflog:        {hits}");
    println!(
        "forwarded: master {master_forwarded} = classic {classic_forwarded}: {}",
        master_forwarded == classic_forwarded && master_urls == classic_urls
    );
    if master_urls != classic_urls {
        return Err(anyhow!(
            "master and the classic pipeline forwarded different URLs"
        ));
    }
    Ok(())
}
