//! The daemon as a process: command line and config errors, pidfile, detaching, privileges,
//! and the shipped init script driven from a shell.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use common::Testd;
use focuser_tests::{alive, repo_root, wait_exit, wait_for};
use nix::sys::signal::Signal;
use nix::unistd::{chown, geteuid, Group, User};

const SECS: fn(u64) -> Duration = Duration::from_secs;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn config_errors_name_file_line_and_key_and_check_config_says_so_by_exit_code() {
    let t = Testd::new("Work.Message = hi\n");
    let ok = t.run(&["--check-config"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let printed = String::from_utf8_lossy(&ok.stdout);
    assert!(
        printed.contains("Work.Message = hi") && printed.contains("logfile = logs/testd.log"),
        "{printed}"
    );
    assert!(!t.log.exists(), "--check-config starts nothing");

    let cases = [
        ("Work.Message = hi\nWork.StopDelayMs = often\n", ":6: Work.StopDelayMs: expected a non-negative integer"),
        ("debuglevel = 40\nlogfil = x\n", ":6: logfil: unknown key `logfil`; known keys here: Work; common keys: rootdir, progname, logfile"),
        ("Work.Mesage = hi\n", ":5: Work.Mesage: unknown key `Mesage`; known keys here: TickMs, Message"),
        ("chroot = perhaps\n", ":5: chroot: expected 0 or 1"),
        ("this is not a setting\n", ":5: expected `key = value`"),
        ("Work.UseDb = 1\n", "Work.UseDb: needs `database`"),
    ];
    for (extra, expected) in cases {
        t.write_config(extra);
        for args in [&["--check-config"][..], &[][..]] {
            let out = t.run(args);
            assert_eq!(out.status.code(), Some(1), "{extra:?} {args:?}");
            let err = stderr(&out);
            assert!(
                err.contains(t.config.to_str().unwrap()) && err.contains(expected),
                "{extra:?}: {err}"
            );
        }
    }
    let missing = Command::new(common::testd_binary())
        .args(["-c", "/nonexistent/testd.cf"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("/nonexistent/testd.cf: cannot read"));
}

#[test]
fn the_default_config_is_conf_name_cf_and_version_answers() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(common::testd_binary())
        .arg("--check-config")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("conf/testd.cf: cannot read"),
        "{}",
        stderr(&out)
    );
    let v = Command::new(common::testd_binary())
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("testd 0.1.0"));
}

#[test]
fn once_does_one_unit_and_exits() {
    let t = Testd::new("");
    let out = t.run(&["--once"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = t.log_text();
    assert!(log.contains("tick 1 ") && !log.contains("tick 2 "), "{log}");
    assert!(!t.pidfile.exists());
}

#[test]
fn a_second_instance_is_refused_and_a_stale_pidfile_taken_over() {
    let t = Testd::new("");
    let mut first = t.spawn();
    let pid = t.pid();
    let second = t.run(&[]);
    assert_eq!(second.status.code(), Some(1));
    assert!(
        stderr(&second).contains(&format!("already running as pid {pid}")),
        "{}",
        stderr(&second)
    );
    let detached = t.run(&["--daemon"]);
    assert_eq!(
        detached.status.code(),
        Some(1),
        "the starter reports the detached child's failure"
    );
    assert!(
        stderr(&detached).contains(&format!("already running as pid {pid}")),
        "{}",
        stderr(&detached)
    );
    assert_eq!(t.pid(), pid, "the pidfile still names the first");
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut first, SECS(10)).success());

    // A pidfile left by a process that died without cleaning up (kill -9): nobody holds its lock.
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    std::fs::write(&t.pidfile, format!("{dead_pid}\n")).unwrap();
    let mut again = t.spawn();
    assert_ne!(t.pid(), dead_pid as i32);
    assert_eq!(t.pid(), again.id() as i32);
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut again, SECS(10)).success());
}

#[test]
fn daemon_mode_detaches_and_the_starter_exits_once_it_is_ready() {
    let t = Testd::new("");
    let out = t.run(&["--daemon"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let pid = t.pid();
    assert!(alive(pid));
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let ppid: i32 = status.lines().find(|l| l.starts_with("PPid:")).unwrap()[5..]
        .trim()
        .parse()
        .unwrap();
    assert_ne!(ppid as u32, std::process::id(), "reparented, not our child");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    let (pgrp, session) = (fields[2], fields[3]);
    assert_ne!(
        session,
        pid.to_string(),
        "the second fork is not a session leader"
    );
    assert_eq!(pgrp, session);
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/fd/0"))
            .unwrap()
            .to_str(),
        Some("/dev/null")
    );
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
        t.root().canonicalize().unwrap()
    );
    t.wait_log("tick 2 ", SECS(10));
    t.signal(Signal::SIGTERM);
    wait_for("stopped", SECS(10), || !alive(pid));
    assert!(!t.pidfile.exists());

    t.write_config("");
    t.remove_line("logfile = logs/testd.log");
    let out = t.run(&["--daemon"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--daemon needs `logfile`"),
        "{}",
        stderr(&out)
    );
}

fn id_line(pid: u32, key: &str) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    line[key.len()..]
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect()
}

