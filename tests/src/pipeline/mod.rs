//! The whole pipeline on one machine — master, a yacobot and a reader per node, receivers,
//! a sample web — set up and driven the way an operator would: config files made from
//! `conf/`, daemons started and signalled through the shipped init script, progress read
//! from their status pages, databases and directories. `focuser-run` (the README's
//! `scripts/run.sh`) and the end-to-end test both drive it through [`Run`].
//!
//! ```text
//! reflog ─▶ master ─queue/N/*.q─▶ reader-ybN (sendfile) ─▶ recv1/inbox/master1-ybN ─▶ yacobot-ybN
//!   yacobot-ybN ─fetch─▶ sample web;  yacobot-ybN ─segments─▶ reader-ybN ─items─▶ recv1, recv2
//!   yacobot-ybN ─bindings─▶ reader-bind-ybN ─ad-server items─▶ adserver1   (Plan::bindings)
//!   yacobot-ybN ─stubs─▶ reader-stubs-ybN ─ad-server items─▶ adserver1      (Plan::bindings)
//! ```

pub mod adserver;
pub mod bindings;
pub mod check;
pub mod configs;
pub mod daemons;
pub mod db;
pub mod multidoc;
pub mod observe;
pub mod pages;
pub mod plan;
pub mod sample;
pub mod stubs;

use std::time::{Duration, Instant};

pub use check::{check, Allow, Report};
pub use daemons::{Instance, Kind};
pub use plan::{Plan, Ports};
pub use sample::Reflog;

use crate::Error;

/// A pipeline whose directories, configs and databases are ready.
pub struct Run {
    pub plan: Plan,
    /// What `yacobot train` printed of the sample model (with `Plan::multidoc`, after
    /// [`Run::prepare`]).
    pub trained: Option<String>,
    /// What `yacobot dict load` printed on the first node (with `Plan::bindings`).
    pub dictionaries: Vec<String>,
}

impl Run {
    /// Makes the run directory (wiping an old one), empty migrated databases with the
    /// sample in them, every config file, and with `Plan::multidoc` the sample model. `admin_master` and `admin_nodes` are accounts
    /// that own the databases the plan names.
    pub fn prepare(plan: Plan, admin_master: &str, admin_nodes: &[String]) -> Result<Run, Error> {
        if plan.dir.exists() {
            std::fs::remove_dir_all(&plan.dir)
                .map_err(|e| format!("{}: {e}", plan.dir.display()))?;
        }
        std::fs::create_dir_all(&plan.dir)?;
        plan.save()?;
        db::fresh(admin_master)?;
        for url in admin_nodes {
            db::fresh(url)?;
        }
        db::load_sample(&plan, admin_master, admin_nodes)?;
        daemons::write_all(&plan)?;
        let trained = match plan.multidoc {
            true => Some(multidoc::train_sample(&plan)?),
            false => None,
        };
        let dictionaries = match plan.bindings {
            true => bindings::load_dictionaries(&plan)?,
            false => Vec::new(),
        };
        Ok(Run {
            plan,
            trained,
            dictionaries,
        })
    }

    /// A run whose plan is saved in `dir`.
    pub fn open(dir: &std::path::Path) -> Result<Run, Error> {
        Ok(Run {
            plan: Plan::load(dir)?,
            trained: None,
            dictionaries: Vec::new(),
        })
    }

    pub fn instances(&self) -> Vec<Instance> {
        daemons::instances(&self.plan)
    }

    /// The instance called `name` (`master`, `yacobot-yb2`, `reader-yb1`, `recv2`).
    pub fn instance(&self, name: &str) -> Result<Instance, Error> {
        self.instances()
            .into_iter()
            .find(|i| i.name == name)
            .ok_or_else(|| format!("no daemon {name} in this run").into())
    }

    /// Writes phase `phase`'s reflog and renames it into the master's incoming directory,
    /// as an ad server does.
    pub fn drop_reflog(&self, phase: usize) -> Result<Reflog, Error> {
        let name = format!("reflog-{:03}.log", phase + 1);
        let tmp = self.plan.dir.join("master").join(format!(".{name}"));
        let now = chrono::Utc::now().timestamp();
        let reflog = sample::write_reflog(&self.plan, phase, now, &tmp)?;
        std::fs::rename(&tmp, daemons::incoming_dir(&self.plan).join(&name))?;
        Ok(reflog)
    }

    /// Starts every daemon through the init script, in order; the first failure stops it.
    pub fn start_all(&self) -> Result<(), Error> {
        for i in self.instances() {
            i.init_ok(&self.plan, "start")?;
        }
        Ok(())
    }

