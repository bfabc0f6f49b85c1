//! Each signal does its job, on a real process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::{Duration, Instant};

use common::Testd;
use focuser_tests::{repo_root, wait_exit, wait_for};
use nix::sys::signal::Signal;
use nix::unistd::{getgid, getuid, Group, User};

const SECS: fn(u64) -> Duration = Duration::from_secs;

/// tick number -> how many times it was logged, over the given files; every line must be whole.
fn ticks(texts: &[String]) -> BTreeMap<u64, usize> {
    let mut seen = BTreeMap::new();
    for text in texts {
        for line in text.lines() {
            assert!(
                line.contains(" testd[") && line.len() > 30,
                "a torn or foreign line: {line:?}"
            );
            if let Some(rest) = line.split(" INFO  tick ").nth(1) {
                let n: u64 = rest.split_whitespace().next().unwrap().parse().unwrap();
                *seen.entry(n).or_insert(0) += 1;
            }
        }
    }
    seen
}

#[test]
fn hup_with_the_real_logrotate_keeps_every_line_exactly_once() {
    let t = Testd::new("Work.TickMs = 1\n");
    let mut child = t.spawn();
    t.wait_log("tick 300 ", SECS(20));

    // The shipped logrotate file, pointed at this rootdir and this user.
    let logs = t.root().join("logs");
    let user = User::from_uid(getuid()).unwrap().unwrap().name;
    let group = Group::from_gid(getgid()).unwrap().unwrap().name;
    let shipped = std::fs::read_to_string(repo_root().join("conf/logrotate.d/focuser")).unwrap();
    let conf = shipped
        .replace("/var/lib/focuser/*/logs", logs.to_str().unwrap())
        .replace(
            "create 0640 focuser focuser",
            &format!("create 0640 {user} {group}"),
        );
    assert_ne!(conf, shipped);
    let conf_path = t.root().join("logrotate.conf");
    std::fs::write(&conf_path, conf).unwrap();
    std::fs::set_permissions(&conf_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new("logrotate")
        .arg("-f")
        .arg("-s")
        .arg(t.root().join("logrotate.state"))
        .arg(&conf_path)
        .output()
        .expect("logrotate is installed by scripts/test.sh");
    assert!(
        out.status.success(),
        "logrotate: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    t.wait_log("log reopened", SECS(10));
    let rotated = logs.join("testd.log.1");
    let last_before = *ticks(&[std::fs::read_to_string(&rotated).unwrap()])
        .keys()
        .last()
        .unwrap();
    t.wait_log(&format!("tick {} ", last_before + 300), SECS(20));
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());

    let old = std::fs::read_to_string(&rotated).unwrap();
    let new = t.log_text();
    assert!(!old.contains("log reopened") && new.contains("log reopened"));
    let seen = ticks(&[old, new]);
    let max = *seen.keys().last().unwrap();
    assert!(max > last_before + 300);
    let missing: Vec<u64> = (1..=max).filter(|n| !seen.contains_key(n)).collect();
    let doubled: Vec<u64> = seen
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(n, _)| *n)
        .collect();
    assert!(missing.is_empty(), "lines lost: {missing:?}");
    assert!(doubled.is_empty(), "lines written twice: {doubled:?}");
}

#[test]
fn usr2_applies_a_valid_config_and_keeps_the_old_one_on_a_bad_file() {
    let t = Testd::new("Work.Message = one\n");
    let mut child = t.spawn();
    t.wait_log("tick 2 one", SECS(10));

    t.write_config("Work.Message = two\n");
    t.signal(Signal::SIGUSR2);
    t.wait_log("reloaded: message=two", SECS(10));
    t.wait_log(" two\n", SECS(10));

    t.write_config("Work.Message = three\nWork.StopDelayMs = soon\n");
    t.signal(Signal::SIGUSR2);
    t.wait_log("reload rejected, the running config stays", SECS(10));
    let log = t.log_text();
    assert!(
        log.contains("testd.cf:6: Work.StopDelayMs: expected a non-negative integer"),
        "{log}"
    );
    let after = log.len();
    wait_for("still ticking with the old config", SECS(5), || {
        t.log_text()[after..].contains(" two\n")
    });
    assert!(!t.log_text().contains("three"));

    // A key that cannot change live is named, and its running value kept.
    t.write_config("Work.Message = four\npidfile = logs/other.pid\n");
    t.remove_line("pidfile = logs/testd.pid");
    t.signal(Signal::SIGUSR2);
    t.wait_log(
        "take effect only at restart (running values kept): pidfile",
        SECS(10),
    );
    t.wait_log("reloaded: message=four", SECS(10));

    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
    assert!(
        !t.pidfile.exists(),
        "the running pidfile is the one removed"
    );
}

