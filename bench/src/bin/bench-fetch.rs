//! bench-fetch: the yacobot fetcher against a local nginx serving pages under many host names,
//! next to the benchmark's own plain libcurl multi loop (no politeness, no robots.txt: the limit
//! of this client on this machine) and `xargs -P 32 curl`; then with `Fetch.HostDelay = 1 s`
//! against the politeness ceiling (one request per host per second). See bench/README.md.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use focuser_bench::clients::{plain_loop, with_cpu, xargs_curl, Run};
use focuser_bench::site::{make_site, Nginx};
use focuser_fetch::{FetchConfig, Fetcher, Outcome, Request};

#[derive(Parser)]
struct Args {
    /// Pages to fetch (5-20 KB each)
    #[arg(long, default_value_t = 10_000)]
    pages: usize,
    /// Host names the pages are spread over
    #[arg(long, default_value_t = 1_000)]
    hosts: usize,
    /// Seconds of the run with HostDelay = 1 s
    #[arg(long, default_value_t = 10)]
    polite_seconds: u64,
    /// Transfers in flight (Fetch.Connections, and the plain loop's)
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Runs of (i) and (ii), alternating; the fastest of each counts (the machine is shared)
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Leave out (iii), which takes minutes on a busy machine
    #[arg(long)]
    no_xargs: bool,
    /// 200 pages on 20 hosts, 2 s of politeness: the size bench/tests/smoke.rs runs
    #[arg(long)]
    smoke: bool,
    /// Where the document root and nginx's files go (a temporary directory is made inside)
    #[arg(long, default_value = "/var/tmp")]
    work: PathBuf,
    #[arg(long, default_value = "/usr/sbin/nginx")]
    nginx: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let mut args = Args::parse();
    if args.smoke {
        (args.pages, args.hosts, args.polite_seconds) = (200, 20, 2);
    }
    std::fs::create_dir_all(&args.work)?;
    let dir = tempfile::Builder::new()
        .prefix("bench-fetch-")
        .tempdir_in(&args.work)?;
    let site = make_site(dir.path(), args.pages, args.hosts)?;
    let total_bytes = site.bytes;
    let nginx = Nginx::start(&args.nginx, dir.path())?;
    let urls = site.urls(nginx.port);
    println!(
        "bench-fetch: {} pages ({:.1} MB) on {} hosts, nginx on 127.0.0.1:{}, {} connections",
        urls.len(),
        total_bytes as f64 / 1e6,
        args.hosts,
        nginx.port,
        args.connections
    );

    let (mut plain, mut turns, mut fetcher) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..args.repeat.max(1) {
        plain.push(with_cpu(|| {
            plain_loop(&urls, nginx.port, args.connections, false)
        })?);
        turns.push(with_cpu(|| {
            plain_loop(&urls, nginx.port, args.connections, true)
        })?);
        fetcher.push(with_cpu(|| {
            fetcher_run(&urls, nginx.port, args.connections)
        })?);
    }
    let seconds = |runs: &[Run]| {
        let s: Vec<String> = runs
            .iter()
            .map(|r| {
                format!(
                    "{:.2} ({:.0} µs CPU/page)",
                    r.seconds,
                    r.cpu * 1e6 / r.pages as f64
                )
            })
            .collect();
        s.join(" ")
    };
    println!(
        "runs (s): plain loop {}; hosts in turn {}; fetcher {}",
        seconds(&plain),
        seconds(&turns),
        seconds(&fetcher)
    );
    let fastest = |runs: Vec<Run>| {
        runs.into_iter()
            .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
            .context("no run")
    };
    let (plain, turns, fetcher) = (fastest(plain)?, fastest(turns)?, fastest(fetcher)?);
    let xargs = if args.no_xargs {
        None
    } else {
        Some(xargs_curl(&urls, nginx.port, dir.path())?)
    };
    for (name, run) in [
        ("plain", Some(&plain)),
        ("turns", Some(&turns)),
        ("fetcher", Some(&fetcher)),
        ("xargs", xargs.as_ref()),
    ] {
        let Some(run) = run else { continue };
        if run.pages != urls.len() || run.bytes != total_bytes {
            bail!(
                "{name}: {} pages, {} bytes; expected {} and {total_bytes}",
                run.pages,
                run.bytes,
                urls.len()
            );
        }
    }
    println!(
        "{:<46} {:>8} {:>10} {:>8}",
        "stage", "seconds", "pages/s", "MB/s"
    );
    for (name, run) in [
        ("(ii) plain libcurl multi loop (limit)", Some(&plain)),
        ("(ii') plain loop, hosts in turn", Some(&turns)),
        ("(iii) xargs -P 32 curl", xargs.as_ref()),
        ("(i) Fetcher, HostDelay 0", Some(&fetcher)),
    ] {
        let Some(run) = run else { continue };
        println!(
            "{name:<46} {:>8.2} {:>10.0} {:>8.1}",
            run.seconds,
            run.pages_s(),
            run.mb_s()
        );
    }
    if let Some(xargs) = &xargs {
        let ratio = fetcher.pages_s() / xargs.pages_s();
        println!("fetcher / xargs-curl: {ratio:.2} (target >= 2)");
    }
    println!(
        "fetcher / plain loop: {:.2}; fetcher / plain loop with hosts in turn: {:.2}",
        fetcher.pages_s() / plain.pages_s(),
        fetcher.pages_s() / turns.pages_s()
    );

