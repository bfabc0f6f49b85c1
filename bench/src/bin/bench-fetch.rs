//! bench-fetch: the yacobot fetcher against a local nginx serving pages under many host names,
//! next to the benchmark's own plain libcurl multi loop (no politeness, no robots.txt: the limit
//! of this client on this machine) and `xargs -P 32 curl`; then with `Fetch.HostDelay = 1 s`
//! against the politeness ceiling (one request per host per second). See bench/README.md.

use std::collections::VecDeque;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use curl::easy::{Easy2, Handler, List, WriteError};
use curl::multi::{Easy2Handle, Multi};
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

/// One measured run.
struct Run {
    pages: usize,
    bytes: u64,
    seconds: f64,
    /// CPU seconds of this process (nginx not included).
    cpu: f64,
}

/// Runs `f`, noting the CPU time this process spent in it.
fn with_cpu(f: impl FnOnce() -> anyhow::Result<Run>) -> anyhow::Result<Run> {
    let before = own_cpu()?;
    let mut run = f()?;
    run.cpu = own_cpu()? - before;
    Ok(run)
}

fn own_cpu() -> anyhow::Result<f64> {
    cpu_of(nix::sys::resource::UsageWho::RUSAGE_SELF)
}

impl Run {
    fn pages_s(&self) -> f64 {
        self.pages as f64 / self.seconds
    }
    fn mb_s(&self) -> f64 {
        self.bytes as f64 / self.seconds / 1e6
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = Args::parse();
    if args.smoke {
        (args.pages, args.hosts, args.polite_seconds) = (200, 20, 2);
    }
    if args.hosts == 0 || args.pages < args.hosts {
        bail!("need at least one page per host");
    }
    std::fs::create_dir_all(&args.work)?;
    let dir = tempfile::Builder::new()
        .prefix("bench-fetch-")
        .tempdir_in(&args.work)?;
    let (urls, total_bytes) = make_site(dir.path(), &args)?;
    let nginx = Nginx::start(&args.nginx, dir.path())?;
    let urls: Vec<String> = urls
        .iter()
        .map(|(host, path)| format!("http://{host}:{}{path}", nginx.port))
        .collect();
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

/// The document root: `www/<host>/p<i>.html`, 5-20 KB each, page i on host i mod hosts.
fn make_site(dir: &Path, args: &Args) -> anyhow::Result<(Vec<(String, String)>, u64)> {
    let www = dir.join("www");
    let mut urls = Vec::with_capacity(args.pages);
    let mut total = 0u64;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for h in 0..args.hosts {
        std::fs::create_dir_all(www.join(host_name(h)))?;
    }
    for i in 0..args.pages {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let size = 5_000 + (x % 15_001) as usize;
        let host = host_name(i % args.hosts);
        let path = format!("/p{i}.html");
        let mut body =
            format!("<!DOCTYPE html><html><head><title>{host}{path}</title></head><body><p>")
                .into_bytes();
        body.resize(size - 19, b'a' + (i % 26) as u8);
        body.extend_from_slice(b"</p></body></html>\n");
        std::fs::write(www.join(&host).join(&path[1..]), &body)?;
        total += body.len() as u64;
        urls.push((host, path));
    }
    // nginx's workers may run as another user: everything readable.
    chmod_tree(dir)?;
    Ok((urls, total))
}

fn chmod_tree(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            chmod_tree(&entry.path())?;
        }
    }
    Ok(())
}

fn host_name(h: usize) -> String {
    format!("h{h}.bench.test")
}

/// A private nginx, not daemonised, stopped (and waited for) on drop.
struct Nginx {
    child: Child,
    port: u16,
}

