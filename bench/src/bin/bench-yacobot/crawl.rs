//! Stages (b) and (c): yacobot's crawl worker (the scheduler's claims, focuser-fetch, the
//! archive's segments, the bookkeeping in `url`) over a generated site served by a private
//! nginx, the URLs due in the `url` table of a fresh database; next to the plain libcurl loop
//! (no database, no archive) and `xargs -P 32 curl` over the same URLs; then (c) with
//! `Fetch.HostDelay = 1 s` against the politeness ceiling of one page per host per second.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{anyhow, bail, Context};
use diesel::RunQueryDsl;
use focuser_bench::clients::{plain_loop, with_cpu, xargs_curl, Run};
use focuser_bench::site::{make_site, Nginx, Site};
use focuser_formats::segment::{Cursor, Position, Status};
use focuser_formats::urls;
use focuser_schema::models::NewUrl;
use focuser_tests::TestDb;

use crate::Args;

/// A row of the `url` table, owned.
struct Row {
    id: u64,
    url: String,
    domain: String,
    path_hash: u64,
    hits: u32,
}

/// The URLs as the loader leaves new ones: normalised, `hits` 1–7 (by id, so that every
/// priority level mixes hosts), `download_prio = 3 × hits`.
fn rows(urls: &[String]) -> anyhow::Result<Vec<Row>> {
    urls.iter()
        .map(|u| {
            let n = urls::normalize(u, urls::MAX_URL_LENGTH).map_err(|e| anyhow!("{u}: {e}"))?;
            Ok(Row {
                id: n.id,
                path_hash: urls::path_hash(&n.url),
                hits: 1 + (n.id % 7) as u32,
                url: n.url,
                domain: n.domain,
            })
        })
        .collect()
}

/// Empties `url` and makes `rows` due now.
fn fill(db: &TestDb, rows: &[Row]) -> anyhow::Result<()> {
    let mut c = db.conn();
    diesel::sql_query("TRUNCATE url").execute(&mut c)?;
    let now = chrono::Utc::now().naive_utc() - chrono::TimeDelta::seconds(5);
    for chunk in rows.chunks(1000) {
        let new: Vec<NewUrl> = chunk
            .iter()
            .map(|r| NewUrl {
                id: r.id,
                url: &r.url,
                domain: &r.domain,
                path_hash: r.path_hash,
                hits: r.hits,
                download_prio: 3 * u64::from(r.hits),
                updatetag: "",
                first_seen: now,
                last_hit: now,
                next_indexed: now,
            })
            .collect();
        diesel::insert_into(focuser_schema::schema::url::table)
            .values(&new)
            .execute(&mut c)?;
    }
    Ok(())
}

/// One number from the database.
fn number(db: &TestDb, sql: &str) -> anyhow::Result<i64> {
    let out = db
        .client()
        .args(["--batch", "--skip-column-names", "-e", sql])
        .output()?;
    if !out.status.success() {
        bail!("mariadb: {sql}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

/// The CPU seconds the database server has used so far (our private server: all of it is
/// this benchmark's).
fn server_cpu(db: &TestDb) -> Option<f64> {
    let out = db
        .client()
        .args(["--batch", "--skip-column-names", "-e", "SELECT @@pid_file"])
        .output()
        .ok()?;
    let pid_file = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let pid = std::fs::read_to_string(pid_file).ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).ok()?;
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // USER_HZ is 100 on Linux.
    Some(ticks / 100.0)
}

/// The server's counters of statements (`Questions`) and commits (`Com_commit`) so far.
fn server_counts(db: &TestDb) -> Option<(u64, u64)> {
    let out = db
        .client()
        .args(["--batch", "--skip-column-names", "-e"])
        .arg("SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_commit')")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
    };
    Some((value("Questions")?, value("Com_commit")?))
}

/// One crawl through yacobot's crawl worker, in a rootdir of its own under `dir`.
struct Crawl<'a> {
    a: &'a Args,
    dir: &'a Path,
    db: &'a TestDb,
    port: u16,
}