    /// Stops every daemon through the init script, in reverse order; returns what the
    /// script said of each, and the failures. A daemon without its config was never started
    /// (a run that failed before writing it, e.g. with the database down): nothing to stop.
    pub fn stop_all(&self) -> (Vec<String>, Vec<String>) {
        let (mut said, mut failed) = (Vec::new(), Vec::new());
        for i in self.instances().iter().rev() {
            if !i.config.exists() {
                said.push(format!("{}: never set up, nothing to stop", i.name));
                continue;
            }
            match i.init_ok(&self.plan, "stop") {
                Ok(s) => said.push(s),
                Err(e) => failed.push(e),
            }
        }
        (said, failed)
    }

    /// Names of the daemons the init script says are running.
    pub fn running(&self) -> Vec<String> {
        self.instances()
            .into_iter()
            .filter(|i| {
                i.init(&self.plan, "status")
                    .is_ok_and(|o| o.status.success())
            })
            .map(|i| i.name)
            .collect()
    }

    /// Waits until nothing is left to do anywhere (seen twice, a second apart), calling
    /// `report` with what it sees every `every`. An error after `timeout`, with the last look.
    pub fn wait_settled(
        &self,
        timeout: Duration,
        every: Duration,
        mut report: impl FnMut(&observe::Progress),
    ) -> Result<observe::Progress, Error> {
        let start = Instant::now();
        let mut last_report = Instant::now();
        // Settled at two looks in a row. With bindings on, the path binder must also have
        // made a whole pass after the first look (every binding was stored by then: the
        // analysis lag was 0), and the senders be done at a look after that pass too.
        let (mut settled_at, mut stubs_done): (Option<observe::Progress>, bool) = (None, false);
        loop {
            let p = observe::progress(&self.plan)?;
            if last_report.elapsed() >= every {
                last_report = Instant::now();
                report(&p);
            }
            if !p.settled() {
                (settled_at, stubs_done) = (None, false);
            } else if let Some(then) = &settled_at {
                if !self.plan.bindings || stubs_done {
                    return Ok(p);
                }
                stubs_done = p.stubs_since(then);
            } else {
                settled_at = Some(p.clone());
            }
            if start.elapsed() > timeout {
                return Err(format!(
                    "the pipeline did not settle within {timeout:?}; last look: {}",
                    p.line()
                )
                .into());
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// The directory of the daemons' binaries for a test: the test's own profile directory,
/// after `cargo build` of master, yacobot and reader there (a no-op when `cargo nextest
/// --workspace` has just built them; needed when only this crate's tests were built).
pub fn built_binaries() -> Result<std::path::PathBuf, Error> {
    let exe = std::env::current_exe()?;
    // target/<profile>/deps/<test>
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .ok_or("the test binary is not in target/<profile>/deps")?;
    let target = dir.parent().ok_or("no target directory")?;
    let profile = match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_string(),
        Some(p) => p.to_string(),
        None => return Err("no profile directory".into()),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(crate::repo_root())
        .env("CARGO_TARGET_DIR", target)
        .args(["build", "--quiet", "--locked", "--profile", &profile])
        .args([
            "-p",
            "focuser-master",
            "-p",
            "focuser-yacobot",
            "-p",
            "focuser-reader",
        ])
        .args(["--bin", "master", "--bin", "yacobot", "--bin", "reader"])
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "cargo build of the daemons failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(dir.to_path_buf())
}

/// A small plan in `dir` for this crate's own tests (nothing started, no database made).
#[cfg(test)]
pub(crate) fn test_plan(dir: &std::path::Path) -> Plan {
    Plan {
        nodes: 2,
        receivers: 1,
        hosts: 1,
        paths_per_host: 1,
        phases: 1,
        reflog_lines: 1,
        feeds: 1,
        feeds_on: true,
        multidoc: false,
        bindings: false,
        seed: 1,
        web_port: 1,
        host_delay: 0.1,
        retention_check: 5,
        claim_ttl: 120,
        dir: dir.to_path_buf(),
        bin_dir: built_binaries().unwrap(),
        repo: crate::repo_root(),
        master_db: "mysql://nobody@127.0.0.1:1/focuser".into(),
        node_dbs: vec![
            "mysql://nobody@127.0.0.1:1/focuser_node1".into(),
            "mysql://nobody@127.0.0.1:1/focuser_node2".into(),
        ],
        ports: plan::Ports::free(2, 1).unwrap(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that failed before its configs were written (the database was down): stopping
    /// it says so for each daemon and fails none, so the next `up` can go on.
    #[test]
    fn stopping_a_run_that_never_wrote_its_configs_fails_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let plan = test_plan(dir.path());
        plan.save().unwrap();
        let run = Run::open(dir.path()).unwrap();
        let (said, failed) = run.stop_all();
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(said.len(), run.instances().len());
        assert!(
            said.iter().all(|s| s.contains("nothing to stop")),
            "{said:?}"
        );
    }
}
