//! SIGUSR2 as an operator sends it: every key a reload applies is in effect from the next
//! cycle on (the directories, `Cycle.MaxFiles`, the URL rules: in what the cycle does; the
//! rest on the status page's running config), and the restart-only keys are named in the
//! log and keep their running values.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{line, nodes, Site, T0};
use focuser_daemon::config::{Key, Reload};
use focuser_daemon::Config;
use focuser_master::MasterConfig;
use focuser_tests::TestDb;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

fn wait_for(what: &str, check: impl FnMut() -> bool) {
    focuser_tests::wait_for(what, Duration::from_secs(20), check);
}

/// The running config as the status page shows it.
fn shown(port: u16) -> Vec<Key> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET /status.json HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1;
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    serde_json::from_value(json["config"].clone()).unwrap()
}

fn edit(site: &Site, changes: &[(&str, &str)], added: &str) {
    let mut text = std::fs::read_to_string(&site.config).unwrap();
    for (from, to) in changes {
        assert!(text.contains(from), "{from:?} not in {text}");
        text = text.replace(from, to);
    }
    std::fs::write(&site.config, format!("{text}{added}")).unwrap();
}

#[test]
fn every_reloadable_key_takes_effect_and_restart_only_ones_wait() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let site = Site::new(
        db.url(),
        &format!("debuglevel = 40\nstatus_listen = {port}\nCycle.Interval = 3600\n"),
    );
    let old = Config::<MasterConfig>::load(&site.config, None).unwrap();
    let mut child = site.spawn(&["--now", &common::stamp(T0 + 60)]);
    let pid = Pid::from_raw(child.id() as i32);
    wait_for("the first cycle", || {
        site.log().contains("no reflog files ready")
    });

    edit(
        &site,
        &[
            ("name = m1", "name = m2"),
            ("incoming_dir = incoming", "incoming_dir = incoming2"),
            ("queue_dir = queue", "queue_dir = queue2"),
            ("done_dir = done", "done_dir = done2"),
            ("Cycle.SettleSeconds = 0", "Cycle.SettleSeconds = 1"),
            ("Cycle.Interval = 3600", "Cycle.Interval = 3000"),
        ],
        "rejects_dir = rejects2\nbad_dir = bad2\ntmp_dir = tmp2\nTimeZone = -03:00\n\
         Cycle.MaxFiles = 1\nCycle.MemoryLimit = 512\nFilter.Window = 1800\n\
         Filter.Retention = 7200\nUrl.MaxLength = 40\nUrl.AllowIpLiterals = 1\n\
         Url.AllowPrivate = 1\n",
    );
    let new = Config::<MasterConfig>::load(&site.config, None).unwrap();
    let new_keys = new.keys();
    let unchanged: Vec<String> = old
        .keys()
        .into_iter()
        .filter(|k| k.reload == Reload::Live && !Config::<MasterConfig>::is_common(&k.name))
        .filter(|k| new_keys.contains(k))
        .map(|k| k.name)
        .collect();
    assert!(
        unchanged.is_empty(),
        "this test leaves {unchanged:?} as they were"
    );
    std::fs::create_dir_all(site.root().join("incoming2")).unwrap();
    kill(pid, Signal::SIGUSR2).unwrap();
    wait_for("the reload", || {
        site.log().contains(
            "changed keys that take effect only at restart (running values kept): name, queue_dir",
        )
    });
    let running = shown(port);
    for k in &new_keys {
        let on_page = running.iter().find(|r| r.name == k.name).unwrap();
        match k.reload {
            Reload::Live => assert_eq!(on_page.value, k.value, "{}", k.name),
            Reload::Restart => assert_eq!(on_page.reload, Reload::Restart, "{}", k.name),
        }
    }
    let value = |name: &str| {
        running
            .iter()
            .find(|k| k.name == name)
            .unwrap()
            .value
            .clone()
    };
    assert_eq!(
        (value("name"), value("queue_dir")),
        ("m1".into(), "queue".into())
    );

    // The next cycle reads incoming2, takes one file, rejects a URL past 40 bytes into
    // rejects2 and forwards an IP address and localhost; its queue files are still m1's.
    let long = format!("http://b.ru/{}", "x".repeat(40));
    let r1 = [
        line(T0, "http://a.ru/x", 1, ""),
        line(T0, &long, 1, ""),
        line(T0, "http://8.8.8.8/ip", 1, ""),
        line(T0, "http://localhost/lo", 1, ""),
    ];
    std::fs::write(
        site.root().join("incoming2/r1.log"),
        format!("header\n{}", r1.concat()),
    )
    .unwrap();
    std::fs::write(
        site.root().join("incoming2/r2.log"),
        format!("header\n{}", line(T0, "http://c.ru/y", 1, "")),
    )
    .unwrap();
    kill(pid, Signal::SIGUSR1).unwrap();
    wait_for("one file done", || site.names("done2") == ["r1.log"]);
    wait_for("its queue file", || !site.queue_files().is_empty());
    assert!(site.names("incoming2").contains(&"r2.log".to_string()));
    assert!(site.queue_files().keys().all(|f| f.contains("/m1-")));
    let urls: Vec<String> = site.forwarded().into_iter().map(|(_, r)| r.url).collect();
    for url in ["http://a.ru/x", "http://8.8.8.8/ip", "http://localhost/lo"] {
        assert!(urls.iter().any(|u| u == url), "{url} not in {urls:?}");
    }
    let rejects = std::fs::read_to_string(site.root().join("rejects2/r1.log.rej")).unwrap();
    assert!(rejects.contains(&long), "{rejects}");
    // Cycle.MaxFiles = 1 left r2.log for the next cycle.
    kill(pid, Signal::SIGUSR1).unwrap();
    wait_for("the second file done", || {
        site.names("done2") == ["r1.log", "r2.log"]
    });

    kill(pid, Signal::SIGTERM).unwrap();
    assert!(child.wait().unwrap().success());
}