/// A crawl run, the database server's CPU seconds during it, and the statements and
/// commits it was asked for.
struct Crawled {
    run: Run,
    server_cpu: Option<f64>,
    server_counts: Option<(u64, u64)>,
    /// Pages booked in each second of the run (by `url.last_fetch`), for (c).
    per_second: Vec<i64>,
}

impl Crawl<'_> {
    fn run(&self, rows: &[Row], bytes: u64, host_delay: f64, n: usize) -> anyhow::Result<Crawled> {
        fill(self.db, rows)?;
        let root = self.dir.join(format!("yacobot-{n}"));
        std::fs::create_dir_all(&root)?;
        let cf = root.join("yacobot.cf");
        std::fs::write(
            &cf,
            format!(
                "rootdir = {}\ndatabase = {}\nnode = bench\nLoader.Enable = 0\nQargfilter.Enable = 0\n\
                 Fetch.Connections = {}\nFetch.PerHost = 1\nFetch.HostDelay = {host_delay}\n\
                 Fetch.Resolve = *:{}:127.0.0.1\nFetch.AllowPrivate = 127.0.0.1\ndebuglevel = {}\n",
                root.display(),
                self.db.url(),
                self.a.connections,
                self.port,
                if self.a.verbose { 40 } else { 20 }
            ),
        )?;
        let cfg = focuser_daemon::Config::load(&cf, None)?;
        let cpu0 = server_cpu(self.db);
        let counts0 = server_counts(self.db);
        let mut stats = None;
        let run = with_cpu(|| {
            let t = Instant::now();
            stats = Some(focuser_yacobot::crawl_once(cfg)?);
            Ok(Run {
                pages: 0,
                bytes: 0,
                seconds: t.elapsed().as_secs_f64(),
                cpu: 0.0,
            })
        })?;
        let server = server_cpu(self.db).zip(cpu0).map(|(b, a)| b - a);
        // Less the two statements of asking for the counts.
        let counts = server_counts(self.db)
            .zip(counts0)
            .map(|((q, c), (q0, c0))| (q.saturating_sub(q0 + 1), c - c0));
        let stats = stats.context("no figures")?;
        let pages = stats.pages.load(Ordering::Relaxed) as usize;
        let got = stats.bytes.load(Ordering::Relaxed);
        // Checked: every page fetched, archived with every byte, and booked.
        if pages != rows.len() || got != bytes {
            bail!(
                "crawl: {pages} pages, {got} bytes; expected {} and {bytes}",
                rows.len()
            );
        }
        let booked = number(
            self.db,
            "SELECT COUNT(*) FROM url WHERE fetch_state = 2 AND hits = 0 AND claimed_by IS NULL \
             AND archive_file IS NOT NULL",
        )?;
        let per_second = if host_delay > 0.0 {
            per_second(self.db)?
        } else {
            Vec::new()
        };
        let (items, item_bytes) = archived(&root.join("segments"))?;
        if booked as usize != rows.len() || items != rows.len() || item_bytes != bytes {
            bail!(
                "crawl: {booked} URLs booked, {items} items of {item_bytes} bytes archived; \
                 expected {} and {bytes}",
                rows.len()
            );
        }
        std::fs::remove_dir_all(&root)?;
        Ok(Crawled {
            run: Run {
                pages,
                bytes: got,
                ..run
            },
            server_cpu: server,
            server_counts: counts,
            per_second,
        })
    }
}

