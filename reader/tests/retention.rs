//! Retention: a segment goes only once every sender's saved position is past it; past
//! Store.MaxBytes the oldest go anyway and what senders had not sent is counted as lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use focuser_formats::segment::{list_segments, write_position, Partition, Position};
use focuser_reader::sender::{retention, SenderSpec, SenderState};
use focuser_tests::{free_port, get, wait_for};

fn sender(rig: &Rig, name: &str, partition: Partition, at: Option<Position>) -> Arc<SenderState> {
    let spec = SenderSpec {
        group: "Index.0".into(),
        address: name.into(),
        partition,
        statuses: vec![],
        stream: "node1.Index.0".into(),
        position_file: rig.root().join(format!("pos_{name}.dat")),
        lost_file: rig.root().join(format!("lost_{name}.txt")),
    };
    if let Some(p) = at {
        write_position(&spec.position_file, p).unwrap();
    }
    Arc::new(SenderState::new(spec))
}

#[test]
fn no_segment_goes_while_a_sender_still_needs_it() {
    let rig = Rig::new();
    rig.write(1000, &["--max-items", "200"]); // segments 1..=5 sealed, 6 active and empty
    assert_eq!(list_segments(&rig.store()).unwrap(), vec![1, 2, 3, 4, 5, 6]);
    let whole = Partition { count: 1, index: 0 };
    let fast = sender(
        &rig,
        "fast",
        whole,
        Some(Position {
            file_id: 6,
            item_idx: 1,
        }),
    );
    let slow = sender(
        &rig,
        "slow",
        whole,
        Some(Position {
            file_id: 3,
            item_idx: 150,
        }),
    );
    let r = retention::enforce(&rig.store(), &[fast.clone(), slow.clone()], 0).unwrap();
    assert_eq!(r.deleted, 2);
    assert_eq!(list_segments(&rig.store()).unwrap(), vec![3, 4, 5, 6]);
    // A sender that never saved a position needs everything.
    let new = sender(&rig, "new", whole, None);
    let r = retention::enforce(&rig.store(), &[fast.clone(), new], 0).unwrap();
    assert_eq!(r.deleted, 0);
    // Once everyone is past everything, the active segment still stays.
    let r = retention::enforce(&rig.store(), std::slice::from_ref(&fast), 0).unwrap();
    assert_eq!(r.deleted, 3);
    assert_eq!(list_segments(&rig.store()).unwrap(), vec![6]);
    // No senders configured: nothing is deleted by anyone.
    rig.write(1400, &["--max-items", "200"]);
    assert_eq!(retention::enforce(&rig.store(), &[], 0).unwrap().deleted, 0);
}

#[test]
fn past_max_bytes_the_oldest_go_and_unsent_items_are_counted_as_lost() {
    let rig = Rig::new();
    rig.write(1000, &["--max-items", "200"]);
    let total = focuser_formats::segment::store_bytes(&rig.store()).unwrap();
    let half0 = Partition { count: 2, index: 0 };
    let half1 = Partition { count: 2, index: 1 };
    let a = sender(
        &rig,
        "a",
        half0,
        Some(Position {
            file_id: 1,
            item_idx: 101,
        }),
    );
    let b = sender(
        &rig,
        "b",
        half1,
        Some(Position {
            file_id: 1,
            item_idx: 1,
        }),
    );
    let seg_bytes = |id| {
        let p = focuser_formats::segment::item_path(&rig.store(), id);
        let x = focuser_formats::segment::index_path(&rig.store(), id);
        std::fs::metadata(p).unwrap().len() + std::fs::metadata(x).unwrap().len()
    };
    // Room for exactly segments 3 to 6.
    let room = total - seg_bytes(1) - seg_bytes(2);
    let r = retention::enforce(&rig.store(), &[a.clone(), b.clone()], room).unwrap();
    assert_eq!(r.overflowed, 2);
    assert_eq!(list_segments(&rig.store()).unwrap(), vec![3, 4, 5, 6]);
    // a had sent 100 of segment 1; b nothing: every item of their halves in 1 and 2 is lost.
    let want_a = expected(400, 2, 0).iter().filter(|&&n| n > 100).count() as u64;
    let want_b = expected(400, 2, 1).len() as u64;
    assert_eq!(a.lost_items.load(Ordering::Relaxed), want_a);
    assert_eq!(b.lost_items.load(Ordering::Relaxed), want_b);
    assert_eq!(r.lost_items, want_a + want_b);
}

