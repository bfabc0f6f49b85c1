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
use focuser_schema::models::{NewOpenXmlFormat, NewVrOpenDatasource, NewVrResource};
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
            index_type: 0,
            group_type: 0,
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
            data_from: 0,
            frequency: 0,
            is_manual: false,
            res_status: 1,
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
             debuglevel = 20\nResources.Enable = 1\nResources.Parallel = {}\nResources.Writers = {}\n\
             Fetch.Resolve = {}\nFetch.HostDelay = 0\nFetch.Connections = 32\n",
            work.display(),
            db.url(),
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

fn run(cfg: focuser_daemon::Config<YacobotConfig>) -> anyhow::Result<f64> {
    let t = Instant::now();
    focuser_yacobot::resources_once(cfg)?;
    Ok(t.elapsed().as_secs_f64())
}

fn line(what: &str, n: u64, secs: f64) -> f64 {
    let rate = n as f64 / secs;
    println!("{what:<52} {secs:>8.2} s {rate:>12.0} items/s");
    rate
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
        debuglevel: 20,
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

    let first_secs = run(config(&work, &db, &server, &a)?)?;
    let live = number(&db, "SELECT COUNT(*) FROM vr_data WHERE status = 1")?;
    if live != total {
        bail!("first run: {live} items in vr_data, not {total}");
    }
    let first = line("(1) first run: every item new", total, first_secs);

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
    let (_, secs) = client(
        &db,
        &["-e", &format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE vr_data FIELDS ESCAPED BY '' IGNORE 1 LINES ({COLUMNS})",
            dump.display()
        )],
    )?;
    if number(&db, "SELECT COUNT(*) FROM vr_data")? != total {
        bail!("LOAD DATA did not load every row");
    }
    let limit = line("limit: LOAD DATA of the same vr_data rows", total, secs);
    println!(
        "(1) ratio: {:.2} of LOAD DATA (target >= 0.40)",
        first / limit
    );

    // 10 % of every feed changed.
    serve(&server, &a, 1);
    let secs2 = run(config(&work, &db, &server, &a)?)?;
    let changed = number(&db, "SELECT COUNT(*) FROM vr_data WHERE update_type = 2")?;
    if changed != total / 10 {
        bail!("second run: {changed} items changed, not {}", total / 10);
    }
    line("(2) second run: 10 % of the items changed", total, secs2);
    println!(
        "(2) {:.1}x faster than the first run (target >= 3x)",
        first_secs / secs2.max(1e-9)
    );
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}
