//! The project's private Galera cluster (`scripts/cluster.sh`) as the tests that take its nodes
//! down see it: its nodes' admin URLs, the script's `kill`/`start`/`isolate`/`rejoin`, and a
//! guard that leaves every node Synced again whatever the test did.
//!
//! The cluster is found through `FOCUSER_TEST_CLUSTER_URL` (the admin account's URL list, one
//! per node, as `scripts/cluster.sh url --admin` prints it; scripts/test.sh exports it), or
//! else by asking the script. The script itself is run with the environment of the test
//! (`FOCUSER_VAR`, `FOCUSER_CLUSTER_PORT`), so it finds the same cluster.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use diesel::sql_types::Text;
use diesel::{QueryableByName, RunQueryDsl};

use crate::{repo_root, Error};

/// The cluster's nodes, by number (1, 2, 3).
#[derive(Debug, Clone)]
pub struct Cluster {
    admin: Vec<String>,
    script: PathBuf,
}

impl Cluster {
    /// The cluster, or a panic saying how to start it: a test about it can do nothing else.
    pub fn get() -> Cluster {
        Self::find().unwrap_or_else(|e| panic!("no Galera cluster for the tests: {e}"))
    }

    pub fn find() -> Result<Cluster, Error> {
        let script = repo_root().join("scripts/cluster.sh");
        let list = match std::env::var("FOCUSER_TEST_CLUSTER_URL") {
            Ok(list) => list,
            Err(_) => {
                let out = Command::new(&script).args(["url", "--admin"]).output()?;
                if !out.status.success() {
                    return Err(format!(
                        "{} url --admin failed ({}); start it with `scripts/cluster.sh up`",
                        script.display(),
                        String::from_utf8_lossy(&out.stderr).trim()
                    )
                    .into());
                }
                String::from_utf8(out.stdout)?.trim().to_string()
            }
        };
        let admin: Vec<String> = list.split(',').map(|u| u.trim().to_string()).collect();
        if admin.len() < 3 {
            return Err(format!("{} node URLs, expected 3", admin.len()).into());
        }
        Ok(Cluster { admin, script })
    }

    /// The admin account's URL of every node, node 1 first.
    pub fn admin_urls(&self) -> &[String] {
        &self.admin
    }

    /// Runs `cluster.sh <action> <node>` and insists that it succeeded.
    pub fn script(&self, action: &str, node: usize) {
        let out = Command::new(&self.script)
            .arg(action)
            .arg(node.to_string())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", self.script.display()));
        assert!(
            out.status.success(),
            "cluster.sh {action} {node}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `wsrep_local_state_comment` of node `n` (`Synced`, `Donor/Desynced`, …), or `None` when
    /// it does not answer.
    pub fn state(&self, n: usize) -> Option<String> {
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = Text, column_name = "Value")]
            value: String,
        }
        let mut c = focuser_schema::db::connect(self.admin.get(n - 1)?).ok()?;
        let rows: Vec<Row> = diesel::sql_query("SHOW STATUS LIKE 'wsrep_local_state_comment'")
            .load(&mut c)
            .ok()?;
        let ready: Vec<Row> = diesel::sql_query("SHOW STATUS LIKE 'wsrep_ready'")
            .load(&mut c)
            .ok()?;
        let ready = ready.first().map(|r| r.value.as_str()) == Some("ON");
        rows.into_iter().next().map(|r| {
            if ready {
                r.value
            } else {
                format!("{} (not ready)", r.value)
            }
        })
    }

    /// Brings every node back: started if it does not answer, rejoined if it is cut off.
    pub fn heal(&self) {
        for n in 1..=self.admin.len() {
            match self.state(n).as_deref() {
                Some("Synced") => {}
                None => self.script("start", n),
                Some(_) => {
                    self.script("rejoin", n);
                }
            }
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(180);
        while (1..=self.admin.len()).any(|n| self.state(n).as_deref() != Some("Synced")) {
            assert!(
                std::time::Instant::now() < deadline,
                "the cluster is not Synced again"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A guard that heals the cluster when the test ends, passed or failed.
    pub fn healed_after(&self) -> Healer {
        Healer(self.clone())
    }
}

/// Heals the cluster when dropped ([`Cluster::heal`]).
pub struct Healer(Cluster);

impl Drop for Healer {
    fn drop(&mut self) {
        let heal = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.0.heal()));
        if heal.is_err() {
            eprintln!("the cluster could not be healed: run scripts/cluster.sh up");
        }
    }
}