#[test]
fn the_daemon_past_max_bytes_logs_an_error_and_counts_the_lost_items_in_stat_and_metrics() {
    let rig = Rig::new();
    rig.write(1000, &["--max-items", "200"]); // segments 1..=5 sealed, 6 active and empty
    let seg_bytes = |id| {
        let p = focuser_formats::segment::item_path(&rig.store(), id);
        let x = focuser_formats::segment::index_path(&rig.store(), id);
        std::fs::metadata(p).unwrap().len() + std::fs::metadata(x).unwrap().len()
    };
    let total = focuser_formats::segment::store_bytes(&rig.store()).unwrap();
    let room = total - seg_bytes(1) - seg_bytes(2);
    // The one receiver is down: nothing is ever acknowledged, and the store is too big.
    let r = free_port();
    let status = free_port();
    let s_cf = rig.sender_cf(
        &[("Index.0", &[r])],
        &format!(
            "Store.MaxBytes = {room}\nStore.CheckInterval = 1\nstatus_listen = 127.0.0.1:{status}"
        ),
    );
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    wait_for("segments 1 and 2 to go", Duration::from_secs(20), || {
        list_segments(&rig.store()).unwrap() == vec![3, 4, 5, 6]
    });
    let label = format!("daemon=\"reader\",group=\"Index.0\",receiver=\"127.0.0.1:{r}\"");
    wait_for(
        "the lost items in /metrics",
        Duration::from_secs(10),
        || {
            let m = get(status, "/metrics");
            m.contains(&format!(
                "focuser_reader_sender_lost_items_total{{{label}}} 400"
            )) && m.contains("focuser_reader_segments_overflowed_total{daemon=\"reader\"} 2")
        },
    );
    let log = rig.log("sender");
    assert!(
        log.contains("ERROR") && log.contains("Store.MaxBytes") && log.contains("200 items lost"),
        "{log}"
    );
    assert!(sender.stop());
    // reader stat, another process, shows the same count.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reader"))
        .args(["-c", s_cf.to_str().unwrap(), "stat"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let header = text.lines().find(|l| l.starts_with("group")).unwrap();
    assert!(header.ends_with("lost"), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains(&format!("127.0.0.1:{r}")))
        .unwrap();
    assert_eq!(line.split_whitespace().last(), Some("400"), "{text}");
    // The receiver comes up: it gets what is left, 401..=1000, and the count survives the
    // sender's restart.
    let (r_cf, _) = {
        let (cf, port) = rig.receiver_cf("r", "");
        let text = std::fs::read_to_string(&cf)
            .unwrap()
            .replace(&format!(":{port}"), &format!(":{r}"));
        std::fs::write(&cf, text).unwrap();
        (cf, r)
    };
    let _recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let got = rig.root().join("r/received");
    wait_for("the rest", Duration::from_secs(30), || {
        ns(&got) == (401..=1000).collect::<Vec<u64>>()
    });
    wait_for("the count after a restart", Duration::from_secs(10), || {
        get(status, "/metrics").contains(&format!(
            "focuser_reader_sender_lost_items_total{{{label}}} 400"
        ))
    });
    assert!(sender.stop());
}

#[test]
fn a_saved_position_this_store_cannot_have_keeps_every_segment() {
    let rig = Rig::new();
    rig.write(600, &["--max-items", "200"]); // segments 1..=3 sealed, 4 active and empty
    let whole = Partition { count: 1, index: 0 };
    // Position files of another store: past its end, and past the end of segment 2.
    for (name, at) in [
        (
            "beyond",
            Position {
                file_id: 9,
                item_idx: 1,
            },
        ),
        (
            "inside",
            Position {
                file_id: 2,
                item_idx: 500,
            },
        ),
    ] {
        let s = sender(&rig, name, whole, Some(at));
        let r = retention::enforce(&rig.store(), std::slice::from_ref(&s), 0).unwrap();
        assert_eq!(r.deleted, 0, "{name}");
        assert_eq!(list_segments(&rig.store()).unwrap(), vec![1, 2, 3, 4]);
        // And it lags by everything, not by nothing.
        let l = focuser_reader::sender::lag::lag(&rig.store(), s.saved(), whole).unwrap();
        assert_eq!(l.items, 600, "{name}");
    }
}

#[test]
fn a_segment_stays_until_the_sendfile_shipper_of_the_store_has_it_too() {
    let rig = Rig::new();
    rig.write(1000, &["--max-items", "200"]); // segments 1..=5 sealed, 6 active and empty
    let (items_cf, _) = rig.receiver_cf("items", "");
    let items_port = port_of(&items_cf);
    // The whole-file receiver is down at first.
    let files_port = free_port();
    let status = free_port();
    let s_cf = rig.sender_cf(
        &[("Index.0", &[items_port])],
        &format!(
            "Store.CheckInterval = 1\nstatus_listen = 127.0.0.1:{status}\n\
             SendFile.1.Address = 127.0.0.1:{files_port}\nSendFile.1.Dir = {store}\n\
             SendFile.1.Kind = segments\nSendFile.1.Inbox = segments-node1\n",
            store = rig.store().display()
        ),
    );
    let _items = Proc::start(&["-c", items_cf.to_str().unwrap(), "--recv"]);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let got = rig.root().join("items/received");
    wait_for("the items", Duration::from_secs(30), || {
        ns(&got) == (1..=1000).collect::<Vec<u64>>()
    });
    // Several retention checks after the item sender passed everything: nothing goes.
    let checks = |m: &str| -> u64 {
        m.lines()
            .find(|l| l.starts_with("focuser_reader_retention_checks_total"))
            .and_then(|l| l.split_whitespace().last())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let before = checks(&get(status, "/metrics"));
    wait_for(
        "three more retention checks",
        Duration::from_secs(20),
        || checks(&get(status, "/metrics")) >= before + 3,
    );
    assert_eq!(
        list_segments(&rig.store()).unwrap(),
        vec![1, 2, 3, 4, 5, 6],
        "the sendfile shipper has not shipped them"
    );
    // The whole-file receiver comes up: it gets the sealed pairs, then they go.
    let (files_cf, port) = rig.receiver_cf("files", "");
    let text = std::fs::read_to_string(&files_cf)
        .unwrap()
        .replace(&format!(":{port}"), &format!(":{files_port}"));
    std::fs::write(&files_cf, text).unwrap();
    let _files = Proc::start(&["-c", files_cf.to_str().unwrap(), "--recv"]);
    wait_for(
        "the shipped segments to go",
        Duration::from_secs(30),
        || list_segments(&rig.store()).unwrap() == vec![6],
    );
    let inbox = rig.root().join("files/inbox/segments-node1");
    let mut names: Vec<String> = std::fs::read_dir(&inbox)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(sender.stop());
}

/// The port in a receiver's config (`Recv.Listen = 127.0.0.1:PORT`).
fn port_of(cf: &std::path::Path) -> u16 {
    let text = std::fs::read_to_string(cf).unwrap();
    let line = text.lines().find(|l| l.starts_with("Recv.Listen")).unwrap();
    line.rsplit(':').next().unwrap().trim().parse().unwrap()
}
