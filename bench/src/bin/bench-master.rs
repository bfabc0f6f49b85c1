//! bench-master: the master cycle next to the classic sort/join/awk pipeline and a single
//! pass over the same reflog (bench/README.md). Everything is generated here, deterministically.
//!
//!     cargo build --release -p focuser-master -p focuser-bench
//!     target/release/bench-master --lines 10000000
//!
//! Needs the private database (scripts/db.sh up) for the domain map.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{anyhow, Context};
use clap::Parser;
use focuser_bench::reflog::{self, ReflogSize};
use focuser_formats::stamp;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    reflog: ReflogSize,
    /// Work directory [target/bench-master]
    #[arg(long)]
    work: Option<PathBuf>,
    /// Skip the classic pipeline (while working on the master)
    #[arg(long)]
    skip_classic: bool,
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
    let size = &a.reflog;
    let data = reflog::generate(size, &work)?;
    let db = focuser_tests::TestDb::create().map_err(|e| anyhow!("{e}"))?;
    reflog::previous_state(size, &work, &db)?;
    println!(
        "data: {} lines, {:.1} MB, {} URLs to draw from, {} domains (90 % mapped), {} nodes; generated in {:.1} s",
        a.reflog.lines,
        data.bytes as f64 / 1e6,
        a.reflog.urls,
        a.reflog.domains,
        a.reflog.nodes,
        t.elapsed().as_secs_f64()
    );

    // (b) the limit, twice (the first read may come from disk).
    reflog::settle()?;
    single_pass(&data.reflog)?;
    let t = Instant::now();
    let (lines, hits) = single_pass(&data.reflog)?;
    let pass = t.elapsed().as_secs_f64();
    if lines != a.reflog.lines {
        return Err(anyhow!(
            "single pass counted {lines} lines, not {}",
            a.reflog.lines
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
    reflog::settle()?;
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
        println!("(c) master cycle: {cycle:.2} s ({cpu:.2} CPU s), {:.0} lines/s; single pass {pass:.2} s; ratio {:.3}; peak RSS {rss:.0} MB", a.reflog.lines as f64 / cycle, pass / cycle);
        return Ok(());
    }

    // (a) the classic pipeline.
    reflog::settle()?;
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

    let rate = |secs: f64| a.reflog.lines as f64 / secs;
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