    let secs = args.polite_seconds;
    let (pages, requests) = polite_run(&urls, nginx.port, args.connections, secs)?;
    let ceiling = args.hosts as f64;
    println!(
        "(iv) Fetcher, HostDelay 1 s, {secs} s: {:.0} pages/s, {:.0} requests/s (robots.txt included); \
         ceiling {ceiling:.0}/s; pages {:.2} of it (target >= 0.80)",
        pages as f64 / secs as f64,
        requests as f64 / secs as f64,
        pages as f64 / secs as f64 / ceiling
    );
    nginx.stop()?;
    Ok(())
}

fn bench_config(port: u16, connections: usize) -> FetchConfig {
    FetchConfig {
        connections,
        per_host: 1,
        host_delay: Duration::ZERO,
        pending: 1 << 20,
        resolve: vec![format!("*:{port}:127.0.0.1")],
        allow_private: vec!["127.0.0.1".into()],
        ..FetchConfig::default()
    }
}

/// (i): every URL through the Fetcher, politeness delay 0 (robots.txt still asked per host).
fn fetcher_run(urls: &[String], port: u16, connections: usize) -> anyhow::Result<Run> {
    let mut f = Fetcher::new(bench_config(port, connections))?;
    let t0 = Instant::now();
    for (i, url) in urls.iter().enumerate() {
        f.submit(Request {
            token: i as u64,
            url: url.clone(),
        });
    }
    let (mut pages, mut bytes) = (0, 0u64);
    while f.pending() > 0 {
        for c in f.perform(Duration::from_millis(100))? {
            match c.outcome {
                Outcome::Fetched(doc) => {
                    pages += 1;
                    bytes += doc.body.len() as u64;
                }
                other => bail!("{}: {other:?}", c.request.url),
            }
        }
    }
    Ok(Run {
        pages,
        bytes,
        seconds: t0.elapsed().as_secs_f64(),
        cpu: 0.0,
    })
}

/// (iv): HostDelay 1 s for a fixed time; pages fetched and requests made (robots.txt included).
fn polite_run(
    urls: &[String],
    port: u16,
    connections: usize,
    secs: u64,
) -> anyhow::Result<(usize, u64)> {
    let mut cfg = bench_config(port, connections);
    cfg.host_delay = Duration::from_secs(1);
    let mut f = Fetcher::new(cfg)?;
    for (i, url) in urls.iter().enumerate() {
        f.submit(Request {
            token: i as u64,
            url: url.clone(),
        });
    }
    let end = Instant::now() + Duration::from_secs(secs);
    let mut pages = 0;
    let mut started_before_end = 0;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        for c in f.perform(end - now)? {
            if matches!(c.outcome, Outcome::Fetched(_)) {
                pages += 1;
            }
        }
        started_before_end = f.stats().transfers;
    }
    // Requests started in the window; the ones still in flight are not counted as pages.
    Ok((pages, started_before_end - f.in_flight() as u64))
}