/// Pages booked in each second since the first booking.
fn per_second(db: &TestDb) -> anyhow::Result<Vec<i64>> {
    let out = db
        .client()
        .args(["--batch", "--skip-column-names", "-e"])
        .arg(
            "SELECT TIMESTAMPDIFF(SECOND, (SELECT MIN(last_fetch) FROM url), last_fetch), COUNT(*) \
             FROM url GROUP BY 1 ORDER BY 1",
        )
        .output()?;
    if !out.status.success() {
        bail!("mariadb: {}", String::from_utf8_lossy(&out.stderr));
    }
    let mut counts = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut f = line.split('\t').map(|v| v.trim().parse::<i64>());
        if let (Some(Ok(s)), Some(Ok(n))) = (f.next(), f.next()) {
            let s = usize::try_from(s)?;
            counts.resize(counts.len().max(s + 1), 0);
            counts[s] = n;
        }
    }
    Ok(counts)
}

/// The UPDATE items of the archive in `dir` and their content bytes.
fn archived(dir: &Path) -> anyhow::Result<(usize, u64)> {
    let mut cursor = Cursor::new(dir, Position::START, None);
    let (mut n, mut bytes) = (0, 0u64);
    while let Some(s) = cursor.next()? {
        if s.item.status == Status::Update {
            n += 1;
            bytes += s.item.content.len() as u64;
        }
    }
    Ok((n, bytes))
}

/// The database server's share of a crawl: CPU, statements and commits.
fn server_figures(c: &Crawled) -> String {
    let cpu = c
        .server_cpu
        .map_or("?".into(), |s| per_page(s, c.run.pages));
    let counts = c.server_counts.map_or("?".into(), |(q, commits)| {
        format!("{q} statements, {commits} commits")
    });
    format!("{cpu} CPU/page, {counts}")
}

fn per_page(cpu: f64, pages: usize) -> String {
    format!("{:.0} µs", cpu * 1e6 / pages as f64)
}

/// Stages (b) and/or (c), in a temporary directory under `work`.
pub fn stages(a: &Args, work: &Path, b: bool, c: bool) -> anyhow::Result<()> {
    std::fs::create_dir_all(work)?;
    let dir = tempfile::Builder::new()
        .prefix("bench-crawl-")
        .tempdir_in(work)?;
    let site = make_site(dir.path(), a.pages, a.hosts)?;
    let nginx = Nginx::start(&a.nginx, dir.path())?;
    let urls = site.urls(nginx.port);
    let rows = rows(&urls)?;
    let db = TestDb::create().map_err(|e| anyhow!("{e}"))?;
    println!(
        "crawl: {} pages ({:.1} MB) on {} hosts, nginx on 127.0.0.1:{}, Fetch.Connections = {}",
        urls.len(),
        site.bytes as f64 / 1e6,
        a.hosts,
        nginx.port,
        a.connections
    );
    let crawl = Crawl {
        a,
        dir: dir.path(),
        db: &db,
        port: nginx.port,
    };
    if b {
        stage_b(a, &crawl, &site, &urls, &rows, dir.path())?;
    }
    if c {
        stage_c(a, &crawl, &site, &rows)?;
    }
    nginx.stop()?;
    drop(dir);
    // The work directory goes too if this made it (stage (a) removes it as well).
    let _ = std::fs::remove_dir(work);
    Ok(())
}