impl Nginx {
    fn start(binary: &Path, dir: &Path) -> anyhow::Result<Nginx> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        for sub in ["tmp", "logs"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let d = dir.display();
        let conf = format!(
            "daemon off;\nworker_processes 2;\npid {d}/nginx.pid;\nerror_log {d}/logs/error.log warn;\n\
             events {{ worker_connections 8192; }}\n\
             http {{\n  access_log off;\n  log_not_found off;\n  sendfile on;\n  tcp_nopush on;\n\
               keepalive_requests 1000000;\n  keepalive_timeout 60s;\n\
               types {{ text/html html; text/plain txt; }}\n  default_type application/octet-stream;\n\
               client_body_temp_path {d}/tmp/body;\n  proxy_temp_path {d}/tmp/proxy;\n\
               fastcgi_temp_path {d}/tmp/fastcgi;\n  uwsgi_temp_path {d}/tmp/uwsgi;\n\
               scgi_temp_path {d}/tmp/scgi;\n\
               server {{\n    listen 127.0.0.1:{port} default_server;\n    server_name _;\n\
                 root {d}/www/$host;\n  }}\n}}\n"
        );
        let conf_path = dir.join("nginx.conf");
        std::fs::write(&conf_path, conf)?;
        let child = Command::new(binary)
            .arg("-p")
            .arg(dir)
            .arg("-e")
            .arg(dir.join("logs/error.log"))
            .arg("-c")
            .arg(&conf_path)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| {
                format!("starting {} (Debian package nginx-light)", binary.display())
            })?;
        let mut nginx = Nginx { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = nginx.child.try_wait()? {
                bail!("nginx exited at start ({status}); see {d}/logs/error.log");
            }
            if Instant::now() > deadline {
                bail!("nginx does not listen on {port} after 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(nginx)
    }

    fn stop(mut self) -> anyhow::Result<()> {
        self.terminate()
    }

    fn terminate(&mut self) -> anyhow::Result<()> {
        if self.child.try_wait()?.is_none() {
            let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
            // QUIT: graceful stop of the master and its workers.
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGQUIT)?;
            self.child.wait()?;
        }
        Ok(())
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if self.terminate().is_err() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn bench_config(port: u16, connections: usize) -> FetchConfig {
    FetchConfig {
        connections,
        per_host: 1,
        host_delay: Duration::ZERO,
        pending: 1 << 20,
        resolve: vec![format!("*:{port}:127.0.0.1")],
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

/// The plain loop's handler: counts body bytes.
struct Count(u64);

impl Handler for Count {
    fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        self.0 += data.len() as u64;
        Ok(data.len())
    }
}

/// A lane of the plain loop: the rest of one host's pages, fetched one after the other.
struct Lane<'a> {
    handle: Easy2Handle<Count>,
    host: String,
    rest: Vec<&'a String>,
}

/// (ii): `connections` transfers in flight on one multi handle, nothing else: no robots.txt, no
/// delays, one transfer per host at a time. Each transfer slot takes one host's pages in a row,
/// so that few connections are open and each is reused at once; or, with `in_turn` (ii'), the
/// hosts take turns, one page each, in the order the Fetcher's politeness gives them (every
/// host's connection stays open between two of its pages).
fn plain_loop(
    urls: &[String],
    port: u16,
    connections: usize,
    in_turn: bool,
) -> anyhow::Result<Run> {
    let mut multi = Multi::new();
    multi.set_max_connects(FetchConfig::default().keep_alive.max(connections))?;
    let mut by_host: std::collections::BTreeMap<String, Vec<&String>> = Default::default();
    for u in urls {
        let host = url::Url::parse(u)?.host_str().unwrap_or("").to_string();
        by_host.entry(host).or_default().push(u);
    }
    let mut hosts: VecDeque<(String, Vec<&String>)> = by_host
        .into_iter()
        .map(|(h, mut pages)| {
            pages.reverse();
            (h, pages)
        })
        .collect();
    let mut lanes: Vec<Option<Lane>> = Vec::new();
    let mut idle: Vec<Easy2<Count>> = Vec::new();
    let (mut pages, mut bytes) = (0, 0u64);
    let t0 = Instant::now();
    for lane in 0..connections {
        let started = next_page(
            lane,
            String::new(),
            Vec::new(),
            &mut hosts,
            &mut idle,
            &multi,
            port,
        )?;
        lanes.push(started);
    }
    while lanes.iter().any(Option::is_some) {
        multi.perform()?;
        let mut done = Vec::new();
        multi.messages(|m| {
            if let (Ok(lane), Some(r)) = (m.token(), m.result()) {
                done.push((lane, r));
            }
        });
        for (lane, result) in done {
            let Some(Lane { handle, host, rest }) = lanes.get_mut(lane).and_then(Option::take)
            else {
                continue;
            };
            let easy = multi.remove2(handle)?;
            result.with_context(|| format!("plain loop: {:?}", easy.effective_url()))?;
            if easy.response_code()? != 200 {
                bail!("plain loop: status {}", easy.response_code()?);
            }
            pages += 1;
            bytes += easy.get_ref().0;
            idle.push(easy);
            let (host, rest) = if in_turn && !rest.is_empty() {
                hosts.push_back((host, rest));
                (String::new(), Vec::new())
            } else {
                (host, rest)
            };
            lanes[lane] = next_page(lane, host, rest, &mut hosts, &mut idle, &multi, port)?;
        }
        if lanes.iter().any(Option::is_some) {
            multi.wait(&mut [], Duration::from_millis(100))?;
        }
    }
    Ok(Run {
        pages,
        bytes,
        seconds: t0.elapsed().as_secs_f64(),
        cpu: 0.0,
    })
}

/// Starts the next page of a lane's host, or of the next host when it has none left.
fn next_page<'a>(
    lane: usize,
    mut host: String,
    mut rest: Vec<&'a String>,
    hosts: &mut VecDeque<(String, Vec<&'a String>)>,
    idle: &mut Vec<Easy2<Count>>,
    multi: &Multi,
    port: u16,
) -> anyhow::Result<Option<Lane<'a>>> {
    if rest.is_empty() {
        let Some((h, r)) = hosts.pop_front() else {
            return Ok(None);
        };
        (host, rest) = (h, r);
    }
    let Some(url) = rest.pop() else {
        return Ok(None);
    };
    let mut easy = idle.pop().unwrap_or_else(|| Easy2::new(Count(0)));
    easy.get_mut().0 = 0;
    easy.url(url)?;
    let mut list = List::new();
    list.append(&format!("{host}:{port}:127.0.0.1"))?;
    easy.resolve(list)?;
    let mut handle = multi.add2(easy)?;
    handle.set_token(lane)?;
    Ok(Some(Lane { handle, host, rest }))
}

/// (iii): one curl process per URL, 32 at a time.
fn xargs_curl(urls: &[String], port: u16, dir: &Path) -> anyhow::Result<Run> {
    let list = dir.join("xargs-urls.txt");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&list)?);
    for url in urls {
        let host = url::Url::parse(url)?.host_str().unwrap_or("").to_string();
        writeln!(out, "--resolve {host}:{port}:127.0.0.1 {url}")?;
    }
    out.flush()?;
    drop(out);
    let cpu0 = children_cpu()?;
    let t0 = Instant::now();
    let output = Command::new("xargs")
        .args(["-P", "32", "-n", "3", "-a"])
        .arg(&list)
        .args([
            "curl",
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{size_download}\\n",
        ])
        .output()
        .context("running xargs curl")?;
    let seconds = t0.elapsed().as_secs_f64();
    // CPU of the curl processes: what bounds xargs-curl even on an idle machine.
    let cpu = children_cpu()? - cpu0;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "xargs-curl: {:.1} ms of CPU per page (curl processes): at most {:.0} pages/s on {cores} idle cores",
        cpu * 1e3 / urls.len() as f64,
        urls.len() as f64 * cores as f64 / cpu
    );
    if !output.status.success() {
        bail!("xargs curl: {}", String::from_utf8_lossy(&output.stderr));
    }
    let (mut pages, mut bytes) = (0, 0u64);
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let mut parts = line.split_whitespace();
        if parts.next() == Some("200") {
            pages += 1;
            bytes += parts.next().and_then(|b| b.parse().ok()).unwrap_or(0);
        }
    }
    Ok(Run {
        pages,
        bytes,
        seconds,
        cpu: 0.0,
    })
}

/// User and system seconds of the children waited for so far.
fn children_cpu() -> anyhow::Result<f64> {
    cpu_of(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
}

fn cpu_of(who: nix::sys::resource::UsageWho) -> anyhow::Result<f64> {
    let u = nix::sys::resource::getrusage(who)?;
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Ok(secs(u.user_time()) + secs(u.system_time()))
}
