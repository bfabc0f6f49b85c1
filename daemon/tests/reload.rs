//! SIGUSR2 and the common keys, as an operator meets them: every key a reload applies is in
//! effect at once (the log's name, file, level and YAML, who may connect and POST, the stop's
//! timeout), the daemon's own keys too; a restart-only key is named and keeps its value. The
//! status page's config section shows the running values.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::time::Duration;

use common::Testd;
use focuser_daemon::config::{Key, Reload};
use focuser_tests::{free_port, http, http_on, wait_exit};
use nix::sys::signal::Signal;

const SECS: fn(u64) -> Duration = Duration::from_secs;

/// A request from 127.0.0.2 (the kernel routes it; `allowdb` decides).
fn from_127_0_0_2(addr: SocketAddr, method: &str, path: &str, auth: Option<&str>) -> (u16, String) {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(&"127.0.0.2:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    socket.connect(&addr.into()).unwrap();
    let (status, _, body) = http_on(TcpStream::from(socket), method, path, auth);
    (status, body)
}

/// Sets `user`'s password with the daemon's `passwd` subcommand (into the config's pwfile).
fn passwd(t: &Testd, user: &str, password: &str) {
    use std::io::Write;
    let mut child = t
        .command()
        .args(["passwd", user])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{password}").unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

fn second_log(t: &Testd) -> String {
    std::fs::read_to_string(t.root().join("logs/second.log")).unwrap_or_default()
}

fn wait(what: &str, check: impl FnMut() -> bool) {
    focuser_tests::wait_for(what, SECS(10), check);
}

#[test]
fn every_reloadable_key_takes_effect_and_a_restart_only_one_waits() {
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let t = Testd::new(&format!(
        "status_listen = 127.0.0.1:{port}\nWork.TickMs = 20\nWork.Message = one\n"
    ));
    let mut child = t.spawn();
    t.wait_log("tick 2 one", SECS(10));
    assert_eq!(http(addr, "POST", "/rotate", Some("ops:s3cret")).0, 403);

    // Everything but logconfig (which would take the log over) and the level, at once.
    std::fs::create_dir_all(t.root().join("conf")).unwrap();
    std::fs::write(t.root().join("conf/hosts.allow"), "127.0.0.2\n").unwrap();
    t.edit_config("logfile = logs/testd.log", "logfile = logs/second.log");
    t.edit_config("Work.TickMs = 20", "Work.TickMs = 30");
    t.edit_config("Work.Message = one", "Work.Message = two");
    t.edit_config(
        &format!("status_listen = 127.0.0.1:{port}"),
        &format!("status_listen = 127.0.0.1:{}", free_port()),
    );
    t.append_config(
        "progname = testd2\nallowdb = conf/hosts.allow\npwfile = conf/focuser.passwd\n\
         stop_timeout = 20\nWork.StopDelayMs = 150\n",
    );
    passwd(&t, "ops", "s3cret");
    t.signal(Signal::SIGUSR2);
    // The reload's own line is the new log's first.
    wait("the reload", || {
        second_log(&t)
            .contains("take effect only at restart (running values kept): status_listen\n")
    });
    let pid = child.id();
    wait(
        "ticks in the new log, with the new name and message",
        || {
            second_log(&t).contains(&format!("testd2[{pid}] INFO  tick"))
                && second_log(&t).contains(" two\n")
        },
    );
    // Who may connect and POST: 127.0.0.2 only, on the running port, with the new password.
    assert_eq!(http(addr, "GET", "/status.json", None).0, 403);
    let (status, _) = from_127_0_0_2(addr, "POST", "/rotate", Some("ops:s3cret"));
    assert_eq!(status, 200);
    wait("the rotate hook", || {
        second_log(&t).contains("rotate hook: rotation 1")
    });

    // The level, then a log4rs YAML that takes the log over, and a pause.
    t.append_config("debuglevel = 40\n");
    t.signal(Signal::SIGUSR2);
    wait("a debug line", || {
        second_log(&t).contains("reloaded, and debug lines are logged")
    });
    let yaml = std::fs::read_to_string(focuser_tests::repo_root().join("conf/log4rs.yaml"))
        .unwrap()
        .replace("logs/master.log", "logs/yaml.log")
        .replace("master[", "yamlcfg[");
    std::fs::write(t.root().join("conf/log4rs.yaml"), yaml).unwrap();
    t.append_config("logconfig = conf/log4rs.yaml\nWork.Paused = 1\n");
    t.signal(Signal::SIGUSR2);
    let yaml_log = || std::fs::read_to_string(t.root().join("logs/yaml.log")).unwrap_or_default();
    wait("the YAML's log", || {
        yaml_log().contains(&format!("yamlcfg[{pid}] INFO  reloaded: message=two"))
    });

    // Every key the test set has its new value on the status page (restart-only ones their
    // running value), and no reloadable key was left out.
    let (status, body) = from_127_0_0_2(addr, "GET", "/status.json", None);
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let running: Vec<Key> = serde_json::from_value(json["config"].clone()).unwrap();
    let value = |name: &str| {
        running
            .iter()
            .find(|k| k.name == name)
            .unwrap()
            .value
            .clone()
    };
    let want = [
        ("progname", "testd2"),
        ("logfile", "logs/second.log"),
        ("logconfig", "conf/log4rs.yaml"),
        ("debuglevel", "40"),
        ("allowdb", "conf/hosts.allow"),
        ("pwfile", "conf/focuser.passwd"),
        ("stop_timeout", "20"),
        ("Work.TickMs", "30"),
        ("Work.Message", "two"),
        ("Work.StopDelayMs", "150"),
        ("Work.Paused", "1"),
        ("status_listen", &format!("127.0.0.1:{port}")),
    ];
    for (name, v) in want {
        assert_eq!(value(name), v, "{name}");
    }
    let mut live: Vec<&str> = running
        .iter()
        .filter(|k| k.reload == Reload::Live)
        .map(|k| k.name.as_str())
        .collect();
    let mut set: Vec<&str> = want[..want.len() - 1].iter().map(|(n, _)| *n).collect();
    live.sort_unstable();
    set.sort_unstable();
    assert_eq!(
        live, set,
        "the keys a reload applies are the ones this test changed"
    );

    // The stop: within the new stop_timeout, after the new delay.
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
    let log = yaml_log();
    assert!(log.contains("stopping (at most 20 s)"), "{log}");
    assert!(log.contains("finishing work in hand (150 ms)"), "{log}");
}
