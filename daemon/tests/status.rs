//! The status endpoint as a person, a Prometheus server and an operator with a password use it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use common::Testd;
use focuser_tests::{free_port, http, http_on, wait_exit};
use nix::sys::signal::Signal;

const SECS: fn(u64) -> Duration = Duration::from_secs;

/// Sets a password with the daemon's own `passwd` subcommand, the password on standard input.
fn passwd(t: &Testd, user: &str, password: &str) {
    let mut child = t
        .command()
        .args(["passwd", user])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{password}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "passwd: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn endpoint(extra: &str) -> (Testd, SocketAddr) {
    let port = free_port();
    let t = Testd::new(&format!(
        "status_listen = 127.0.0.1:{port}\nallowdb = conf/hosts.allow\npwfile = conf/focuser.passwd\n{extra}"
    ));
    std::fs::create_dir_all(t.root().join("conf")).unwrap();
    std::fs::write(
        t.root().join("conf/hosts.allow"),
        "# only this host\n127.0.0.1\n",
    )
    .unwrap();
    (t, format!("127.0.0.1:{port}").parse().unwrap())
}

#[test]
fn pages_json_and_metrics_show_the_daemons_figures() {
    let (t, addr) = endpoint("Work.Message = <b>&\n");
    passwd(&t, "ops", "s3cret");
    let mut child = t.spawn();
    t.wait_log("tick 3 ", SECS(10));

    let (status, head, html) = http(addr, "GET", "/", None);
    assert_eq!(status, 200);
    assert!(head.contains("text/html"));
    assert!(
        html.contains("<h1>testd</h1>")
            && html.contains("ticks_total")
            && html.contains("log_warnings_total"),
        "{html}"
    );
    assert!(html.contains(&format!("<b id=\"pid\">{}</b>", child.id())));

    let (status, _, json) = http(addr, "GET", "/status.json", None);
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["daemon"], "testd");
    assert_eq!(v["pid"], child.id());
    assert_eq!(v["config_file"], t.config.to_str().unwrap());
    let ticks = v["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "ticks_total")
        .unwrap();
    assert!(ticks["value"].as_f64().unwrap() >= 3.0);
    assert_eq!(ticks["kind"], "counter");

    let (status, head, metrics) = http(addr, "GET", "/metrics", None);
    assert_eq!(status, 200);
    assert!(head.contains("text/plain; version=0.0.4"));
    let scrape =
        prometheus_parse::Scrape::parse(metrics.lines().map(|l| Ok(l.to_string()))).unwrap();
    let sample = scrape
        .samples
        .iter()
        .find(|s| s.metric == "focuser_ticks_total")
        .expect("ticks in /metrics");
    assert_eq!(sample.labels.get("daemon"), Some("testd"));
    match sample.value {
        prometheus_parse::Value::Counter(n) | prometheus_parse::Value::Untyped(n) => {
            assert!(n >= 3.0)
        }
        ref other => panic!("ticks_total is {other:?}"),
    }
    assert!(scrape
        .samples
        .iter()
        .any(|s| s.metric == "focuser_uptime_seconds"));
    assert_eq!(
        scrape.docs.get("focuser_ticks_total").map(String::as_str),
        Some("work units done")
    );

    assert_eq!(http(addr, "GET", "/nowhere", None).0, 404);
    assert_eq!(http(addr, "GET", "/reload", None).0, 405);

    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
}

#[test]
fn posts_need_the_right_password() {
    let (t, addr) = endpoint("Work.Message = before\n");
    passwd(&t, "ops", "s3cret");
    let pw = std::fs::read_to_string(t.root().join("conf/focuser.passwd")).unwrap();
    assert!(
        pw.starts_with("ops:$argon2id$") && !pw.contains("s3cret"),
        "{pw}"
    );
    let mut child = t.spawn();

    let (status, head, _) = http(addr, "POST", "/reload", None);
    assert_eq!(status, 401);
    assert!(head.contains("WWW-Authenticate: Basic"), "{head}");
    assert_eq!(http(addr, "POST", "/reload", Some("ops:wrong")).0, 401);
    assert_eq!(http(addr, "POST", "/reload", Some("eve:s3cret")).0, 401);
    assert!(!t.log_text().contains("reloaded:"), "nothing happened");

    t.edit_config("Work.Message = before", "Work.Message = after");
    let (status, _, body) = http(addr, "POST", "/reload", Some("ops:s3cret"));
    assert_eq!((status, body.trim()), (200, "reload requested"));
    t.wait_log("reloaded: message=after", SECS(10));
    assert_eq!(http(addr, "POST", "/rotate", Some("ops:s3cret")).0, 200);
    t.wait_log("rotate hook: rotation 1", SECS(10));
    assert!(t.log_text().contains("ops@127.0.0.1 asked for Rotate"));

    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
}

#[test]
fn a_peer_not_in_allowdb_is_refused() {
    let (t, addr) = endpoint("");
    passwd(&t, "ops", "s3cret");
    let mut child = t.spawn();
    // Connect from 127.0.0.2: allowed by the kernel, not by hosts.allow.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(&"127.0.0.2:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    socket.connect(&addr.into()).unwrap();
    let (status, _, body) = http_on(TcpStream::from(socket), "GET", "/", None);
    assert_eq!(status, 403);
    assert!(body.contains("127.0.0.2 is not allowed"));
    t.wait_log(
        "status: refused (127.0.0.2): not allowed by allowdb",
        SECS(10),
    );
    assert_eq!(
        http(addr, "GET", "/", None).0,
        200,
        "127.0.0.1 is in hosts.allow"
    );

    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
}

#[test]
fn a_pwfile_others_can_read_is_refused_and_no_pwfile_means_no_posts() {
    let (t, addr) = endpoint("");
    passwd(&t, "ops", "s3cret");
    let pwfile = t.root().join("conf/focuser.passwd");
    std::fs::set_permissions(&pwfile, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = t.run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("focuser.passwd") && err.contains("accessible by others"),
        "{err}"
    );

    t.remove_line("pwfile = conf/focuser.passwd");
    let mut child = t.spawn();
    assert_eq!(http(addr, "POST", "/reload", Some("ops:s3cret")).0, 403);
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());

    // A missing pwfile is a start-up error that names it, once.
    std::fs::remove_file(&pwfile).unwrap();
    t.append_config("pwfile = conf/focuser.passwd\n");
    let out = t.run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}
