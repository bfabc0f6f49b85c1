//! `Store.FloorFile`: the store's owner (yacobot, whose archive this is) keeps a retention of
//! its own; the reader deletes only below the floor it publishes, whatever the receivers have,
//! and an unreadable, missing or symlinked floor file deletes nothing, logged and counted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use focuser_formats::segment::{list_segments, read_position, write_position, Position};
use focuser_tests::{free_port, get, metric, wait_for};

fn floor_at(file: &Path, file_id: u64) {
    write_position(
        file,
        Position {
            file_id,
            item_idx: 1,
        },
    )
    .unwrap();
}

/// Waits for `n` more retention checks that found the floor file bad.
fn bad_checks(status: u16, n: f64) {
    let series = "focuser_reader_retention_floor_errors_total{daemon=\"reader\"}";
    let before = metric(status, series).unwrap_or(0.0);
    wait_for(
        "retention checks with a bad floor",
        Duration::from_secs(20),
        || metric(status, series).unwrap_or(0.0) >= before + n,
    );
}

#[test]
fn only_segments_below_the_owners_floor_go_and_a_bad_floor_keeps_everything() {
    let rig = Rig::new();
    rig.write(1000, &["--max-items", "200"]); // segments 1..=5 sealed, 6 active and empty
    let (r_cf, r) = rig.receiver_cf("r", "");
    let _recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    let floor = rig.root().join("retention.floor");
    let status = free_port();
    let s_cf = rig.sender_cf(
        &[("Index.0", &[r])],
        &format!(
            "Store.CheckInterval = 1\nStore.FloorFile = {}\nstatus_listen = 127.0.0.1:{status}",
            floor.display()
        ),
    );
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    // Everything shipped, and the sender's position saved past every sealed segment.
    let got = rig.root().join("r/received");
    wait_for("everything shipped", Duration::from_secs(30), || {
        ns(&got) == (1..=1000).collect::<Vec<u64>>()
    });
    let state = rig.root().join("sender/state");
    wait_for(
        "the position saved at the end",
        Duration::from_secs(20),
        || {
            std::fs::read_dir(&state).unwrap().flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with("pos_")
                    && read_position(&e.path())
                        .ok()
                        .flatten()
                        .is_some_and(|p| p.file_id >= 6)
            })
        },
    );
    let all = vec![1, 2, 3, 4, 5, 6];
    // No floor published yet: nothing goes.
    bad_checks(status, 2.0);
    assert_eq!(list_segments(&rig.store()).unwrap(), all);
    // A symlink to a floor, and a damaged floor: nothing goes either.
    let elsewhere = rig.root().join("elsewhere.floor");
    floor_at(&elsewhere, 6);
    std::os::unix::fs::symlink(&elsewhere, &floor).unwrap();
    bad_checks(status, 2.0);
    assert_eq!(list_segments(&rig.store()).unwrap(), all);
    std::fs::remove_file(&floor).unwrap();
    std::fs::write(&floor, b"FCSRPOS1 not a position").unwrap();
    bad_checks(status, 2.0);
    assert_eq!(list_segments(&rig.store()).unwrap(), all);
    let log = rig.log("sender");
    for why in [
        "publishes no retention floor",
        "a symbolic link",
        "bad position file",
    ] {
        assert!(log.contains(why), "{why}: {log}");
    }
    // The owner's floor at 3: 1 and 2 go, 3 and later stay although every receiver has them.
    floor_at(&floor, 3);
    wait_for("segments 1 and 2 to go", Duration::from_secs(20), || {
        list_segments(&rig.store()).unwrap() == vec![3, 4, 5, 6]
    });
    let checks = "focuser_reader_retention_checks_total{daemon=\"reader\"}";
    let before = metric(status, checks).unwrap();
    wait_for("two more checks", Duration::from_secs(20), || {
        metric(status, checks).unwrap() >= before + 2.0
    });
    assert_eq!(list_segments(&rig.store()).unwrap(), vec![3, 4, 5, 6]);
    assert!(get(status, "/metrics").contains("reader_retention_floor_errors_total"));
    // The floor moves up: the rest goes, the active segment never.
    floor_at(&floor, 99);
    wait_for("the rest to go", Duration::from_secs(20), || {
        list_segments(&rig.store()).unwrap() == vec![6]
    });
    assert!(sender.stop());
}
