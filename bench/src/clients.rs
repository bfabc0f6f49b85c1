//! The reference clients: the benchmark's own plain libcurl multi loop (no politeness, no
//! robots.txt, no database: the limit of this client on this machine) and `xargs -P 32 curl`
//! (one curl process per URL); and the CPU-time helpers every stage uses.

use std::collections::VecDeque;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use curl::easy::{Easy2, Handler, List, WriteError};
use curl::multi::{Easy2Handle, Multi};
use focuser_fetch::FetchConfig;

/// One measured run.
pub struct Run {
    pub pages: usize,
    pub bytes: u64,
    pub seconds: f64,
    /// CPU seconds of this process (nginx not included).
    pub cpu: f64,
}

/// Runs `f`, noting the CPU time this process spent in it.
pub fn with_cpu(f: impl FnOnce() -> anyhow::Result<Run>) -> anyhow::Result<Run> {
    let before = own_cpu()?;
    let mut run = f()?;
    run.cpu = own_cpu()? - before;
    Ok(run)
}

pub fn own_cpu() -> anyhow::Result<f64> {
    cpu_of(nix::sys::resource::UsageWho::RUSAGE_SELF)
}

impl Run {
    pub fn pages_s(&self) -> f64 {
        self.pages as f64 / self.seconds
    }
    pub fn mb_s(&self) -> f64 {
        self.bytes as f64 / self.seconds / 1e6
    }
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
pub fn plain_loop(
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
pub fn xargs_curl(urls: &[String], port: u16, dir: &Path) -> anyhow::Result<Run> {
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
pub fn children_cpu() -> anyhow::Result<f64> {
    cpu_of(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
}

pub fn cpu_of(who: nix::sys::resource::UsageWho) -> anyhow::Result<f64> {
    let u = nix::sys::resource::getrusage(who)?;
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Ok(secs(u.user_time()) + secs(u.system_time()))
}
