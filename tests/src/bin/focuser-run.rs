//! `focuser-run`: the main job's driver (`scripts/run.sh` is its shell wrapper). `up` sets up
//! and starts the whole pipeline on this machine, feeds it a reflog, waits until the
//! receivers hold every document, checks the result and prints a summary; `stop` stops every
//! daemon through the init script; `web` serves the sample web (started by `up`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::{Parser, Subcommand};
use focuser_tests::pipeline::{self, observe, Allow, Plan, Ports, Run};
use focuser_tests::web::WebServer;
use focuser_tests::{alive, poll};

#[derive(Parser)]
#[command(
    name = "focuser-run",
    about = "focuser's main job: the whole pipeline on this machine"
)]
struct Cli {
    /// The run directory (configs, rootdirs, logs, plan.json)
    #[arg(long, default_value = "var/run-main")]
    dir: PathBuf,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Set up, start, feed one reflog, wait, check and print a summary
    Up(UpArgs),
    /// Stop every daemon of the run (init script) and the sample web
    Stop,
    /// Exit 0 while a daemon of the run is alive (its pidfile's process exists)
    Running,
    /// Serve the sample web of the run's plan until SIGTERM
    Web,
}

#[derive(clap::Args)]
struct UpArgs {
    /// Where master, yacobot and reader are
    #[arg(long)]
    bin_dir: PathBuf,
    /// An account that owns the master's database and may create `<it>_node<N>`
    #[arg(long, env = "FOCUSER_RUN_ADMIN_URL")]
    admin_url: String,
    /// The daemons' account (rows only) on the same server
    #[arg(long, env = "FOCUSER_RUN_DAEMON_URL")]
    daemon_url: String,
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    #[arg(long, default_value_t = 2)]
    receivers: usize,
    #[arg(long, default_value_t = 300)]
    hosts: usize,
    /// Paths of each host the reflog draws from
    #[arg(long, default_value_t = 40)]
    paths: usize,
    #[arg(long, default_value_t = 100_000)]
    lines: usize,
    #[arg(long, default_value_t = 0.25)]
    host_delay: f64,
    /// Leave yacobot's resources worker (the partner feeds, and the reader per node for its
    /// store) out of the run
    #[arg(long)]
    no_feeds: bool,
    /// Leave page analysis out of the run (no sample model, `MultiDoc.Enable = 0`)
    #[arg(long)]
    no_multidoc: bool,
    /// Leave bindings out of the run (no dictionaries, `Bindings.Enable = 0`, no path binder,
    /// no ad-server receiver); --no-multidoc leaves them out too
    #[arg(long)]
    no_bindings: bool,
    /// Seconds to wait for the pipeline to settle
    #[arg(long, default_value_t = 240)]
    timeout: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let dir = match std::path::absolute(&cli.dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("focuser-run: {}: {e}", cli.dir.display());
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Cmd::Up(args) => up(&dir, args),
        Cmd::Stop => stop(&dir),
        Cmd::Running => {
            return if running(&dir) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(3)
            }
        }
        Cmd::Web => web(&dir),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("focuser-run: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn with_db(url: &str, db: &str) -> anyhow::Result<String> {
    focuser_tests::url_with_db(url, db).map_err(|e| anyhow!("{e}"))
}

fn err(e: focuser_tests::Error) -> anyhow::Error {
    anyhow!("{e}")
}

fn up(dir: &Path, a: UpArgs) -> anyhow::Result<()> {
    let t0 = Instant::now();
    if dir.join(pipeline::plan::PLAN_FILE).exists() {
        println!("stopping the previous run in {}", dir.display());
        stop(dir)?;
    }
    let master_db = focuser_tests::UrlParts::parse(&a.admin_url)
        .map_err(err)?
        .database;
    let node_db = |url: &str, n: usize| with_db(url, &format!("{master_db}_node{n}"));
    let web_port = Ports::free(0, 0)?.master;
    let plan = Plan {
        nodes: a.nodes,
        receivers: a.receivers,
        hosts: a.hosts,
        paths_per_host: a.paths,
        phases: 1,
        reflog_lines: a.lines,
        feeds: a.nodes.min(3),
        feeds_on: !a.no_feeds,
        multidoc: !a.no_multidoc,
        bindings: !a.no_multidoc && !a.no_bindings,
        seed: 20261124,
        web_port,
        host_delay: a.host_delay,
        retention_check: 5,
        claim_ttl: 120,
        dir: dir.to_path_buf(),
        bin_dir: std::path::absolute(&a.bin_dir)?,
        repo: focuser_tests::repo_root(),
        master_db: a.daemon_url.clone(),
        node_dbs: (1..=a.nodes)
            .map(|n| node_db(&a.daemon_url, n))
            .collect::<anyhow::Result<_>>()?,
        ports: Ports::free(a.nodes, a.receivers)?,
    };
    for b in ["master", "yacobot", "reader"] {
        if !plan.bin_dir.join(b).exists() {
            bail!(
                "{} is missing: build it first (scripts/run.sh does)",
                plan.bin_dir.join(b).display()
            );
        }
    }
    let admin_nodes: Vec<String> = (1..=a.nodes)
        .map(|n| node_db(&a.admin_url, n))
        .collect::<anyhow::Result<_>>()?;
    println!(
        "databases: {master_db} (master) and {master_db}_node1..{} (one per node): emptied, migrated, sample loaded",
        a.nodes
    );
    let run = Run::prepare(plan, &a.admin_url, &admin_nodes).map_err(err)?;
    let plan = &run.plan;
    if let Some(said) = &run.trained {
        println!(
            "sample model: yacobot train {} (labels mapped to the IAB catalog):",
            pipeline::multidoc::corpus(plan).display()
        );
        for l in pipeline::multidoc::trained_lines(said) {
            println!("  {l}");
        }
    }
    if !run.dictionaries.is_empty() {
        println!("sample dictionaries (bind/dicts/) loaded on every node with yacobot dict load:");
        for l in &run.dictionaries {
            println!("  {l}");
        }
    }
    start_web(plan)?;
    println!(
        "sample web: {} hosts on 127.0.0.1:{} ({} paths each, robots.txt, gone pages, {} feeds)",
        plan.hosts, plan.web_port, plan.paths_per_host, plan.feeds
    );
    let reflog = run.drop_reflog(0).map_err(err)?;
    println!(
        "reflog: {} lines ({} malformed, {} distinct URLs) in {}",
        reflog.lines,
        reflog.malformed,
        reflog.urls.len(),
        pipeline::daemons::incoming_dir(plan).display()
    );
    println!("starting the daemons through conf/init.d/focuser:");
    for i in run.instances() {
        match i.init_ok(plan, "start") {
            Ok(said) => println!("  {said}"),
            Err(e) => {
                let _ = stop(dir);
                bail!("{e}");
            }
        }
    }
    let started = Instant::now();
    let every = Duration::from_secs(5);
    run.wait_settled(Duration::from_secs(a.timeout), every, |p| {
        println!("  [{:>5.1} s] {}", t0.elapsed().as_secs_f64(), p.line())
    })
    .map_err(err)?;
    let settled = started.elapsed();
    let report = pipeline::check(
        plan,
        std::slice::from_ref(&reflog),
        &Allow::default(),
        false,
    )
    .map_err(err)?;
    print_summary(&run, &reflog, &report, t0.elapsed(), settled)?;
    if !report.problems.is_empty() {
        bail!("the check failed (the daemons are left running to look at)");
    }
    Ok(())
}

fn print_summary(
    run: &Run,
    reflog: &pipeline::Reflog,
    r: &pipeline::Report,
    total: Duration,
    settled: Duration,
) -> anyhow::Result<()> {
    let plan = &run.plan;
    let master = run.instance("master").map_err(err)?;
    let m = observe::status_json(&master).map_err(err)?;
    let per_node = |v: &[usize]| -> String {
        let parts: Vec<String> = v
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{} {n}", plan.node_name(i + 1)))
            .collect();
        format!("{}  (total {})", parts.join(", "), v.iter().sum::<usize>())
    };
    println!("\n=== summary");
    println!(
        "reflog lines       {} ({} rejected by the master)",
        reflog.lines,
        observe::figure_sum(&m, "master_rejected_total")
    );
    println!("forwarded URLs     {}", per_node(&r.forwarded));
    println!("pages fetched      {}", per_node(&r.fetched));
    println!("gone (404)         {}", per_node(&r.gone));
    println!("not fetched        {}  (robots.txt)", per_node(&r.failed));
    if plan.feeds_on {
        println!("feed items         {}", per_node(&r.feed_items));
    } else {
        println!(
            "feed items         not fetched: the resources worker is off in this run (--no-feeds)"
        );
    }
    for line in pipeline::multidoc::summary(plan, &r.analysis, &r.labels, per_node) {
        println!("{line}");
    }
    for line in pipeline::bindings::summary(plan, r.bindings.as_ref(), per_node) {
        println!("{line}");
    }
    let recv: Vec<String> = r
        .received
        .iter()
        .map(|(k, (u, d))| format!("recv{k} {} ({u} UPDATE, {d} DELETE)", u + d))
        .collect();
    println!("items received     {}", recv.join(", "));
    println!(
        "time taken         {:.1} s ({:.1} s from the daemons' start until the receivers held every document)",
        total.as_secs_f64(),
        settled.as_secs_f64()
    );
    if r.problems.is_empty() {
        let analysed = if plan.multidoc {
            "; every page fetched was analysed"
        } else {
            ""
        };
        let bound = if plan.bindings {
            "; every binding and stub the nodes hold reached the ad server, each change once"
        } else {
            ""
        };
        println!("check              every forwarded URL went to the node owning its domain and was crawled there; every document reached the receiver its doc id hashes to, once{analysed}{bound}");
    } else {
        println!("check              FAILED:");
        for p in &r.problems {
            println!("  - {p}");
        }
    }
    println!("\n=== status pages");
    for i in run.instances() {
        println!("{:<16} {}", i.name, i.status_url());
    }
    println!(
        "\nconfigs and logs:  {}/conf, {}/<daemon>/logs",
        plan.dir.display(),
        plan.dir.display()
    );
    // A list of addresses is the cluster's nodes (run.sh --cluster): its own script.
    let addresses = focuser_schema::failover::split_addresses(&plan.master_db);
    let master_db = focuser_tests::UrlParts::parse(addresses[0])
        .map(|p| p.database)
        .unwrap_or_default();
    let sql = if addresses.len() > 1 {
        "scripts/cluster.sh sql 1"
    } else {
        "scripts/db.sh sql"
    };
    println!(
        "SQL:               {sql} --table < conf/admin.sql   (the master's database; FOCUSER_DB_NAME={master_db}_node1 for node 1's)"
    );
    Ok(())
}

fn web_pidfile(dir: &Path) -> PathBuf {
    dir.join("web/web.pid")
}

/// Starts `focuser-run web` in a process group of its own (Ctrl-C in the terminal does not
/// reach it) and waits until it answers.
fn start_web(plan: &Plan) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    std::fs::create_dir_all(plan.dir.join("web"))?;
    let log = std::fs::File::create(plan.dir.join("web/web.log"))?;
    Command::new(std::env::current_exe()?)
        .arg("--dir")
        .arg(&plan.dir)
        .arg("web")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("starting the sample web")?;
    let answers = || {
        web_pidfile(&plan.dir).exists() && observe::http_get(plan.web_port, "/robots.txt").is_ok()
    };
    if poll(Duration::from_secs(30), answers) {
        return Ok(());
    }
    bail!(
        "the sample web did not answer within 30 s (see {}/web/web.log)",
        plan.dir.display()
    )
}

