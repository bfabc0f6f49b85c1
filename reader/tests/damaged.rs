//! A sealed segment cut short in the middle of a record (`truncate -s`), through the real
//! binary: `reader stat` names the damage instead of panicking, and the sender ships every
//! other item, skips the damaged tail with one error naming the file and offset, and counts
//! the items it lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use focuser_formats::segment::{item_path, SegmentIndex};
use focuser_tests::{free_port, get, wait_for};

#[test]
fn a_sealed_segment_cut_short_is_reported_and_the_sender_ships_the_rest() {
    for records in [1, 0] {
        let rig = Rig::new();
        // Segments of 100 items: 1 to 4 sealed, 5 active.
        rig.write(450, &["--max-items", "100"]);
        let store = rig.store();
        // Cut inside item 60's header: the damage starts where item 60 does.
        let start = {
            let seg = SegmentIndex::open(&store, 2).unwrap().unwrap();
            seg.header(60).unwrap().offset
        };
        let cut = start + 30;
        let file = item_path(&store, 2);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_len(cut)
            .unwrap();
        // Items 60..=100 of segment 2 are the writer's 160..=200.
        let want: Vec<u64> = (1..=450).filter(|n| !(160..=200).contains(n)).collect();
        let s_port = free_port();
        let (r_cf, r) = rig.receiver_cf("r", "");
        let s_cf = rig.sender_cf(
            &[("Index.0", &[r])],
            &format!("status_listen = 127.0.0.1:{s_port}\nSend.Records = {records}"),
        );
        let out = Command::new(env!("CARGO_BIN_EXE_reader"))
            .args(["-c", s_cf.to_str().unwrap(), "stat"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}{err}");
        assert!(
            text.contains(&format!("{}: damaged from offset {start}", file.display()))
                && text.contains("41 items skipped"),
            "{text}"
        );
        let mut recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
        let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
        let got = rig.root().join("r/received");
        wait_for(
            "every item but the damaged tail",
            Duration::from_secs(60),
            || ns(&got).len() >= want.len(),
        );
        let label = format!("daemon=\"reader\",group=\"Index.0\",receiver=\"127.0.0.1:{r}\"");
        wait_for("the sender to be done", Duration::from_secs(20), || {
            let m = get(s_port, "/metrics");
            m.contains(&format!("focuser_reader_sender_lag_items{{{label}}} 0"))
        });
        let m = get(s_port, "/metrics");
        assert!(
            m.contains(&format!(
                "focuser_reader_sender_corrupt_items_total{{{label}}} 41"
            )),
            "Send.Records = {records}: {m}"
        );
        assert!(
            sender.child.try_wait().unwrap().is_none(),
            "the sender died"
        );
        assert!(sender.stop());
        assert!(recv.stop());
        assert_eq!(ns(&got), want, "Send.Records = {records}");
        let log = rig.log("sender");
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("skipping") && l.contains("item_0000000002.dat"))
            .collect();
        assert_eq!(lines.len(), 1, "Send.Records = {records}: {log}");
        assert!(
            lines[0].contains(&format!("offset {start}")),
            "{}",
            lines[0]
        );
    }
}
