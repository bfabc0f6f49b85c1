//! bench-resources: the resources worker over partner feeds served locally (the test HTTP
//! server), a first run (every item new) and a second run with 10 % of the items changed,
//! items/s written (vr_data + the resources segment store) next to `LOAD DATA` of the same
//! `vr_data` rows in the same run. See bench/README.md.
//!
//!     target/release/bench-resources                 # 200 resources x 5 000 items
//!     target/release/bench-resources --smoke         # 10 x 500
//!
//! Needs the private database (scripts/db.sh up) and the `mariadb` client (LOAD DATA LOCAL).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail};
use clap::Parser;
use focuser_schema::models::{
    DataFrom, GroupType, IndexType, NewOpenXmlFormat, NewVrOpenDatasource, NewVrResource, ResStatus,
};
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;
use focuser_yacobot::YacobotConfig;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 200)]
    resources: u32,
    #[arg(long, default_value_t = 5000)]
    items: u32,
    /// 10 resources x 500 items (the smoke test's size)
    #[arg(long)]
    smoke: bool,
    #[arg(long, default_value_t = 2)]
    writers: u32,
    /// The worker's debug log (each feed's parse, each run's phases) on stderr.
    #[arg(long)]
    verbose: bool,
    /// Leave the database (its name is printed) for a look at its tables afterwards.
    #[arg(long)]
    keep: bool,
    /// Work directory [target/bench-resources]
    #[arg(long)]
    work: Option<PathBuf>,
}

const COLUMNS: &str = "id, res_id, status_id, data_source_id, keyword, md5_sum, doc_id, data_status, status, update_type, content, create_date, update_date";

fn feed(r: u32, items: u32, version: u32) -> String {
    let mut s = String::with_capacity(items as usize * 160);
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<items>\n");
    for i in 0..items {
        // Version 1 changes every tenth item.
        let price = if version > 0 && i % 10 == 0 { i + 7 } else { i };
        s.push_str(&format!(
            "<item><id>r{r}-{i}</id><title>Item {i} of resource {r}, a partner offer</title><price>{price}.50</price><url>http://shop{r}.example/p/{i}</url></item>\n"
        ));
    }
    s.push_str("</items>\n");
    s
}

fn serve(server: &WebServer, a: &Args, version: u32) {
    for r in 0..a.resources {
        let host = format!("r{r}.bench");
        server.set(
            &host,
            "/feed.xml",
            Behaviour::fixed(200, "application/xml", feed(r, a.items, version)),
        );
    }
}

fn setup(db: &TestDb, server: &WebServer, a: &Args) -> anyhow::Result<()> {
    let c = &mut db.conn();
    for (label, key, req) in [
        ("id", true, false),
        ("title", false, true),
        ("price", false, false),
        ("url", false, false),
    ] {
        NewOpenXmlFormat {
            class_id: 1,
            label_name: label,
            parent_label: "item",
            xpath: "",
            is_key: key,
            is_index: label == "title",
            is_fullhit: false,
            is_mark: false,
            is_required: req,
            index_type: IndexType::KEYWORD,
            group_type: GroupType::NONE,
        }
        .insert(c)?;
    }
    for r in 0..a.resources {
        let host = format!("r{r}.bench");
        server.set(
            &host,
            "/sitemap.txt",
            Behaviour::text(&server.url(&host, "/feed.xml")),
        );
        server.set(&host, "/robots.txt", Behaviour::status(404));
        let res = NewVrResource {
            class_id: 1,
            res_name: &format!("bench-{r}"),
            data_group: "bench",
            data_from: DataFrom::PARTNER_FEED,
            frequency: 0,
            is_manual: false,
            res_status: ResStatus::Enabled,
            priority: 0,
            max_items: 0,
        }
        .insert(c)?;
        NewVrOpenDatasource {
            res_id: res.id,
            name: "partner",
            priority: 0,
            sitemap_url: &server.url(&host, "/sitemap.txt"),
        }
        .insert(c)?;
    }
    Ok(())
}

fn config(
    work: &Path,
    db: &TestDb,
    server: &WebServer,
    a: &Args,
) -> anyhow::Result<focuser_daemon::Config<YacobotConfig>> {
    let cf = work.join("yacobot.cf");
    std::fs::write(
        &cf,
        format!(
            "rootdir = {}\ndatabase = {}\nnode = bench\nLoader.Enable = 0\nCrawl.Enable = 0\nQargfilter.Enable = 0\n\
             debuglevel = {}\nResources.Enable = 1\nResources.Parallel = {}\nResources.Writers = {}\n\
             Fetch.Resolve = {}\nFetch.AllowPrivate = 127.0.0.1\nFetch.HostDelay = 0\nFetch.Connections = 32\n",
            work.display(),
            db.url(),
            if a.verbose { 40 } else { 20 },
            a.resources,
            a.writers,
            server.resolve().join(" ")
        ),
    )?;
    Ok(focuser_daemon::Config::load(&cf, None)?)
}