fn stage_b(
    a: &Args,
    crawl: &Crawl<'_>,
    site: &Site,
    urls: &[String],
    rows: &[Row],
    dir: &Path,
) -> anyhow::Result<()> {
    let port = crawl.port;
    let (mut plain, mut turns, mut yacobot) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..a.repeat.max(1) {
        plain.push(with_cpu(|| plain_loop(urls, port, a.connections, false))?);
        turns.push(with_cpu(|| plain_loop(urls, port, a.connections, true))?);
        yacobot.push(crawl.run(rows, site.bytes, 0.0, n)?);
    }
    for (name, run) in plain.iter().chain(&turns).enumerate() {
        if run.pages != urls.len() || run.bytes != site.bytes {
            bail!(
                "plain loop run {name}: {} pages, {} bytes",
                run.pages,
                run.bytes
            );
        }
    }
    let list = |runs: &[&Run]| {
        let s: Vec<String> = runs
            .iter()
            .map(|r| format!("{:.2} ({} CPU/page)", r.seconds, per_page(r.cpu, r.pages)))
            .collect();
        s.join(" ")
    };
    let server: Vec<String> = yacobot.iter().map(server_figures).collect();
    println!(
        "runs (s): plain loop {}; hosts in turn {}; yacobot {}",
        list(&plain.iter().collect::<Vec<_>>()),
        list(&turns.iter().collect::<Vec<_>>()),
        list(&yacobot.iter().map(|c| &c.run).collect::<Vec<_>>()),
    );
    println!("yacobot runs, database server: {}", server.join("; "));
    let fastest = |runs: Vec<Run>| {
        runs.into_iter()
            .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
            .context("no run")
    };
    let plain = fastest(plain)?;
    let turns = fastest(turns)?;
    let yacobot = fastest(yacobot.into_iter().map(|c| c.run).collect())?;
    let xargs_rate = match (a.xargs_rate, a.no_xargs) {
        (Some(rate), _) => Some((rate, "reused".to_string())),
        (None, true) => None,
        (None, false) => {
            let x = xargs_curl(urls, port, dir)?;
            if x.pages != urls.len() || x.bytes != site.bytes {
                bail!("xargs-curl: {} pages, {} bytes", x.pages, x.bytes);
            }
            Some((x.pages_s(), format!("{:.2}", x.seconds)))
        }
    };
    println!(
        "{:<48} {:>8} {:>10} {:>8}",
        "stage", "seconds", "pages/s", "MB/s"
    );
    for (name, run) in [
        ("(b) plain libcurl multi loop (limit)", &plain),
        ("(b) plain loop, hosts in turn", &turns),
        ("(b) yacobot crawl, HostDelay 0", &yacobot),
    ] {
        println!(
            "{name:<48} {:>8.2} {:>10.0} {:>8.1}",
            run.seconds,
            run.pages_s(),
            run.mb_s()
        );
    }
    if let Some((rate, how)) = &xargs_rate {
        // "reused": --xargs-rate, a rate measured in an earlier run.
        println!("{:<48} {how:>8} {rate:>10.0}", "(b) xargs -P 32 curl");
        println!(
            "(b) yacobot / xargs-curl: {:.2} (target >= 2)",
            yacobot.pages_s() / rate
        );
    }
    println!(
        "(b) yacobot / plain loop: {:.2}; / plain loop with hosts in turn: {:.2}",
        yacobot.pages_s() / plain.pages_s(),
        yacobot.pages_s() / turns.pages_s()
    );
    Ok(())
}

fn stage_c(a: &Args, crawl: &Crawl<'_>, site: &Site, rows: &[Row]) -> anyhow::Result<()> {
    let per_host = a.polite_per_host.unwrap_or(usize::MAX).max(1);
    // Page i is on host i mod hosts: the first hosts × k pages are k a host.
    let n = (a.hosts * per_host).min(rows.len());
    let rows = &rows[..n];
    let bytes: u64 = site.pages[..n]
        .iter()
        .zip(rows)
        .map(|((host, path), _)| {
            std::fs::metadata(crawl.dir.join("www").join(host).join(&path[1..]))
                .map(|m| m.len())
                .unwrap_or(0)
        })
        .sum();
    let c = crawl.run(rows, bytes, 1.0, usize::MAX)?;
    println!(
        "(c) yacobot CPU/page {}; database server: {}",
        per_page(c.run.cpu, c.run.pages),
        server_figures(&c)
    );
    println!(
        "(c) pages booked per second of the run: {}",
        c.per_second
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let rate = c.run.pages_s();
    let ceiling = a.hosts as f64;
    println!(
        "(c) yacobot crawl, HostDelay 1 s: {} pages ({} a host) in {:.2} s: {rate:.0} pages/s; \
         ceiling {ceiling:.0}/s; {:.2} of it (target >= 0.80)",
        c.run.pages,
        n / a.hosts,
        c.run.seconds,
        rate / ceiling
    );
    Ok(())
}
