//! The shape of one pipeline run: sizes, ports and where things are. Saved as `plan.json`
//! in the run directory, so that `focuser-run web`, `stop` and `summary` find what `up` made.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where the plan of a run directory is kept.
pub const PLAN_FILE: &str = "plan.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Crawler nodes (`yacobot_node` 1..=nodes): one yacobot and one reader each.
    pub nodes: usize,
    /// `reader --recv` index receivers, all in one group (`Index.0`).
    pub receivers: usize,
    /// Host names of the sample web.
    pub hosts: usize,
    /// Paths of each host a phase's reflog draws from (phases never share a URL).
    pub paths_per_host: usize,
    /// Reflogs the run is prepared for (the test drops one per phase).
    pub phases: usize,
    /// Lines of each reflog.
    pub reflog_lines: usize,
    /// Partner feed resources (the sample has three at most).
    pub feeds: usize,
    /// yacobot's resources worker on, and a second reader per node shipping its store
    /// (`Resources.Dir`). Off: the feeds are loaded and served, and nothing fetches them.
    #[serde(default)]
    pub feeds_on: bool,
    /// Page analysis: a sample model trained from the committed corpus, and every yacobot
    /// run with `MultiDoc.Enable = 1` and that model (`pipeline::multidoc`).
    #[serde(default)]
    pub multidoc: bool,
    /// Bindings (with `multidoc`): the sample dictionaries (`bind/dicts/`) loaded on every
    /// node, every yacobot run with `Bindings.Enable = 1`, a third reader per node shipping
    /// its bindings store to the ad-server receiver (`pipeline::bindings`).
    #[serde(default)]
    pub bindings: bool,
    pub seed: u64,
    /// The sample web's loopback port.
    pub web_port: u16,
    /// yacobot's `Fetch.HostDelay`, seconds (the sample web is ours: no need for 1 s).
    pub host_delay: f64,
    /// The reader's `Store.CheckInterval`; the end-to-end test makes it long so that the
    /// nodes' stores stay whole and can be compared with what the receivers got.
    pub retention_check: u64,
    /// yacobot's `Crawl.ClaimTtl`: how soon the claims of a killed crawler lapse.
    pub claim_ttl: u64,
    /// The run directory (configs, rootdirs, logs).
    pub dir: PathBuf,
    /// Where the daemons' binaries are (master, yacobot, reader).
    pub bin_dir: PathBuf,
    /// The repository (for `conf/`).
    pub repo: PathBuf,
    /// The master's database (yacobot_node, partner_domain) and each node's own.
    pub master_db: String,
    pub node_dbs: Vec<String>,
    /// Ports: each daemon's status page, and each receiver's listener.
    pub ports: Ports,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ports {
    pub master: u16,
    pub yacobots: Vec<u16>,
    pub senders: Vec<u16>,
    /// The readers of the resources' stores (used with `Plan::feeds_on`).
    #[serde(default)]
    pub feed_senders: Vec<u16>,
    pub receivers_status: Vec<u16>,
    pub receivers_listen: Vec<u16>,
    /// The readers of the bindings stores, and the ad-server receiver's status page and
    /// listener (used with `Plan::bindings`).
    #[serde(default)]
    pub bindings_senders: Vec<u16>,
    #[serde(default)]
    pub adserver_status: u16,
    #[serde(default)]
    pub adserver_listen: u16,
    #[serde(default)]
    pub stubs_senders: Vec<u16>,
}

impl Ports {
    /// Free loopback ports for every listener of a plan of this size.
    pub fn free(nodes: usize, receivers: usize) -> std::io::Result<Ports> {
        // Hold every listener until all are chosen, so no port is handed out twice.
        let mut held = Vec::new();
        let mut take = |n: usize| -> std::io::Result<Vec<u16>> {
            (0..n)
                .map(|_| {
                    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
                    let p = l.local_addr()?.port();
                    held.push(l);
                    Ok(p)
                })
                .collect()
        };
        let master = take(1)?[0];
        Ok(Ports {
            master,
            yacobots: take(nodes)?,
            senders: take(nodes)?,
            feed_senders: take(nodes)?,
            receivers_status: take(receivers)?,
            receivers_listen: take(receivers)?,
            bindings_senders: take(nodes)?,
            adserver_status: take(1)?[0],
            adserver_listen: take(1)?[0],
            stubs_senders: take(nodes)?,
        })
    }
}

impl Plan {
    pub fn save(&self) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        focuser_formats::fsutil::write_atomically(&self.dir.join(PLAN_FILE), |w| {
            use std::io::Write;
            w.write_all(text.as_bytes())
        })
    }

    pub fn load(dir: &Path) -> std::io::Result<Plan> {
        let path = dir.join(PLAN_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))
    }

    /// Node names as in `yacobot_node.name`: yb1, yb2, ...
    pub fn node_name(&self, node: usize) -> String {
        format!("yb{node}")
    }
}