fn web(dir: &Path) -> anyhow::Result<()> {
    let plan = Plan::load(dir)?;
    let server = WebServer::start_on(&format!("127.0.0.1:{}", plan.web_port))
        .with_context(|| format!("listening on 127.0.0.1:{}", plan.web_port))?;
    pipeline::sample::serve(&plan, &server).map_err(anyhow::Error::msg)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    std::fs::write(web_pidfile(dir), format!("{}\n", std::process::id()))?;
    println!("sample web on 127.0.0.1:{}", plan.web_port);
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(200));
    }
    println!(
        "sample web: {} requests served; stopping",
        server.log().len()
    );
    let _ = std::fs::remove_file(web_pidfile(dir));
    Ok(())
}

fn running(dir: &Path) -> bool {
    let Ok(run) = Run::open(dir) else {
        return false;
    };
    run.instances().iter().filter_map(|i| i.pid()).any(alive)
}

fn stop(dir: &Path) -> anyhow::Result<()> {
    let run = Run::open(dir).map_err(err)?;
    let (said, failed) = run.stop_all();
    for s in &said {
        println!("  {s}");
    }
    for f in &failed {
        eprintln!("{f}");
    }
    if let Some(pid) = std::fs::read_to_string(web_pidfile(dir))
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok())
    {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
        poll(Duration::from_secs(10), || !alive(pid));
        println!("sample web stopped");
    }
    if failed.is_empty() {
        Ok(())
    } else {
        bail!("{} daemons did not stop cleanly", failed.len())
    }
}
