//! scripts/db.sh as an operator uses it: idempotent `up`, clear and quick failures, and the
//! least-privilege account it hands to the daemons.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
use focuser_tests::{free_port, repo_root};

fn db_sh(args: &[&str], env: &[(&str, &str)]) -> (Output, Duration) {
    let mut cmd = Command::new(repo_root().join("scripts/db.sh"));
    cmd.args(args).env_remove("DATABASE_URL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let out = cmd.output().unwrap();
    (out, started.elapsed())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn status_pid() -> String {
    let (out, _) = db_sh(&["status"], &[]);
    assert!(out.status.success(), "status: {}", text(&out.stdout));
    let s = text(&out.stdout);
    s.split("pid ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn a_second_up_is_a_no_op() {
    let (first, _) = db_sh(&["up"], &[]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let pid = status_pid();
    let (second, took) = db_sh(&["up"], &[]);
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert!(
        text(&second.stderr).contains(&format!("already running (pid {pid})")),
        "{}",
        text(&second.stderr)
    );
    assert_eq!(status_pid(), pid, "the server was not restarted");
    assert_eq!(
        text(&first.stdout),
        text(&second.stdout),
        "same DATABASE_URL both times"
    );
    assert!(text(&second.stdout).starts_with("DATABASE_URL=mysql://focuser:"));
    // The unchanged pid and "already running" prove it was a no-op; the bound only catches a
    // hang. It is wide because even a no-op checks packages, pings the server and re-runs the
    // account statements, which on a loaded 2-core CI machine can take several seconds.
    assert!(took < Duration::from_secs(30), "a no-op up took {took:?}");
}

#[test]
fn up_fails_fast_when_the_port_is_taken() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let var = tempfile::tempdir().unwrap();
    let (out, took) = db_sh(
        &["up"],
        &[
            ("FOCUSER_VAR", var.path().to_str().unwrap()),
            ("FOCUSER_DB_PORT", &port),
        ],
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("port {port}")) && err.contains("taken"),
        "{err}"
    );
    // Catches a hang (e.g. waiting for a server that cannot start); wide for a loaded CI
    // machine. That it gave up before starting anything is the data-directory check below.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert!(
        !var.path().join("mariadb/data").exists(),
        "nothing initialised for a server that cannot start"
    );
}

fn up_with_url(url: &str) -> (Output, Duration) {
    let mut cmd = Command::new(repo_root().join("scripts/db.sh"));
    cmd.arg("up").env("DATABASE_URL", url);
    let started = Instant::now();
    let out = cmd.output().unwrap();
    (out, started.elapsed())
}

#[test]
fn a_database_url_with_nothing_behind_it_fails_quickly() {
    let port = free_port(); // closed again: connections are refused
    let (out, took) = up_with_url(&format!(
        "mysql://focuser:s3cretpw@127.0.0.1:{port}/focuser"
    ));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("does not answer"), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(
        !err.contains("s3cretpw"),
        "the password must not be printed: {err}"
    );
    // A refused connection fails at once; the bound only catches a hang and leaves room for a
    // loaded CI machine (db.sh caps the check itself at 8 s).
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn a_database_url_whose_server_never_answers_fails_within_its_timeouts() {
    // Accepts the connection and then says nothing, like a hung server.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let holder = std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut buf = [0u8; 64];
            let _ = s.read(&mut buf);
        }
    });
    let (out, took) = up_with_url(&format!("mysql://focuser:pw@127.0.0.1:{port}/focuser"));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("does not answer"),
        "{}",
        text(&out.stderr)
    );
    // db.sh gives up on a silent server after 5 s (connect-timeout), at the latest 8 s
    // (`timeout 8`); the rest is slack for a loaded CI machine. Without the timeouts it would
    // hang until the test harness kills it.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    drop(holder);
}

#[test]
fn a_reachable_database_url_is_only_checked() {
    let admin = focuser_tests::admin_url().unwrap();
    let (out, _) = up_with_url(&admin);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("answers; leaving it as it is"));
    assert_eq!(text(&out.stdout).trim(), format!("DATABASE_URL={admin}"));
}

#[test]
fn the_daemon_account_reads_and_writes_rows_but_cannot_change_the_schema() {
    let (out, _) = db_sh(&["url"], &[]);
    assert!(out.status.success());
    let url = text(&out.stdout).trim().to_string();
    let mut conn = focuser_schema::db::connect(&url).unwrap();
    diesel::sql_query("SELECT 1").execute(&mut conn).unwrap();
    diesel::sql_query("CREATE TEMPORARY TABLE scratch (a INT)")
        .execute(&mut conn)
        .unwrap();
    let denied =
        diesel::sql_query("CREATE TABLE focuser_should_not_exist (a INT)").execute(&mut conn);
    assert!(denied.is_err(), "the daemon account must not create tables");
    let denied = diesel::sql_query("CREATE DATABASE focuser_should_not_exist").execute(&mut conn);
    assert!(
        denied.is_err(),
        "the daemon account must not create databases"
    );
}
