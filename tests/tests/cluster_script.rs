//! scripts/cluster.sh as an operator (and the Galera tests) use it: a 3-node cluster on its own
//! port base, its URL list, a node killed and started again, a node cut off and rejoined.
//! One test: the cluster takes its ports, and bringing it up (two state transfers) is the slow
//! part, so everything is checked on one cluster, brought down at the end even on failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use diesel::{sql_query, sql_types::BigInt, QueryableByName, RunQueryDsl};
use focuser_tests::{repo_root, wait_for};

/// Its own base, apart from the lead's (3411), the developers' (3421, 3431) and db.sh's.
const BASE: u16 = 3451;

struct Cluster {
    var: PathBuf,
}

impl Cluster {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(repo_root().join("scripts/cluster.sh"))
            .args(args)
            .env("FOCUSER_VAR", &self.var)
            .env("FOCUSER_CLUSTER_PORT", BASE.to_string())
            .env_remove("DATABASE_URL")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "cluster.sh {args:?}: {}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    fn status(&self) -> (String, Option<i32>) {
        let out = self.run(&["status"]);
        (text(&out.stdout), out.status.code())
    }

    fn url(&self, args: &[&str]) -> String {
        let mut all = vec!["url"];
        all.extend_from_slice(args);
        self.ok(&all).trim().to_string()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.run(&["down"]);
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

fn rows(url: &str) -> Result<i64, String> {
    let mut conn = focuser_schema::db::connect(url).map_err(|e| e.to_string())?;
    sql_query("SELECT COUNT(*) AS n FROM cluster_probe")
        .get_result::<Count>(&mut conn)
        .map(|c| c.n)
        .map_err(|e| e.to_string())
}

fn execute(url: &str, sql: &str) {
    let mut conn = focuser_schema::db::connect(url).unwrap();
    sql_query(sql).execute(&mut conn).unwrap();
}

fn node_line(status: &str, n: u8) -> String {
    status
        .lines()
        .find(|l| l.starts_with(&format!("node {n}:")))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_cluster_comes_up_loses_a_node_and_gets_it_back() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster {
        var: tmp.path().join("var"),
    };
    let up = cluster.ok(&["up"]);

    // The daemons' URL list: one URL per node, on the base's three ports, each answering.
    let list = cluster.url(&[]);
    assert_eq!(up.trim(), format!("DATABASE_URL={list}"));
    let urls: Vec<&str> = list.split(',').collect();
    assert_eq!(urls.len(), 3, "{list}");
    for (i, url) in urls.iter().enumerate() {
        assert!(url.starts_with("mysql://focuser:"), "{url}");
        assert!(
            url.ends_with(&format!("@127.0.0.1:{}/focuser", BASE + i as u16)),
            "{url}"
        );
        assert_eq!(*url, cluster.url(&[&(i + 1).to_string()]));
    }
    let admin: Vec<String> = cluster
        .url(&["--admin"])
        .split(',')
        .map(String::from)
        .collect();
    assert!(admin[0].starts_with("mysql://focuser_admin:"));
    assert_eq!(admin[1], cluster.url(&["2", "--admin"]));

    let (status, code) = cluster.status();
    assert_eq!(code, Some(0), "{status}");
    for n in 1..=3 {
        assert!(
            node_line(&status, n).ends_with("Synced 3 Primary ON"),
            "{status}"
        );
    }

    // A second `up` is a no-op: the same processes.
    cluster.ok(&["up"]);
    assert_eq!(cluster.status().0, status, "the nodes were not restarted");

    // What the admin creates on node 1 the daemon account reads and writes on node 3.
    execute(
        &admin[0],
        "CREATE TABLE cluster_probe (id INT PRIMARY KEY AUTO_INCREMENT, node INT)",
    );
    execute(urls[2], "INSERT INTO cluster_probe (node) VALUES (3)");
    assert_eq!(rows(urls[0]), Ok(1));

    // Node 2 killed: status says so (and fails), the others go on writing.
    cluster.ok(&["kill", "2"]);
    let (status, code) = cluster.status();
    assert_eq!(code, Some(3), "{status}");
    assert!(node_line(&status, 2).contains("down"), "{status}");
    assert!(rows(urls[1]).is_err(), "a killed node does not answer");
    wait_for(
        "nodes 1 and 3 to form a cluster of two",
        Duration::from_secs(60),
        || node_line(&cluster.status().0, 1).ends_with("Synced 2 Primary ON"),
    );
    execute(urls[0], "INSERT INTO cluster_probe (node) VALUES (1)");

    // Started again, it catches up (the row written while it was down) and is Synced.
    cluster.ok(&["start", "2"]);
    let (status, code) = cluster.status();
    assert_eq!(code, Some(0), "{status}");
    assert_eq!(rows(urls[1]), Ok(2));

    // Cut off, node 3 keeps running but refuses queries (no quorum); the others go on.
    cluster.ok(&["isolate", "3"]);
    let (status, _) = cluster.status();
    assert!(
        node_line(&status, 3).contains("non-Primary OFF"),
        "{status}"
    );
    let refused = rows(urls[2]).unwrap_err();
    assert!(refused.contains("WSREP"), "{refused}");
    execute(urls[0], "INSERT INTO cluster_probe (node) VALUES (1)");
    cluster.ok(&["rejoin", "3"]);
    assert_eq!(rows(urls[2]), Ok(3));

    // `sql N` runs the client on node N's database.
    let out = cluster.ok(&["sql", "2", "-N", "-e", "SELECT @@port"]);
    assert_eq!(out.trim(), (BASE + 1).to_string());

    cluster.ok(&["down"]);
    let (status, code) = cluster.status();
    assert_eq!(code, Some(3));
    assert_eq!(status.matches(": down").count(), 3, "{status}");
}
