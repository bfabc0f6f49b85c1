//! The master on a Galera cluster (scripts/cluster.sh): two masters on two nodes, a master
//! whose node is killed in the middle of a cycle, a master on a node cut off from the others.
//! These tests take nodes down: they run one at a time (the `galera` group of
//! .config/nextest.toml) and leave the cluster Synced.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::{line, nodes, Site, T0};
use diesel::connection::SimpleConnection;
use diesel::sql_types::{BigInt, Text};
use diesel::{QueryableByName, RunQueryDsl};
use focuser_formats::queue::QueueRecord;
use focuser_tests::{free_port, get, wait_for, Cluster, TestDb};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Generous: a node's restart (IST) on a loaded 2-core machine.
const WAIT: Duration = Duration::from_secs(60);

/// `partner_domain` as node `n` (counted from 1) holds it.
fn domains_on(db: &TestDb, n: usize) -> BTreeMap<String, u32> {
    let mut c = focuser_schema::db::connect(&db.urls()[n - 1]).unwrap();
    focuser_schema::models::PartnerDomain::map(&mut c)
        .unwrap()
        .into_iter()
        .collect()
}

/// Replays five overlapping reflogs with `master replay` in each site at once.
fn replay_at_once(sites: &[&Site]) {
    let mut inputs: Vec<Vec<std::path::PathBuf>> = Vec::new();
    for (i, site) in sites.iter().enumerate() {
        let mut files = Vec::new();
        for f in 0..5 {
            let lines: Vec<String> = (0..300)
                .map(|d| d + i * 150)
                .filter(|d| d % 5 == f)
                .flat_map(|d| {
                    (0..2)
                        .map(move |p| line(T0 + p, &format!("http://site{d}.example/p{p}"), 1, ""))
                })
                .collect();
            let p = site.root().join(format!("r{f}.log"));
            std::fs::write(&p, format!("header\n{}", lines.concat())).unwrap();
            files.push(p);
        }
        inputs.push(files);
    }
    let children: Vec<Child> = sites
        .iter()
        .zip(&inputs)
        .map(|(site, files)| {
            site.command(&["replay"])
                .args(files)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A site like `site` (same name) on `url`, its reflogs copied.
fn copy_site(site: &Site, url: &str, name: &str) -> Site {
    let copy = Site::new(url, "");
    let text = std::fs::read_to_string(&copy.config)
        .unwrap()
        .replace("name = m1", &format!("name = {name}"));
    std::fs::write(&copy.config, text).unwrap();
    for f in 0..5 {
        let from = site.root().join(format!("r{f}.log"));
        std::fs::copy(&from, copy.root().join(format!("r{f}.log"))).unwrap();
    }
    copy
}

#[test]
fn two_masters_on_two_nodes_agree_on_every_domain() {
    let cluster = Cluster::get();
    let db = TestDb::on_cluster(&cluster);
    nodes(&db, &[("yb1", true), ("yb2", true), ("yb3", true)]);
    let urls = db.urls();
    let sites: Vec<Site> = [("m1", &urls[0]), ("m2", &urls[1])]
        .iter()
        .map(|(name, url)| {
            let s = Site::new(url, "");
            let text = std::fs::read_to_string(&s.config)
                .unwrap()
                .replace("name = m1", &format!("name = {name}"));
            std::fs::write(&s.config, text).unwrap();
            s
        })
        .collect();
    replay_at_once(&[&sites[0], &sites[1]]);

    let pd = domains_on(&db, 1);
    assert_eq!(pd.len(), 450, "one row per domain");
    assert_eq!(domains_on(&db, 2), pd, "both nodes hold the same rows");
    let mut routed: BTreeMap<String, u32> = BTreeMap::new();
    for site in &sites {
        for (node, r) in site.forwarded() {
            assert_eq!(
                pd[&r.domain], node,
                "{} routed as partner_domain says",
                r.domain
            );
            if let Some(other) = routed.insert(r.domain.clone(), node) {
                assert_eq!(
                    other, node,
                    "the two masters route {} differently",
                    r.domain
                );
            }
        }
    }
    assert_eq!(routed.len(), 450);

    // The same replays on one server, with the domain map the cluster ended with: the same
    // queue files, byte for byte.
    let single = TestDb::new();
    let mut c = single.conn();
    let mut cc = focuser_schema::db::connect(&urls[0]).unwrap();
    #[derive(QueryableByName)]
    struct Node {
        #[diesel(sql_type = BigInt)]
        id: i64,
        #[diesel(sql_type = Text)]
        name: String,
    }
    let ids: Vec<Node> =
        diesel::sql_query("SELECT CAST(id AS SIGNED) AS id, name FROM yacobot_node")
            .load(&mut cc)
            .unwrap();
    for n in &ids {
        c.batch_execute(&format!(
            "INSERT INTO yacobot_node (id, name, host, enabled) VALUES ({}, '{}', '127.0.0.1:1', 1)",
            n.id, n.name
        ))
        .unwrap();
    }
    let values: Vec<String> = pd
        .iter()
        .map(|(d, n)| format!("('{d}', {n}, 'cluster')"))
        .collect();
    c.batch_execute(&format!(
        "INSERT INTO partner_domain (domain, yacobot_id, assigned_by) VALUES {}",
        values.join(",")
    ))
    .unwrap();
    for (i, site) in sites.iter().enumerate() {
        let alone = copy_site(site, single.url(), &format!("m{}", i + 1));
        let mut args = vec!["replay".to_string()];
        args.extend((0..5).map(|f| alone.root().join(format!("r{f}.log")).display().to_string()));
        let out = alone.master(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            alone.queue_files(),
            site.queue_files(),
            "m{}: the cluster's queue files are the single server's",
            i + 1
        );
    }
}

/// A master daemon of a test: cycles on SIGUSR1 only, clock fixed.
struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    fn start(site: &Site, port: u16) -> Daemon {
        let child = site.spawn(&["--now", &common::stamp(T0 + 60)]);
        wait_for("the first cycle", WAIT, || {
            site.log().contains("no reflog files ready")
        });
        Daemon { child, port }
    }

    fn cycle(&self) {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGUSR1).unwrap();
    }

    fn metric(&self, name: &str) -> String {
        let metrics = get(self.port, "/metrics");
        metrics
            .lines()
            .find(|l| l.starts_with(&format!("focuser_{name}{{")))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or_default()
            .to_string()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

fn daemon_site(list: &str, port: u16) -> Site {
    Site::new(
        list,
        &format!("debuglevel = 40\nstatus_listen = {port}\nCycle.Interval = 3600\n"),
    )
}

/// Every forwarded URL of the site, each as often as it was forwarded, sorted.
fn forwarded_urls(site: &Site) -> Vec<String> {
    let mut urls: Vec<String> = site
        .forwarded()
        .into_iter()
        .map(|(_, r): (u32, QueueRecord)| r.url)
        .collect();
    urls.sort();
    urls
}

/// Whether a statement of the test database waits on node `n` (a lock held by the test).
fn waiting_insert(db: &TestDb, n: usize) -> bool {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let Ok(mut c) = focuser_schema::db::connect(&db.urls()[n - 1]) else {
        return false;
    };
    let r: Count = diesel::sql_query(format!(
        "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = '{}' \
         AND INFO LIKE 'INSERT INTO `partner_domain`%' AND ID <> CONNECTION_ID()",
        db.name()
    ))
    .get_result(&mut c)
    .unwrap();
    r.n > 0
}

#[test]
fn a_master_whose_node_dies_mid_cycle_fails_over_and_can_come_back() {
    let cluster = Cluster::get();
    let _healed = cluster.healed_after();
    let db = TestDb::on_cluster(&cluster);
    let ids = nodes(&db, &[("yb1", true)]);
    let urls = db.urls();
    let port = free_port();
    let site = daemon_site(&format!("{},{}", urls[0], urls[1]), port);
    let master = Daemon::start(&site, port);
    assert_eq!(master.metric("db_address_index"), "1");

    // A transaction on node 1 holds b.ru's row: the master's cycle stops at its insert there.
    let mut blocker = focuser_schema::db::connect(&urls[0]).unwrap();
    blocker
        .batch_execute(&format!(
            "BEGIN; INSERT INTO partner_domain (domain, yacobot_id, assigned_by) VALUES ('b.ru', {}, 'blocker')",
            ids[0]
        ))
        .unwrap();
    site.reflog(
        "r1.log",
        &[
            line(T0, "http://a.ru/x", 1, ""),
            line(T0, "http://b.ru/y", 1, ""),
            line(T0, "http://c.ru/z", 1, ""),
        ],
    );
    master.cycle();
    wait_for("the cycle waits on node 1", WAIT, || waiting_insert(&db, 1));
    cluster.script("kill", 1);
    wait_for("the cycle ends on node 2", WAIT, || {
        !site.queue_files().is_empty()
    });
    assert!(
        site.log().contains("database: moved from address 1 ("),
        "{}",
        site.log()
    );
    assert_eq!(
        forwarded_urls(&site),
        ["http://a.ru/x", "http://b.ru/y", "http://c.ru/z"],
        "each URL forwarded once"
    );
    assert_eq!(master.metric("db_failovers_total"), "1");
    assert_eq!(master.metric("db_address_index"), "2");
    let pd = domains_on(&db, 2);
    assert_eq!(pd.len(), 3, "{pd:?}");

    // Node 1 back; node 2 gone: the next cycle runs on node 1 again.
    cluster.heal();
    cluster.script("kill", 2);
    site.reflog("r2.log", &[line(T0 + 1, "http://d.ru/w", 1, "")]);
    master.cycle();
    wait_for("the next cycle on node 1", WAIT, || {
        forwarded_urls(&site).contains(&"http://d.ru/w".to_string())
    });
    assert_eq!(
        forwarded_urls(&site),
        [
            "http://a.ru/x",
            "http://b.ru/y",
            "http://c.ru/z",
            "http://d.ru/w"
        ]
    );
    assert!(
        site.log().contains("database: moved from address 2 ("),
        "{}",
        site.log()
    );
    assert_eq!(master.metric("db_address_index"), "1");
    assert_eq!(master.metric("db_failovers_total"), "2");
    assert_eq!(domains_on(&db, 1).len(), 4);
}

#[test]
fn a_master_on_a_node_without_quorum_stops_writing_and_resumes() {
    let cluster = Cluster::get();
    let _healed = cluster.healed_after();
    let db = TestDb::on_cluster(&cluster);
    nodes(&db, &[("yb1", true)]);
    let urls = db.urls();
    // `alone` knows only node 3; `listed` knows node 3, then node 1.
    let (port_a, port_l) = (free_port(), free_port());
    let alone = daemon_site(&urls[2], port_a);
    let listed = daemon_site(&format!("{},{}", urls[2], urls[0]), port_l);
    let text = std::fs::read_to_string(&listed.config)
        .unwrap()
        .replace("name = m1", "name = m2");
    std::fs::write(&listed.config, text).unwrap();
    let (ma, ml) = (
        Daemon::start(&alone, port_a),
        Daemon::start(&listed, port_l),
    );

    cluster.script("isolate", 3);
    alone.reflog("r1.log", &[line(T0, "http://alone.ru/x", 1, "")]);
    listed.reflog("r1.log", &[line(T0, "http://listed.ru/x", 1, "")]);
    ma.cycle();
    ml.cycle();
    wait_for("the listed master's cycle on node 1", WAIT, || {
        !listed.queue_files().is_empty()
    });
    assert!(
        listed.log().contains("database: moved from address 1 (")
            && listed.log().contains("primary component"),
        "{}",
        listed.log()
    );
    wait_for("the lone master waits", WAIT, || {
        alone.log().contains("database: unreachable")
    });
    assert!(
        alone.queue_files().is_empty(),
        "nothing routed without quorum"
    );
    let on_primary = domains_on(&db, 1);
    assert!(on_primary.contains_key("listed.ru") && !on_primary.contains_key("alone.ru"));

    cluster.script("rejoin", 3);
    wait_for("the lone master's cycle after the rejoin", WAIT, || {
        !alone.queue_files().is_empty()
    });
    assert_eq!(forwarded_urls(&alone), ["http://alone.ru/x"]);
    assert_eq!(ma.metric("db_failovers_total"), "0");
    let pd = domains_on(&db, 1);
    assert_eq!(pd.len(), 2, "{pd:?}");
    assert_eq!(domains_on(&db, 3), pd);
}
