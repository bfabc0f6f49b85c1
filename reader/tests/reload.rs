//! SIGUSR2 as an operator sends it: every key a reload applies reaches the senders, retention
//! and the receiver (not only the runtime's copy of the config), and a restart-only key is
//! named in the log and keeps its running value.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use focuser_daemon::config::{Key, Reload};
use focuser_daemon::Config;
use focuser_reader::ReaderConfig;
use focuser_tests::{free_port, get, metric, wait_for};

const SECS: fn(u64) -> Duration = Duration::from_secs;

fn reload(p: &Proc) {
    let pid = nix::unistd::Pid::from_raw(p.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGUSR2).unwrap();
}

/// Replaces each `from` line (which must be there) of the config file by `to`.
fn edit(cf: &Path, changes: &[(&str, &str)]) {
    let mut text = std::fs::read_to_string(cf).unwrap();
    for (from, to) in changes {
        assert!(text.contains(from), "{from:?} not in {text}");
        text = text.replace(from, to);
    }
    std::fs::write(cf, text).unwrap();
}

fn reloads(rig: &Rig, name: &str) -> usize {
    rig.log(name).matches("config reloaded from").count()
}

/// Waits until daemon `name`'s log holds `needle`; fails with the log if it does not.
fn wait_log(rig: &Rig, name: &str, needle: &str) {
    let end = std::time::Instant::now() + SECS(30);
    while !rig.log(name).contains(needle) {
        assert!(
            std::time::Instant::now() < end,
            "no {needle:?} in the log of {name}:\n{}",
            rig.log(name)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn counter(port: u16, series: &str) -> f64 {
    metric(port, series).unwrap_or(0.0)
}

#[test]
fn a_reload_reaches_the_senders_retention_and_the_receiver() {
    let rig = Rig::new();
    let (s_port, r_port) = (free_port(), free_port());
    let (r_cf, r) = rig.receiver_cf(
        "r",
        &format!("status_listen = 127.0.0.1:{r_port}\nSend.BatchBytes = 4096\nMaxFrame = 33554432"),
    );
    let s_cf = rig.sender_cf(
        &[("Index.0", &[r])],
        &format!("status_listen = 127.0.0.1:{s_port}\nStore.CheckInterval = 3600"),
    );
    let recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    let sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    rig.write(40, &[]);
    wait_for("the first items", SECS(30), || {
        counter(r_port, "focuser_reader_recv_items_total{daemon=\"reader\"}") == 40.0
    });
    let batches = |port| counter(port, "focuser_reader_recv_batches_total{daemon=\"reader\"}");
    let before = batches(r_port);
    assert!(
        before < 40.0,
        "{before} batches for 40 items of Send.BatchItems = 64"
    );
    let checks = "focuser_reader_retention_checks_total{daemon=\"reader\"}";
    assert_eq!(counter(s_port, checks), 0.0, "Store.CheckInterval = 3600");

    // One item a batch, a retention check every second: from the next batch on.
    edit(
        &s_cf,
        &[
            ("Send.BatchItems = 64", "Send.BatchItems = 1"),
            ("Store.CheckInterval = 3600", "Store.CheckInterval = 1"),
        ],
    );
    reload(&sender);
    wait_for("the sender's reload", SECS(10), || {
        reloads(&rig, "sender") == 1
    });
    rig.write(60, &[]);
    wait_for("the next items", SECS(30), || {
        counter(r_port, "focuser_reader_recv_items_total{daemon=\"reader\"}") == 60.0
    });
    assert_eq!(batches(r_port) - before, 20.0, "a batch per item");
    wait_for("retention checks", SECS(10), || {
        counter(s_port, checks) >= 1.0
    });

    // The receiver's MaxFrame: a frame of one 9 KB item is now too large.
    edit(&r_cf, &[("MaxFrame = 33554432", "MaxFrame = 8192")]);
    reload(&recv);
    wait_for("the receiver's reload", SECS(10), || {
        reloads(&rig, "r") == 1
    });
    rig.write(61, &["--min", "9000", "--max", "9100"]);
    wait_log(&rig, "r", "frame too large");
    assert_eq!(
        counter(r_port, "focuser_reader_recv_items_total{daemon=\"reader\"}"),
        60.0
    );

    // Its allowdb: read again, the sender (127.0.0.1) is no longer let in.
    std::fs::write(rig.root().join("hosts.allow"), "10.9.9.9\n").unwrap();
    edit(&r_cf, &[("MaxFrame = 8192", "MaxFrame = 33554432")]);
    reload(&recv);
    wait_for("the receiver's second reload", SECS(10), || {
        reloads(&rig, "r") == 2
    });
    wait_log(&rig, "r", "not in allowdb");
    assert!(!rig.log("r").contains("reload rejected"));
}

/// The running config as the status page shows it: name → (value, reload).
fn shown(port: u16) -> Vec<Key> {
    let json: serde_json::Value = serde_json::from_str(&get(port, "/status.json")).unwrap();
    serde_json::from_value(json["config"].clone()).unwrap()
}

#[test]
fn every_reloadable_key_takes_effect_and_a_restart_only_one_waits() {
    let rig = Rig::new();
    let s_port = free_port();
    let (r_cf, r) = rig.receiver_cf("r", "");
    let s_cf = rig.sender_cf(
        &[("Index.0", &[r])],
        &format!("status_listen = 127.0.0.1:{s_port}"),
    );
    let old = Config::<ReaderConfig>::load(&s_cf, None).unwrap();
    let _recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    let sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    rig.write(30, &[]);
    let received = rig.root().join("r/received");
    wait_for("the first items", SECS(30), || items(&received).len() == 30);

    edit(
        &s_cf,
        &[
            ("Send.RetryMin = 0.1", "Send.RetryMin = 0.2"),
            ("Send.RetryMax = 0.5", "Send.RetryMax = 1.5"),
            ("Send.BatchItems = 64", "Send.BatchItems = 7"),
            ("Send.Timeout = 5", "Send.Timeout = 9"),
        ],
    );
    let mut text = std::fs::read_to_string(&s_cf).unwrap();
    text.push_str(
        "MaxFrame = 16777216\nSend.SaveEvery = 10\nSend.BatchBytes = 1048576\nSend.Window = 2\n\
         Send.Records = 0\nSend.ResendRate = 50\nStore.MaxBytes = 1000000000\nStore.CheckInterval = 2\n\
         Store.FloorFile = retention.floor\nStore.SnapshotDir = snapshots\nstream_epoch = 1\n",
    );
    std::fs::write(&s_cf, text).unwrap();
    let new = Config::<ReaderConfig>::load(&s_cf, None).unwrap();
    let new_keys = new.keys();
    let unchanged: Vec<String> = old
        .keys()
        .into_iter()
        .filter(|k| k.reload == Reload::Live && !Config::<ReaderConfig>::is_common(&k.name))
        .filter(|k| new_keys.contains(k))
        .map(|k| k.name)
        .collect();
    assert!(
        unchanged.is_empty(),
        "this test leaves {unchanged:?} as they were"
    );

    reload(&sender);
    wait_for("the reload", SECS(10), || reloads(&rig, "sender") == 1);
    assert!(
        rig.log("sender").contains(
            "changed keys that take effect only at restart (running values kept): stream_epoch"
        ),
        "{}",
        rig.log("sender")
    );
    let running = shown(s_port);
    for k in new_keys {
        let on_page = running.iter().find(|r| r.name == k.name).unwrap();
        match k.reload {
            Reload::Live => assert_eq!(on_page.value, k.value, "{}", k.name),
            Reload::Restart => assert_eq!(on_page.reload, Reload::Restart, "{}", k.name),
        }
    }
    let epoch = running.iter().find(|k| k.name == "stream_epoch").unwrap();
    assert_eq!(epoch.value, "0", "the running stream_epoch stays");

    // The sender goes on with them: its stream has no new epoch, the next items arrive.
    rig.write(50, &[]);
    wait_for("the next items", SECS(30), || items(&received).len() == 50);
    assert_eq!(per_stream(&received).len(), 1, "one stream");
}
