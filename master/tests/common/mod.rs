//! A master in a temporary rootdir, against a fresh database.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use diesel::RunQueryDsl;
use focuser_formats::queue::{self, QueueRecord};
use focuser_master::cycle::{CycleStats, DomainStore, Master};
use focuser_master::route::{Assignment, DomainMap};
use focuser_master::store::ConnStore;
use focuser_master::MasterConfig;
use focuser_tests::TestDb;

pub const T0: i64 = 1_700_000_000;

pub fn stamp(secs: i64) -> String {
    focuser_formats::stamp::format(secs)
}

/// A reflog line.
pub fn line(ts: i64, url: &str, hits: u64, tag: &str) -> String {
    format!(
        "2011072806593795\t5\t{}\t2310\t{url}\t{hits}\t{tag}\n",
        stamp(ts)
    )
}

pub struct Site {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
}

impl Site {
    /// A rootdir with a master.cf (`extra` appended) pointing at `url`. Reflogs are taken as
    /// soon as they are there (`Cycle.SettleSeconds = 0`) unless `extra` says otherwise.
    pub fn new(url: &str, extra: &str) -> Site {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("incoming")).unwrap();
        let config = dir.path().join("master.cf");
        std::fs::write(
            &config,
            format!(
                "rootdir = {}\ndatabase = {url}\nname = m1\nincoming_dir = incoming\nqueue_dir = queue\n\
                 done_dir = done\nlogfile = master.log\npidfile = master.pid\n{settle}{extra}",
                dir.path().display(),
                settle = if extra.contains("Cycle.SettleSeconds") {
                    ""
                } else {
                    "Cycle.SettleSeconds = 0\n"
                }
            ),
        )
        .unwrap();
        Site { dir, config }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn cfg(&self) -> MasterConfig {
        let c = focuser_daemon::Config::<MasterConfig>::load(&self.config, None).unwrap();
        let mut d = c.daemon;
        for p in [
            &mut d.incoming_dir,
            &mut d.queue_dir,
            &mut d.rejects_dir,
            &mut d.state_dir,
            &mut d.tmp_dir,
        ] {
            *p = self.root().join(&*p);
        }
        d.done_dir = d.done_dir.map(|p| self.root().join(p));
        d
    }

    /// Drops a reflog file into incoming_dir (a header line, then `lines`).
    pub fn reflog(&self, name: &str, lines: &[String]) -> PathBuf {
        let p = self.root().join("incoming").join(name);
        std::fs::write(&p, format!("header\n{}", lines.concat())).unwrap();
        p
    }

    /// The master binary on this site's config (and only its `database`).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_master"));
        c.arg("-c")
            .arg(&self.config)
            .args(args)
            .env_remove("DATABASE_URL");
        c
    }

    pub fn master(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// The master started with `args` (a daemon, or a command left running), its output
    /// dropped: the log file tells what it did.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Every published queue file: `node/name` → content.
    pub fn queue_files(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let q = self.root().join("queue");
        for node in std::fs::read_dir(&q).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(node.path()).unwrap().flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                if !name.starts_with('.') {
                    out.insert(
                        format!("{}/{name}", node.file_name().to_string_lossy()),
                        std::fs::read_to_string(f.path()).unwrap(),
                    );
                }
            }
        }
        out
    }

    /// Every forwarded record, with the node its file was for.
    pub fn forwarded(&self) -> Vec<(u32, QueueRecord)> {
        let mut out = Vec::new();
        for (_, text) in self.queue_files() {
            let (h, records) = queue::read(text.as_bytes()).unwrap();
            out.extend(records.into_iter().map(|r| (h.node, r)));
        }
        out
    }

    pub fn current_log(&self) -> String {
        std::fs::read_to_string(self.root().join("state/current_log")).unwrap_or_default()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root().join("master.log")).unwrap_or_default()
    }

    /// The names in `sub` of the rootdir, sorted.
    pub fn names(&self, sub: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.root().join(sub))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    pub fn rejects(&self, input: &str) -> String {
        std::fs::read_to_string(self.root().join("rejects").join(format!("{input}.rej")))
            .unwrap_or_default()
    }

    /// One cycle through the library, against the database.
    pub fn cycle(&self, db: &TestDb, now: i64) -> Option<CycleStats> {
        let cfg = self.cfg();
        Master::new(&cfg)
            .run(&mut ConnStore(db.conn()), now, None)
            .unwrap()
    }
}

/// Adds nodes `(name, enabled)`; returns their ids.
pub fn nodes(db: &TestDb, list: &[(&str, bool)]) -> Vec<u32> {
    let mut c = db.conn();
    list.iter()
        .map(|(name, enabled)| {
            focuser_schema::models::NewYacobotNode {
                name,
                host: "127.0.0.1:1",
                enabled: *enabled,
            }
            .insert(&mut c)
            .unwrap()
            .id
        })
        .collect()
}

pub fn partner_domains(db: &TestDb) -> BTreeMap<String, u32> {
    focuser_schema::models::PartnerDomain::map(&mut db.conn())
        .unwrap()
        .into_iter()
        .collect()
}

pub fn map_domain(db: &TestDb, domain: &str, node: u32) {
    diesel::sql_query(format!("INSERT INTO partner_domain (domain, yacobot_id, assigned_by) VALUES ('{domain}', {node}, 'test')"))
        .execute(&mut db.conn())
        .unwrap();
}

/// A domain map held in memory, for tests about filtering, not routing.
pub struct OneNode;

impl DomainStore for OneNode {
    fn load(&mut self) -> anyhow::Result<DomainMap> {
        Ok(DomainMap {
            nodes: vec![1],
            rows: Default::default(),
        })
    }

    fn apply(
        &mut self,
        plan: &[Assignment],
        _: &str,
        _: i64,
    ) -> anyhow::Result<HashMap<String, u32>> {
        Ok(plan.iter().map(|a| (a.domain.clone(), a.node)).collect())
    }
}