#[test]
fn as_root_it_drops_to_user_and_group_and_can_chroot() {
    let nobody = User::from_name("nobody").unwrap().unwrap();
    let nogroup = Group::from_gid(nobody.gid).unwrap().unwrap();
    let t = Testd::new(&format!("user = nobody\ngroup = {}\n", nogroup.name));
    if !geteuid().is_root() {
        // Not root: nothing can be dropped, and the daemon says so rather than run as the wrong user.
        let out = t.run(&[]);
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr(&out).contains("cannot switch"), "{}", stderr(&out));
        return;
    }
    // The pidfile's directory must be the user's, so the pidfile can be removed at exit.
    chown(&t.root().join("logs"), Some(nobody.uid), Some(nobody.gid)).unwrap();
    let mut child = t.spawn();
    t.wait_log("tick 2 ", SECS(10));
    let pid = child.id();
    assert_eq!(id_line(pid, "Uid:"), vec![nobody.uid.as_raw(); 4]);
    assert_eq!(id_line(pid, "Gid:"), vec![nobody.gid.as_raw(); 4]);
    assert_eq!(id_line(pid, "Groups:"), vec![nobody.gid.as_raw()]);
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
    assert!(!t.pidfile.exists());

    // chroot = 1: /proc/PID/root is rootdir, and the log can still be reopened inside it.
    std::fs::set_permissions(t.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    t.write_config(&format!(
        "user = nobody\ngroup = {}\nchroot = 1\n",
        nogroup.name
    ));
    let mut child = t.spawn();
    let pid = child.id();
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/root")).unwrap(),
        t.root().canonicalize().unwrap()
    );
    assert_eq!(id_line(pid, "Uid:"), vec![nobody.uid.as_raw(); 4]);
    std::fs::rename(&t.log, t.root().join("logs/testd.log.old")).unwrap();
    t.signal(Signal::SIGHUP);
    t.wait_log("log reopened", SECS(10));
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
    assert!(!t.pidfile.exists());
}

#[test]
fn the_init_script_starts_reports_reloads_rotates_and_stops() {
    let t = Testd::new("Work.Message = first\n");
    let script = repo_root().join("conf/init.d/focuser");
    let init = |action: &str| {
        let out = Command::new("sh")
            .arg(&script)
            .arg(action)
            .env("NAME", "testd")
            .env("DAEMON", common::testd_binary())
            .env("CONFIG", &t.config)
            .env("STOP_WAIT", "10")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out)),
        )
    };
    assert_eq!(init("status").0, 3, "not running yet");
    let (rc, out) = init("start");
    assert_eq!(rc, 0, "{out}");
    let pid = t.pid();
    assert!(alive(pid));
    assert_eq!(init("start").0, 0, "starting a running service succeeds");
    assert_eq!(t.pid(), pid, "and starts nothing new");
    let (rc, out) = init("status");
    assert_eq!(rc, 0, "{out}");
    assert!(out.contains(&format!("running (pid {pid})")), "{out}");

    t.write_config("Work.Message = second\n");
    assert_eq!(init("reload").0, 0);
    t.wait_log("reloaded: message=second", SECS(10));
    assert_eq!(init("rotate").0, 0);
    t.wait_log("rotate hook: rotation 1", SECS(10));
    let (rc, out) = init("stop");
    assert_eq!(rc, 0, "{out}");
    assert!(!alive(pid));
    assert_eq!(init("status").0, 3);
    assert_eq!(init("stop").0, 0, "stopping a stopped service succeeds");
    assert_eq!(
        init("reload").0,
        7,
        "reload of a stopped service: not running"
    );

    // Dead with its pidfile left behind.
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    std::fs::write(&t.pidfile, format!("{dead_pid}\n")).unwrap();
    assert_eq!(init("status").0, 1);

    t.write_config("Work.TickMs = never\n");
    assert_eq!(init("start").0, 6, "a bad config: not configured");
}
