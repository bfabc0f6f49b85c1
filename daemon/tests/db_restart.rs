//! A database restart under a running daemon: it says so in its log and on its status page,
//! stops promptly if asked meanwhile, and carries on when the server is back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::Testd;
use focuser_tests::{free_port, http, repo_root, wait_exit, wait_for};
use nix::sys::signal::Signal;

const SECS: fn(u64) -> Duration = Duration::from_secs;

/// A MariaDB of this test's own (scripts/db.sh with a private var/ and port), so that
/// restarting it disturbs no other test.
struct OwnServer {
    var: tempfile::TempDir,
    port: u16,
}

impl OwnServer {
    fn db_sh(&self, action: &str) -> String {
        let out = Command::new(repo_root().join("scripts/db.sh"))
            .arg(action)
            .env("FOCUSER_VAR", self.var.path())
            .env("FOCUSER_DB_PORT", self.port.to_string())
            .env_remove("DATABASE_URL")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "db.sh {action}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn url(&self) -> String {
        self.db_sh("up")
            .lines()
            .find_map(|l| l.strip_prefix("DATABASE_URL="))
            .unwrap()
            .to_string()
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("scripts/db.sh"))
            .arg("down")
            .env("FOCUSER_VAR", self.var.path())
            .env("FOCUSER_DB_PORT", self.port.to_string())
            .output();
    }
}

fn figure(addr: SocketAddr, name: &str) -> f64 {
    let (_, _, json) = http(addr, "GET", "/status.json", None);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .map(|f| f["value"].as_f64().unwrap())
        .unwrap_or(0.0)
}

