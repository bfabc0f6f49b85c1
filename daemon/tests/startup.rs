//! What a start refuses, `--check-config` refuses too, and `--daemon` reports in its exit
//! status before it detaches: the operator (or init script) sees the failure, never a
//! "started" daemon that dies a moment later.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use common::Testd;
use focuser_tests::{alive, repo_root, wait_exit, wait_for};
use nix::sys::signal::Signal;

const SECS: fn(u64) -> Duration = Duration::from_secs;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn chmod(path: &std::path::Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A rootdir with a private secret, an allowdb and a pwfile, all fine.
fn rig(extra: &str) -> Testd {
    let t = Testd::new(&format!(
        "allowdb = conf/hosts.allow\npwfile = conf/focuser.passwd\nWork.SecretFile = conf/testd.secret\n{extra}"
    ));
    let conf = t.root().join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(conf.join("hosts.allow"), "127.0.0.1\n").unwrap();
    std::fs::write(conf.join("testd.secret"), "a-secret-of-enough-length\n").unwrap();
    chmod(&conf.join("testd.secret"), 0o600);
    let out = t
        .command()
        .args(["passwd", "ops"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"s3cret\n")?;
            c.wait()
        })
        .unwrap();
    assert!(out.success());
    t
}

#[test]
fn check_config_refuses_what_the_start_refuses_and_daemon_mode_says_so() {
    let t = rig("");
    let ok = t.run(&["--check-config"]);
    assert!(ok.status.success(), "{}", stderr(&ok));

    let conf = t.root().join("conf");
    type Break = fn(&std::path::Path);
    type Mend = fn(&std::path::Path);
    let cases: [(&str, Break, Mend, &str); 4] = [
        (
            "testd.secret",
            |c| chmod(&c.join("testd.secret"), 0o644),
            |c| chmod(&c.join("testd.secret"), 0o600),
            "readable by group or others",
        ),
        (
            "focuser.passwd",
            |c| chmod(&c.join("focuser.passwd"), 0o644),
            |c| chmod(&c.join("focuser.passwd"), 0o600),
            "accessible by others",
        ),
        (
            "focuser.passwd",
            |c| std::fs::rename(c.join("focuser.passwd"), c.join("pw.away")).unwrap(),
            |c| std::fs::rename(c.join("pw.away"), c.join("focuser.passwd")).unwrap(),
            "No such file",
        ),
        (
            "hosts.allow",
            |c| std::fs::rename(c.join("hosts.allow"), c.join("allow.away")).unwrap(),
            |c| std::fs::rename(c.join("allow.away"), c.join("hosts.allow")).unwrap(),
            "No such file",
        ),
    ];
    for (file, break_it, mend, reason) in cases {
        break_it(&conf);
        let check = t.run(&["--check-config"]);
        let err = stderr(&check);
        assert_eq!(check.status.code(), Some(1), "{file}: {err}");
        assert!(err.contains(file) && err.contains(reason), "{file}: {err}");
        // The config is still printed: init scripts find the pidfile there.
        assert!(String::from_utf8_lossy(&check.stdout).contains("pidfile = logs/testd.pid"));

        let start = t.run(&["--daemon"]);
        let err = stderr(&start);
        assert_eq!(start.status.code(), Some(1), "{file}: {err}");
        assert!(err.contains(file) && err.contains(reason), "{file}: {err}");
        assert!(!t.pidfile.exists(), "{file}: nothing started");
        mend(&conf);
    }
    let ok = t.run(&["--check-config"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn daemon_mode_waits_for_the_main_loops_own_start_up() {
    // The main loop fails after the runtime started (pidfile, log, privileges): the starter
    // still hears of it and exits 1 with the reason, and nothing is left running.
    let t = rig("Work.FailStart = the store in received/ is damaged\n");
    let out = t.run(&["--daemon"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("testd: the store in received/ is damaged"),
        "{}",
        stderr(&out)
    );
    wait_for("the pidfile is gone", SECS(10), || !t.pidfile.exists());
    assert!(t.log_text().contains("the store in received/ is damaged"));

    // Ready means the main loop's own start-up is done: its secret was read before the
    // starter returned.
    t.remove_line("Work.FailStart = the store in received/ is damaged");
    let out = t.run(&["--daemon"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(t.log_text().contains("secret read: 26 bytes"));
    let pid = t.pid();
    t.signal(Signal::SIGTERM);
    wait_for("stopped", SECS(10), || !alive(pid));
}

#[test]
fn the_init_script_reports_a_failed_start() {
    let t = rig("Work.FailStart = cannot bind 127.0.0.1:7301: address in use\n");
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
    let (rc, out) = init("start");
    assert_eq!(rc, 1, "{out}");
    assert!(
        out.contains("cannot bind 127.0.0.1:7301: address in use")
            && out.contains("testd failed to start")
            && !out.contains("started"),
        "{out}"
    );
    assert_eq!(init("status").0, 3, "not running");

    // A secret others can read: --check-config still finds the pidfile, the start fails.
    t.remove_line("Work.FailStart = cannot bind 127.0.0.1:7301: address in use");
    chmod(&t.root().join("conf/testd.secret"), 0o640);
    let (rc, out) = init("start");
    assert_eq!(rc, 1, "{out}");
    assert!(
        out.contains("testd.secret: readable by group or others"),
        "{out}"
    );
    chmod(&t.root().join("conf/testd.secret"), 0o600);
    let (rc, out) = init("start");
    assert_eq!(rc, 0, "{out}");
    let pid = t.pid();
    assert!(alive(pid));
    assert_eq!(init("stop").0, 0);
    assert!(!alive(pid));
}

#[test]
fn the_foreground_start_refuses_the_same() {
    let t = rig("");
    chmod(&t.root().join("conf/testd.secret"), 0o604);
    let out = t.run(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("testd.secret: readable by group or others"));
    chmod(&t.root().join("conf/testd.secret"), 0o600);
    let mut child = t.spawn();
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
}