#[test]
fn usr1_reaches_the_rotate_hook() {
    let t = Testd::new("");
    let mut child = t.spawn();
    t.signal(Signal::SIGUSR1);
    t.wait_log("rotate hook: rotation 1", SECS(10));
    t.signal(Signal::SIGUSR1);
    t.wait_log("rotate hook: rotation 2", SECS(10));
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
}

#[test]
fn term_stops_gracefully_within_stop_timeout() {
    let t = Testd::new("stop_timeout = 5\nWork.StopDelayMs = 300\n");
    let mut child = t.spawn();
    t.wait_log("tick 3 ", SECS(10));
    let asked = Instant::now();
    t.signal(Signal::SIGTERM);
    let status = wait_exit(&mut child, SECS(5));
    assert!(status.success(), "{status:?}");
    assert!(
        asked.elapsed() >= Duration::from_millis(300),
        "it finished its work in hand"
    );
    assert!(!t.pidfile.exists(), "pidfile removed");
    let log = t.log_text();
    assert!(
        log.contains("finishing work in hand") && log.trim_end().ends_with("testd stopped"),
        "{log}"
    );
}

#[test]
fn a_second_term_exits_at_once() {
    let t = Testd::new("stop_timeout = 120\nWork.StopDelayMs = 60000\n");
    let mut child = t.spawn();
    t.signal(Signal::SIGTERM);
    t.wait_log("finishing work in hand", SECS(10));
    let asked = Instant::now();
    t.signal(Signal::SIGTERM);
    // "At once" against StopDelay 60 s and stop_timeout 120 s, which a hang would wait out;
    // 20 s leaves room for a loaded CI machine.
    let status = wait_exit(&mut child, SECS(30));
    assert!(asked.elapsed() < SECS(20), "{:?}", asked.elapsed());
    assert_eq!(status.code(), Some(1));
    assert!(!t.pidfile.exists());
    assert!(t.log_text().contains("second stop signal: exiting at once"));
}

#[test]
fn a_stop_slower_than_stop_timeout_is_cut_short() {
    let t = Testd::new("stop_timeout = 1\nWork.StopDelayMs = 60000\n");
    let mut child = t.spawn();
    let asked = Instant::now();
    t.signal(Signal::SIGINT);
    // stop_timeout 1 s against StopDelay 60 s, which it would wait out were the stop_timeout
    // ignored; 20 s leaves room for a loaded CI machine.
    let status = wait_exit(&mut child, SECS(30));
    assert!(asked.elapsed() < SECS(20), "{:?}", asked.elapsed());
    assert_eq!((status.code(), status.signal()), (Some(1), None));
    assert!(t
        .log_text()
        .contains("did not stop within stop_timeout (1 s)"));
    assert!(!t.pidfile.exists());
}

#[test]
fn a_logconfig_yaml_is_used_and_rebuilt_on_hup() {
    let shipped = std::fs::read_to_string(repo_root().join("conf/log4rs.yaml")).unwrap();
    let yaml = shipped
        .replace("logs/master.log", "logs/testd.log")
        .replace("master[", "yamlcfg[");
    assert_ne!(yaml, shipped);
    let t = Testd::new("logconfig = conf/log4rs.yaml\n");
    t.remove_line("logfile = logs/testd.log");
    std::fs::create_dir_all(t.root().join("conf")).unwrap();
    std::fs::write(t.root().join("conf/log4rs.yaml"), yaml).unwrap();
    let mut child = t.spawn();
    t.wait_log("tick 3 ", SECS(10));
    assert!(
        t.log_text()
            .contains(&format!("yamlcfg[{}] INFO", child.id())),
        "{}",
        t.log_text()
    );

    std::fs::rename(&t.log, t.root().join("logs/testd.log.1")).unwrap();
    t.signal(Signal::SIGHUP);
    t.wait_log("log reopened", SECS(10));
    t.wait_log("tick", SECS(10));
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());

    // A broken YAML file is a start-up error naming it.
    std::fs::write(t.root().join("conf/log4rs.yaml"), "appenders: [unclosed\n").unwrap();
    let out = t.run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("log config ") && err.contains("conf/log4rs.yaml: appenders"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
