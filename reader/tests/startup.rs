//! What `reader` refuses at start, `reader --check-config` refuses too (naming the file), and
//! `reader -d` reports in its exit status before it detaches: an init script never says
//! "started" of a reader that dies a moment later.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::*;
use focuser_tests::{free_port, kill_left, output_within, wait_for};

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The real binary, run to its end (at most 30 s: a start that should have failed and did
/// not is killed and fails the test).
fn reader(args: &[&str]) -> Output {
    output_within(
        Command::new(env!("CARGO_BIN_EXE_reader")).args(args),
        Duration::from_secs(30),
    )
}

/// `--check-config` and `-d` both fail, naming `file` and `reason`.
fn refused(cf: &Path, recv: bool, pidfile: &Path, file: &str, reason: &str) {
    let path = cf;
    let cf = cf.to_str().unwrap();
    let mode: &[&str] = if recv { &["--recv"] } else { &[] };
    for how in ["--check-config", "-d"] {
        let args: Vec<&str> = ["-c", cf, how].iter().chain(mode).copied().collect();
        let out = reader(&args);
        let left = how == "-d" && kill_left(pidfile, path);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(file) && err.contains(reason),
            "{args:?}: {err}"
        );
        assert!(!left, "{args:?}: a daemon was left running");
    }
}

#[test]
fn an_exposed_secret_or_pwfile_and_missing_files_fail_check_config_and_the_start() {
    let rig = Rig::new();
    let secret = rig.root().join("reader.secret");
    let pwfile = rig.root().join("reader.passwd");
    std::fs::write(&pwfile, "").unwrap();
    chmod(&pwfile, 0o600);
    let pw = format!("pwfile = {}", pwfile.display());
    let sender = rig.sender_cf(&[("Index.1", &[free_port()])], &pw);
    let sender_pid = rig.root().join("sender/logs/reader.pid");
    let ok = reader(&["-c", sender.to_str().unwrap(), "--check-config"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    chmod(&secret, 0o644);
    refused(
        &sender,
        false,
        &sender_pid,
        "reader.secret",
        "readable by group or others",
    );
    chmod(&secret, 0o600);

    chmod(&pwfile, 0o604);
    refused(
        &sender,
        false,
        &sender_pid,
        "reader.passwd",
        "accessible by others",
    );
    std::fs::remove_file(&pwfile).unwrap();
    refused(&sender, false, &sender_pid, "reader.passwd", "No such file");

    let (receiver, _) = rig.receiver_cf("recv1", "");
    let receiver_pid = rig.root().join("recv1/logs/reader.pid");
    let allow = rig.root().join("hosts.allow");
    std::fs::rename(&allow, rig.root().join("hosts.away")).unwrap();
    refused(
        &receiver,
        true,
        &receiver_pid,
        "hosts.allow",
        "No such file",
    );
    std::fs::rename(rig.root().join("hosts.away"), &allow).unwrap();
    chmod(&secret, 0o640);
    refused(
        &receiver,
        true,
        &receiver_pid,
        "reader.secret",
        "readable by group or others",
    );
}

#[test]
fn daemon_mode_reports_a_receiver_that_cannot_listen() {
    let rig = Rig::new();
    let (cf, port) = rig.receiver_cf("recv1", "");
    let pidfile = rig.root().join("recv1/logs/reader.pid");
    // Another program holds the receiver's port: the reader's own start-up fails after the
    // runtime's (pidfile, log) succeeded, and `-d` must still say so.
    let _taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let out = reader(&["-c", cf.to_str().unwrap(), "--recv", "-d"]);
    let left = kill_left(&pidfile, &cf);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("Recv.Listen 127.0.0.1:{port}")),
        "{err}"
    );
    assert!(!left, "a daemon was left running");
    wait_for("the pidfile is removed", Duration::from_secs(10), || {
        !pidfile.exists()
    });
}
