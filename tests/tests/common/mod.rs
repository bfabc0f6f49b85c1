//! The test pipeline both end-to-end tests start: the real daemons through the init script,
//! a database per node, the sample web served in the test process (its request log is
//! checked), stopped whatever happens.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use focuser_tests::pipeline::{self, observe, Allow, Instance, Plan, Ports, Reflog, Run};
use focuser_tests::web::WebServer;
use focuser_tests::TestDb;

pub const NODES: usize = 3;
pub const RECEIVERS: usize = 2;
pub const SETTLE: Duration = Duration::from_secs(240);

/// The daemons of a test run, stopped (and the run directory kept) whatever happens.
pub struct Pipeline {
    pub run: Run,
    pub web: WebServer,
    pub dbs: Vec<TestDb>,
    _dir: tempfile::TempDir,
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        let (_, failed) = self.run.stop_all();
        for f in failed {
            eprintln!("{f}");
        }
    }
}

pub fn start_pipeline(phases: usize, paths_per_host: usize, host_delay: f64) -> Pipeline {
    start_pipeline_with(phases, paths_per_host, host_delay, false)
}

/// `bindings`: page analysis and bindings on (the sample model trained, the sample
/// dictionaries loaded, the bindings readers and the ad-server receiver started).
pub fn start_pipeline_with(
    phases: usize,
    paths_per_host: usize,
    host_delay: f64,
    bindings: bool,
) -> Pipeline {
    let bin_dir = pipeline::built_binaries().unwrap();
    let dbs: Vec<TestDb> = (0..=NODES).map(|_| TestDb::new()).collect();
    let dir = tempfile::Builder::new()
        .prefix("focuser-e2e-")
        .tempdir()
        .unwrap();
    let web = WebServer::start().unwrap();
    let plan = Plan {
        nodes: NODES,
        receivers: RECEIVERS,
        hosts: 45,
        paths_per_host,
        phases,
        reflog_lines: 1500,
        feeds: 3,
        // The feeds are fetched and their items checked like the pages'.
        feeds_on: true,
        multidoc: bindings,
        bindings,
        seed: 7,
        web_port: web.port(),
        host_delay,
        // The nodes' stores stay whole, to be compared with the receivers item by item.
        retention_check: 100_000,
        claim_ttl: 6,
        dir: dir.path().join("run"),
        bin_dir,
        repo: focuser_tests::repo_root(),
        master_db: dbs[0].url().to_string(),
        node_dbs: dbs[1..].iter().map(|d| d.url().to_string()).collect(),
        ports: Ports::free(NODES, RECEIVERS).unwrap(),
    };
    pipeline::sample::serve(&plan, &web).unwrap();
    let run = Run::prepare(plan, dbs[0].url(), &plan_node_dbs(&dbs)).unwrap();
    let p = Pipeline {
        run,
        web,
        dbs,
        _dir: dir,
    };
    p.run.start_all().unwrap();
    p
}

fn plan_node_dbs(dbs: &[TestDb]) -> Vec<String> {
    dbs[1..].iter().map(|d| d.url().to_string()).collect()
}

impl Pipeline {
    pub fn plan(&self) -> &Plan {
        &self.run.plan
    }

    pub fn settle(&self, what: &str) -> observe::Progress {
        let t = Instant::now();
        let p = self
            .run
            .wait_settled(SETTLE, Duration::from_secs(10), |p| {
                eprintln!("{what}: {}", p.line())
            })
            .unwrap_or_else(|e| panic!("{what}: {e}\n{}", self.logs()));
        eprintln!(
            "{what}: settled in {:.1} s: {}",
            t.elapsed().as_secs_f64(),
            p.line()
        );
        p
    }

    /// Every check of a settled pipeline; panics with all the problems found.
    pub fn check(&self, what: &str, reflogs: &[Reflog], allow: &Allow) -> pipeline::Report {
        let mut report = pipeline::check(self.plan(), reflogs, allow, true).unwrap();
        let web = pipeline::check::web_log(self.plan(), &self.web.log(), allow).unwrap();
        report.problems.extend(web);
        assert!(
            report.problems.is_empty(),
            "{what}:\n  - {}\n{}",
            report.problems.join("\n  - "),
            self.logs()
        );
        report
    }

    /// The last lines of every daemon's log, for a failure message.
    pub fn logs(&self) -> String {
        self.run
            .instances()
            .iter()
            .map(|i| {
                format!(
                    "--- {}:\n{}",
                    i.name,
                    pipeline::daemons::tail(&i.logfile(), 12)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn init(&self, i: &Instance, command: &str) {
        i.init_ok(self.plan(), command)
            .unwrap_or_else(|e| panic!("{e}\n{}", self.logs()));
    }
}