/// The card with this label on the status page, as `/status.json` holds it.
fn card(addr: SocketAddr, label: &str) -> serde_json::Value {
    let (_, _, json) = http(addr, "GET", "/status.json", None);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["cards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["label"] == label)
        .cloned()
        .unwrap_or_else(|| panic!("no card {label:?} in {v}"))
}

/// The log's warnings and errors, each cut to its first two words.
fn problems(t: &Testd) -> Vec<String> {
    t.log_text()
        .lines()
        .filter(|l| l.contains(" ERROR ") || l.contains(" WARN "))
        // date, time, name[pid], level, then the message
        .map(|l| {
            l.split_whitespace()
                .skip(4)
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn start_testd(url: &str, port: u16) -> Testd {
    Testd::new(&format!(
        "database = {url}\nWork.UseDb = 1\nWork.TickMs = 50\nstatus_listen = {port}\n"
    ))
}

#[test]
fn the_daemon_reports_a_database_restart_and_carries_on() {
    let server = OwnServer {
        var: tempfile::tempdir().unwrap(),
        port: free_port(),
    };
    let url = server.url();
    let status_port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{status_port}").parse().unwrap();
    let t = start_testd(&url, status_port);
    let mut child = t.spawn();
    wait_for("queries run", SECS(20), || {
        figure(addr, "db_queries_total") >= 3.0
    });
    assert_eq!(figure(addr, "db_up"), 1.0);
    let db = card(addr, "database");
    assert_eq!(
        (&db["value"], &db["state"]),
        (&"up".into(), &"ok".into()),
        "{db}"
    );

    server.db_sh("down");
    t.wait_log("database: unreachable (tick)", SECS(30));
    wait_for("the status page shows the outage", SECS(10), || {
        figure(addr, "db_up") == 0.0
    });
    assert_eq!(figure(addr, "db_outages_total"), 1.0);
    let db = card(addr, "database");
    assert!(
        db["value"].as_str().unwrap().starts_with("down for ")
            && db["state"] == "error"
            && !db["help"].as_str().unwrap().is_empty(),
        "the card says so, with the error: {db}"
    );
    assert_eq!(card(addr, "warnings and errors")["state"], "error");
    let during = figure(addr, "db_queries_total");

    server.url(); // up again, same data directory and port
    t.wait_log("database: reachable again after", SECS(60));
    wait_for("queries again", SECS(10), || {
        figure(addr, "db_queries_total") >= during + 3.0
    });
    assert_eq!(figure(addr, "db_up"), 1.0);
    let db = card(addr, "database");
    assert_eq!(
        (&db["value"], &db["state"], &db["help"]),
        (&"up".into(), &"ok".into(), &"1 outage since start".into()),
        "{db}"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "it kept running throughout"
    );
    assert_eq!(
        problems(&t),
        ["database: unreachable", "database: reachable"],
        "the outage is logged once, not per try, and its end once"
    );

    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
}

#[test]
fn a_stop_during_an_outage_is_prompt() {
    let server = OwnServer {
        var: tempfile::tempdir().unwrap(),
        port: free_port(),
    };
    let url = server.url();
    let t = start_testd(&url, free_port());
    let mut child = t.spawn();
    t.wait_log("tick 2 ", SECS(20));
    server.db_sh("down");
    t.wait_log("database: unreachable", SECS(30));
    t.signal(Signal::SIGTERM);
    // Prompt: well below the 30 s stop_timeout (past it the exit would not be a success), with
    // room for a loaded CI machine.
    let status = wait_exit(&mut child, SECS(20));
    assert!(status.success(), "{status:?}");
    assert!(!Path::new(&t.pidfile).exists());
}

#[test]
fn an_unreachable_database_is_one_log_line_not_one_per_try() {
    // Nothing listens on this port: every connection attempt is refused at once, so the
    // daemon retries as fast as its backoff lets it.
    let url = format!("mysql://focuser:x@127.0.0.1:{}/focuser", free_port());
    let t = start_testd(&url, free_port());
    t.append_config("debuglevel = 40\n");
    let mut child = t.spawn();
    t.wait_log("database: unreachable (tick)", SECS(30));
    // Two tries (each up to 3 s of connection attempts in the pool), the second 0.25 s
    // after the first.
    t.wait_log("database: tick: next try in 500ms", SECS(30));
    assert_eq!(
        problems(&t),
        ["database: unreachable"],
        "one line for the outage:\n{}",
        t.log_text()
    );
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(20)).success());
}

/// The admin URL of the helpers' test server (the one the other tests' databases live on).
fn test_server_url() -> String {
    if let Ok(url) = std::env::var("FOCUSER_TEST_DATABASE_URL") {
        return url;
    }
    let out = Command::new(repo_root().join("scripts/db.sh"))
        .args(["url", "--admin"])
        .output()
        .unwrap();
    assert!(out.status.success(), "no test server: scripts/db.sh up");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn a_list_of_addresses_moves_to_the_next_when_one_goes() {
    let server = OwnServer {
        var: tempfile::tempdir().unwrap(),
        port: free_port(),
    };
    // Two plain servers, both with a database `focuser`: this test's own, then the shared one.
    let first = server.url();
    let second = test_server_url();
    let secrets = |u: &str| url::Url::parse(u).unwrap().password().unwrap().to_string();
    let status_port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{status_port}").parse().unwrap();
    let t = start_testd(&format!("{first}, {second}"), status_port);
    let mut child = t.spawn();
    wait_for("queries run", SECS(20), || {
        figure(addr, "db_queries_total") >= 3.0
    });
    assert_eq!(figure(addr, "db_address_index"), 1.0);
    assert_eq!(figure(addr, "db_failovers_total"), 0.0);
    let help = card(addr, "database")["help"].as_str().unwrap().to_string();
    assert!(
        help.starts_with(&format!(
            "address 1 of 2 in use: mysql://focuser:***@127.0.0.1:{}/focuser",
            server.port
        )),
        "{help}"
    );

    server.db_sh("down");
    t.wait_log("database: moved from address 1 (", SECS(30));
    let during = figure(addr, "db_queries_total");
    wait_for("queries on the second address", SECS(20), || {
        figure(addr, "db_queries_total") >= during + 3.0
    });
    assert_eq!(figure(addr, "db_address_index"), 2.0);
    assert_eq!(figure(addr, "db_failovers_total"), 1.0);
    let db = card(addr, "database");
    let help = db["help"].as_str().unwrap();
    assert_eq!(db["value"], "up", "{db}");
    assert!(
        help.contains("address 2 of 2 in use: mysql://focuser_admin:***@127.0.0.1:")
            && help.contains("1 switch since start"),
        "{help}"
    );
    let log = t.log_text();
    let moves: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("database: moved"))
        .collect();
    assert_eq!(moves.len(), 1, "one line per switch:\n{log}");
    assert!(
        moves[0].contains(&format!(
            "from address 1 (mysql://focuser:***@127.0.0.1:{}/focuser) to address 2 (mysql://focuser_admin:***@",
            server.port
        )),
        "{}",
        moves[0]
    );
    assert!(
        !log.contains(&secrets(&first)) && !log.contains(&secrets(&second)),
        "no password in the log:\n{log}"
    );
    assert!(child.try_wait().unwrap().is_none());
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
}