/// Runs SQL through the `mariadb` client, LOAD DATA LOCAL allowed; returns its output and
/// the seconds.
fn client(db: &TestDb, args: &[&str]) -> anyhow::Result<(Vec<u8>, f64)> {
    let t = Instant::now();
    let out = db.client().arg("--local-infile=1").args(args).output()?;
    if !out.status.success() {
        bail!("mariadb {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok((out.stdout, t.elapsed().as_secs_f64()))
}

fn number(db: &TestDb, sql: &str) -> anyhow::Result<u64> {
    let (out, _) = client(db, &["--batch", "--skip-column-names", "-e", sql])?;
    Ok(String::from_utf8_lossy(&out).trim().parse()?)
}

/// CPU seconds (user + system) of this process so far, all threads (the worker and the
/// test HTTP server).
fn own_cpu() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF)
        .map(|u| {
            let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 + v.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}

/// The database server's pid (it runs on this machine: scripts/db.sh), for its CPU time.
fn server_pid(db: &TestDb) -> Option<u32> {
    let (out, _) = client(
        db,
        &["--batch", "--skip-column-names", "-e", "SELECT @@pid_file"],
    )
    .ok()?;
    let path = String::from_utf8_lossy(&out).trim().to_string();
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// CPU seconds (user + system) of a process so far, from /proc (0 if unknown).
fn proc_cpu(pid: Option<u32>) -> f64 {
    let Some(stat) = pid.and_then(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
    else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // /proc counts in USER_HZ, 100 on Linux whatever the kernel's tick.
    (ticks(11) + ticks(12)) / 100.0
}

/// Wall and CPU seconds of a stage: (wall, own CPU, database server CPU).
struct Took(f64, f64, f64);

fn timed(server: Option<u32>, f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<Took> {
    let (c0, s0, t) = (own_cpu(), proc_cpu(server), Instant::now());
    f()?;
    Ok(Took(
        t.elapsed().as_secs_f64(),
        own_cpu() - c0,
        proc_cpu(server) - s0,
    ))
}

fn run(server: Option<u32>, cfg: focuser_daemon::Config<YacobotConfig>) -> anyhow::Result<Took> {
    timed(server, || focuser_yacobot::resources_once(cfg))
}

fn line(what: &str, n: u64, t: &Took) -> f64 {
    let rate = n as f64 / t.0;
    println!(
        "{what:<46} {:>7.2} s {rate:>9.0} items/s  cpu {:>6.2} s + db {:>6.2} s",
        t.0, t.1, t.2
    );
    rate
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() -> anyhow::Result<()> {
    let mut a = Args::parse();
    if a.smoke {
        a.resources = 10;
        a.items = 500;
    }
    let work = a
        .work
        .clone()
        .unwrap_or_else(|| focuser_tests::repo_root().join("target/bench-resources"))
        .join("bench-resources");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let _logging = focuser_daemon::logging::Logging::init(focuser_daemon::logging::LogSettings {
        progname: "bench-resources".into(),
        logfile: None,
        logconfig: None,
        debuglevel: if a.verbose { 40 } else { 20 },
    })?;
    let db = TestDb::create().map_err(|e| anyhow!("{e}"))?;
    let server = WebServer::start()?;
    setup(&db, &server, &a)?;
    serve(&server, &a, 0);
    let total = u64::from(a.resources) * u64::from(a.items);
    println!(
        "data: {} resources x {} items = {total} items, {:.1} MB of feeds; {} writers",
        a.resources,
        a.items,
        feed(0, a.items, 0).len() as f64 * f64::from(a.resources) / 1e6,
        a.writers
    );

    let pid = server_pid(&db);
    println!("load average before: {}", load_average());
    let first_t = run(pid, config(&work, &db, &server, &a)?)?;
    let live = number(&db, "SELECT COUNT(*) FROM vr_data WHERE status = 1")?;
    if live != total {
        bail!("first run: {live} items in vr_data, not {total}");
    }
    let first = line("(1) first run: every item new", total, &first_t);

    // LOAD DATA of the same rows into the emptied table.
    let dump = work.join("vr_data.tsv");
    let (rows, _) = client(
        &db,
        &[
            "--batch",
            "--raw",
            "-e",
            &format!("SELECT {COLUMNS} FROM vr_data"),
        ],
    )?;
    std::fs::write(&dump, rows)?;
    client(&db, &["-e", "TRUNCATE vr_data"])?;
    let load = timed(pid, || {
        client(
            &db,
            &["-e", &format!(
                "LOAD DATA LOCAL INFILE '{}' INTO TABLE vr_data FIELDS ESCAPED BY '' IGNORE 1 LINES ({COLUMNS})",
                dump.display()
            )],
        )?;
        Ok(())
    })?;
    if number(&db, "SELECT COUNT(*) FROM vr_data")? != total {
        bail!("LOAD DATA did not load every row");
    }
    let limit = line("limit: LOAD DATA of the same vr_data rows", total, &load);
    println!(
        "(1) ratio: {:.2} of LOAD DATA (target >= 0.40)",
        first / limit
    );

    // 10 % of every feed changed.
    serve(&server, &a, 1);
    let second_t = run(pid, config(&work, &db, &server, &a)?)?;
    let changed = number(&db, "SELECT COUNT(*) FROM vr_data WHERE update_type = 2")?;
    if changed != total / 10 {
        bail!("second run: {changed} items changed, not {}", total / 10);
    }
    line(
        "(2) second run: 10 % of the items changed",
        total,
        &second_t,
    );
    println!(
        "(2) {:.1}x faster than the first run (target >= 3x)",
        first_t.0 / second_t.0.max(1e-9)
    );
    println!("load average after: {}", load_average());
    let _ = std::fs::remove_dir_all(&work);
    if a.keep {
        println!("database kept: {}", db.name());
        std::mem::forget(db);
    }
    Ok(())
}
