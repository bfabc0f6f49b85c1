//! Senders and receivers as processes: partitions, a receiver that is down for a while,
//! a damaged position file, `reader stat` and `reader dump`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use focuser_tests::{free_port, get, wait_for};

#[test]
fn each_receiver_gets_exactly_its_partition_and_a_late_one_catches_up() {
    let rig = Rig::new();
    rig.write(1500, &["--max-items", "200"]);
    let (a_cf, a) = rig.receiver_cf("a", "");
    let (b_cf, b) = rig.receiver_cf("b", "");
    let (c_cf, c) = rig.receiver_cf("c", "");
    let s_cf = rig.sender_cf(&[("Index.0", &[a, b]), ("Summary.0", &[c])], "");
    let _ra = Proc::start(&["-c", a_cf.to_str().unwrap(), "--recv"]);
    let _rc = Proc::start(&["-c", c_cf.to_str().unwrap(), "--recv"]);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let recv_a = rig.root().join("a/received");
    let recv_b = rig.root().join("b/received");
    let recv_c = rig.root().join("c/received");
    wait_for(
        "a and c to have their items",
        Duration::from_secs(60),
        || ns(&recv_a) == expected(1500, 2, 0) && ns(&recv_c) == expected(1500, 1, 0),
    );
    // b is down: the others went on; its sender keeps retrying.
    assert!(ns(&recv_b).is_empty());
    // More items while b is down, then b comes up and catches up.
    rig.write(2000, &["--max-items", "200"]);
    let _rb = Proc::start(&["-c", b_cf.to_str().unwrap(), "--recv"]);
    wait_for(
        "everyone to have everything",
        Duration::from_secs(60),
        || {
            ns(&recv_a) == expected(2000, 2, 0)
                && ns(&recv_b) == expected(2000, 2, 1)
                && ns(&recv_c) == expected(2000, 1, 0)
        },
    );
    // The items are the writer's, byte for byte (content and status), with their origin.
    let stored = items(&recv_b);
    let first = &stored[0];
    let n = expected(2000, 2, 1)[0];
    assert_eq!(first.item.content, segwriter_item(n).content);
    assert_eq!(first.item.status, segwriter_item(n).status);
    assert!(first.item.origin.stream > 0 && first.item.origin.item_idx > 0);
    // Once the writer's segments are passed by every sender, retention deletes them.
    wait_for(
        "retention to delete passed segments",
        Duration::from_secs(30),
        || {
            focuser_formats::segment::list_segments(&rig.store())
                .unwrap()
                .len()
                <= 2
        },
    );
    assert!(sender.stop());
    // reader stat: every sender at the end, no lag.
    let out = Command::new(env!("CARGO_BIN_EXE_reader"))
        .args(["-c", s_cf.to_str().unwrap(), "stat"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("127.0.0.1:")).collect();
    assert_eq!(lines.len(), 3, "{text}");
    for l in lines {
        let cols: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(cols[4], "0", "lag items: {l}");
    }
}

fn segwriter_item(n: u64) -> focuser_formats::segment::Item {
    // The same generator as examples/segwriter.rs (content and status only are compared).
    let mix = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (n >> 7);
    let size = 100 + (mix as usize % (2000 - 100 + 1));
    let mut content = Vec::with_capacity(size);
    let mut x = mix | 1;
    while content.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        content.extend_from_slice(&x.to_le_bytes());
    }
    content.truncate(size);
    focuser_formats::segment::Item {
        status: if n.is_multiple_of(10) {
            focuser_formats::segment::Status::Delete
        } else {
            focuser_formats::segment::Status::Update
        },
        doc_id: format!("{mix:016x}").into_bytes(),
        url: Vec::new(),
        content,
        time_ms: 0,
        origin: Default::default(),
    }
}

#[test]
fn a_damaged_position_file_is_reported_and_the_sender_starts_from_the_oldest() {
    for damage in [&b""[..], &[0u8; 24][..]] {
        let rig = Rig::new();
        rig.write(300, &[]);
        let (r_cf, r) = rig.receiver_cf("r", "");
        let s_cf = rig.sender_cf(&[("Index.0", &[r])], "Store.CheckInterval = 3600");
        let pos = rig.root().join("sender/state");
        std::fs::create_dir_all(&pos).unwrap();
        std::fs::write(pos.join(format!("pos_Index.0_0_127.0.0.1_{r}.dat")), damage).unwrap();
        let _recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
        let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
        let got = rig.root().join("r/received");
        wait_for("everything from item 1", Duration::from_secs(30), || {
            ns(&got) == expected(300, 1, 0)
        });
        assert!(sender.stop());
        let log = rig.log("sender");
        assert!(log.contains("bad position file"), "{log}");
        assert!(log.contains("starts from the oldest segment"), "{log}");
    }
}

#[test]
fn dump_prints_items_as_json_lines_and_names_the_damage() {
    let rig = Rig::new();
    rig.write(20, &["--max-items", "100"]);
    let file = focuser_formats::segment::item_path(&rig.store(), 1);
    let out = Command::new(env!("CARGO_BIN_EXE_reader"))
        .arg("dump")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 20);
    assert_eq!(lines[9]["status"], "DELETE");
    assert_eq!(lines[0]["url"], "http://site1.example/doc/1");
    assert_eq!(lines[0]["item_idx"], 1);
    // Index files dump their entries.
    let idx = focuser_formats::segment::index_path(&rig.store(), 1);
    let out = Command::new(env!("CARGO_BIN_EXE_reader"))
        .arg("dump")
        .arg(&idx)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 20);
    // A damaged record: what came before is printed, then the error with its offset.
    let mut b = std::fs::read(&file).unwrap();
    let len = b.len();
    b[len - 10] ^= 0x55;
    std::fs::write(&file, &b).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_reader"))
        .arg("dump")
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 19);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("offset") && err.contains("CRC"), "{err}");
}

#[test]
fn sendfile_ships_spool_files_and_sealed_segments_once_each() {
    let rig = Rig::new();
    rig.write(700, &["--max-items", "300"]); // segments 1, 2 sealed; 3 sealed by the final rotate
    let spool = rig.root().join("queue/3");
    std::fs::create_dir_all(&spool).unwrap();
    for k in 1..=3 {
        std::fs::write(
            spool.join(format!("master1-{k:010}.q")),
            format!("queue file {k}\n"),
        )
        .unwrap();
    }
    std::fs::write(spool.join(".master1-0000000004.q.tmp"), "half written").unwrap();
    let (r_cf, r) = rig.receiver_cf("r", "");
    let extra = format!(
        "Store.CheckInterval = 3600\n\
         SendFile.0.Address = 127.0.0.1:{r}\nSendFile.0.Dir = {spool}\nSendFile.0.Pattern = *.q\n\
         SendFile.0.Inbox = master1-node3\n\
         SendFile.1.Address = 127.0.0.1:{r}\nSendFile.1.Dir = {store}\nSendFile.1.Kind = segments\n\
         SendFile.1.Inbox = segments-node1\n",
        spool = spool.display(),
        store = rig.store().display()
    );
    let s_cf = rig.sender_cf(&[], &extra);
    let _recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let inbox = rig.root().join("r/inbox/master1-node3");
    let names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .map(|r| {
                r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.retain(|n: &String| !n.starts_with('.')); // a file being received
        v.sort();
        v
    };
    wait_for(
        "three queue files in the inbox",
        Duration::from_secs(30),
        || names(&inbox).len() == 3,
    );
    for k in 1..=3 {
        let name = format!("master1-{k:010}.q");
        assert_eq!(
            std::fs::read(inbox.join(&name)).unwrap(),
            std::fs::read(spool.join(&name)).unwrap()
        );
    }
    // Sealed segments arrive as pairs, byte for byte; the active one does not.
    let seg_inbox = rig.root().join("r/inbox/segments-node1");
    let ids = focuser_formats::segment::list_segments(&rig.store()).unwrap();
    let sealed = &ids[..ids.len() - 1];
    wait_for("the sealed segments", Duration::from_secs(30), || {
        names(&seg_inbox).len() == 2 * sealed.len()
    });
    for &id in sealed {
        let p = focuser_formats::segment::item_path(&rig.store(), id);
        let got = seg_inbox.join(p.file_name().unwrap());
        assert_eq!(std::fs::read(got).unwrap(), std::fs::read(&p).unwrap());
    }
    // A new file goes too; after a restart nothing is sent again.
    std::fs::write(spool.join("master1-0000000004.q"), "queue file 4\n").unwrap();
    wait_for("the fourth", Duration::from_secs(30), || {
        names(&inbox).len() == 4
    });
    assert!(sender.stop());
    let last = std::fs::read_to_string(
        rig.root()
            .join("sender/state/sendfile_0_master1-node3.last"),
    )
    .unwrap();
    assert_eq!(last.trim(), "master1-0000000004.q");
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(sender.stop());
    let received = rig.log("r").matches("master1-node3: received").count();
    assert_eq!(received, 4, "{}", rig.log("r"));
}

#[test]
fn metrics_show_positions_lag_and_receiver_counts_and_sigusr1_seals_the_receivers_segment() {
    let rig = Rig::new();
    rig.write(400, &[]);
    let (s_port, r_port) = (free_port(), free_port());
    let (r_cf, r) = rig.receiver_cf("r", &format!("status_listen = 127.0.0.1:{r_port}"));
    let s_cf = rig.sender_cf(
        &[("Index.0", &[r])],
        &format!("status_listen = 127.0.0.1:{s_port}\nStore.CheckInterval = 3600"),
    );
    let mut recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let got = rig.root().join("r/received");
    wait_for("all 400", Duration::from_secs(30), || ns(&got).len() == 400);
    let label = format!("daemon=\"reader\",group=\"Index.0\",receiver=\"127.0.0.1:{r}\"");
    wait_for("the sender's figures", Duration::from_secs(10), || {
        let m = get(s_port, "/metrics");
        m.contains(&format!("focuser_reader_sender_lag_items{{{label}}} 0"))
            && m.contains(&format!(
                "focuser_reader_sender_acked_items_total{{{label}}} 400"
            ))
            && m.contains(&format!("focuser_reader_sender_connected{{{label}}} 1"))
    });
    let m = get(r_port, "/metrics");
    assert!(
        m.contains("focuser_reader_recv_items_total{daemon=\"reader\"} 400"),
        "{m}"
    );
    assert!(
        m.contains("focuser_reader_recv_connections{daemon=\"reader\"} 1"),
        "{m}"
    );
    // The JSON page carries the same figures.
    let j = get(s_port, "/status.json");
    assert!(j.contains("reader_sender_position_file"), "{j}");
    // SIGUSR1: the receiver seals its active segment and opens the next.
    let before = focuser_formats::segment::list_segments(&got).unwrap();
    let pid = nix::unistd::Pid::from_raw(recv.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGUSR1).unwrap();
    wait_for("a new segment", Duration::from_secs(10), || {
        focuser_formats::segment::list_segments(&got).unwrap().len() == before.len() + 1
    });
    assert!(sender.stop());
    assert!(recv.stop());
    assert_eq!(ns(&got).len(), 400);
}

#[test]
fn a_receiver_down_for_a_while_catches_up_while_the_others_keep_receiving() {
    let rig = Rig::new();
    rig.write(600, &["--max-items", "200"]);
    let (a_cf, a) = rig.receiver_cf("a", "");
    let (b_cf, b) = rig.receiver_cf("b", "");
    let (c_cf, c) = rig.receiver_cf("c", "");
    let s_cf = rig.sender_cf(
        &[("Index.0", &[a, b]), ("Summary.0", &[c])],
        "Store.CheckInterval = 1",
    );
    let _ra = Proc::start(&["-c", a_cf.to_str().unwrap(), "--recv"]);
    let mut rb = Proc::start(&["-c", b_cf.to_str().unwrap(), "--recv"]);
    let _rc = Proc::start(&["-c", c_cf.to_str().unwrap(), "--recv"]);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let (recv_a, recv_b, recv_c) = (
        rig.root().join("a/received"),
        rig.root().join("b/received"),
        rig.root().join("c/received"),
    );
    let all = |n| {
        ns(&recv_a) == expected(n, 2, 0)
            && ns(&recv_b) == expected(n, 2, 1)
            && ns(&recv_c) == expected(n, 1, 0)
    };
    wait_for("everyone to have 600", Duration::from_secs(60), || all(600));
    // b goes down hard; the writer goes on.
    rb.kill9();
    rig.write(1500, &["--max-items", "200"]);
    wait_for("a and c to have 1500", Duration::from_secs(60), || {
        ns(&recv_a) == expected(1500, 2, 0) && ns(&recv_c) == expected(1500, 1, 0)
    });
    assert_eq!(ns(&recv_b), expected(600, 2, 1));
    // Retention keeps every segment b still needs (it has not had segment 4 yet).
    std::thread::sleep(Duration::from_millis(1500));
    let ids = focuser_formats::segment::list_segments(&rig.store()).unwrap();
    assert!(ids.first().is_some_and(|&f| f <= 4), "{ids:?}");
    // Back up: b gets exactly what it missed, and nobody gets anything twice.
    let _rb = Proc::start(&["-c", b_cf.to_str().unwrap(), "--recv"]);
    rig.write(1800, &["--max-items", "200"]);
    wait_for("everyone to have 1800", Duration::from_secs(60), || {
        all(1800)
    });
    assert!(sender.stop());
    // While it was down its sender said so and kept retrying.
    let log = rig.log("sender");
    assert!(
        log.lines()
            .any(|l| l.contains(&format!("127.0.0.1:{b}")) && l.contains("retrying in")),
        "{log}"
    );
}

#[test]
fn a_group_gets_only_the_statuses_it_wants_and_its_position_moves_past_the_others() {
    let rig = Rig::new();
    rig.write(300, &[]);
    let (r_cf, r) = rig.receiver_cf("r", "");
    let s_cf = rig.sender_cf(&[("Summary.0", &[r])], "Summary.0.Statuses = UPDATE");
    let _recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let got = rig.root().join("r/received");
    let want: Vec<u64> = (1..=300).filter(|n| n % 10 != 0).collect(); // every tenth is a DELETE
    wait_for("the UPDATE items", Duration::from_secs(30), || {
        ns(&got) == want
    });
    assert!(items(&got)
        .iter()
        .all(|s| s.item.status == focuser_formats::segment::Status::Update));
    assert!(sender.stop());
    let out = Command::new(env!("CARGO_BIN_EXE_reader"))
        .args(["-c", s_cf.to_str().unwrap(), "stat"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("Summary.0")).unwrap();
    assert_eq!(
        line.split_whitespace().nth(4),
        Some("0"),
        "lag items: {text}"
    );
}

/// A record whose body was damaged on the sender's disk after it was written: the sender
/// skips it (logged, counted) and every other item arrives once, whether records go by
/// sendfile (the receiver finds the damage, the sender goes over that stretch again itself)
/// or are read and checked by the sender first.
#[test]
fn a_record_damaged_on_the_senders_disk_is_skipped_and_the_others_arrive_once() {
    for records in [1, 0] {
        let rig = Rig::new();
        rig.write(400, &[]);
        let store = rig.store();
        let first = focuser_formats::segment::list_segments(&store).unwrap()[0];
        let seg = focuser_formats::segment::SegmentIndex::open(&store, first)
            .unwrap()
            .unwrap();
        let at = seg.header(150).unwrap();
        let h = at.header;
        let n: u64 = {
            let item = seg.read(150).unwrap().item;
            String::from_utf8_lossy(&item.url)
                .rsplit('/')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let middle = at.offset
            + (focuser_formats::segment::record::RECORD_HEADER_LEN as u64)
            + u64::from(h.doc_id_len)
            + u64::from(h.url_len)
            + u64::from(h.content_len) / 2;
        {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(focuser_formats::segment::item_path(&store, first))
                .unwrap();
            let mut b = [0u8; 1];
            f.read_exact_at(&mut b, middle).unwrap();
            f.write_all_at(&[b[0] ^ 0x5a], middle).unwrap();
        }
        drop(seg);
        let s_port = free_port();
        let (r_cf, r) = rig.receiver_cf("r", "");
        let s_cf = rig.sender_cf(
            &[("Index.0", &[r])],
            &format!("status_listen = 127.0.0.1:{s_port}\nSend.Records = {records}"),
        );
        let mut recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
        let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
        let got = rig.root().join("r/received");
        let want: Vec<u64> = (1..=400).filter(|&k| k != n).collect();
        wait_for(
            "every item but the damaged one",
            Duration::from_secs(30),
            || ns(&got).len() >= want.len(),
        );
        let label = format!("daemon=\"reader\",group=\"Index.0\",receiver=\"127.0.0.1:{r}\"");
        wait_for("the sender to be done", Duration::from_secs(10), || {
            let m = get(s_port, "/metrics");
            m.contains(&format!("focuser_reader_sender_lag_items{{{label}}} 0"))
        });
        let m = get(s_port, "/metrics");
        assert!(
            m.contains(&format!(
                "focuser_reader_sender_corrupt_items_total{{{label}}} 1"
            )),
            "Send.Records = {records}: {m}"
        );
        assert!(sender.stop());
        assert!(recv.stop());
        assert_eq!(ns(&got), want, "Send.Records = {records}");
        let log = rig.log("sender");
        assert!(
            log.contains("skipping") && log.contains("item 150 at offset"),
            "Send.Records = {records}: {log}"
        );
        if records == 1 {
            assert!(
                rig.log("r")
                    .contains(&format!("record {first}:150 fails its CRC")),
                "{}",
                rig.log("r")
            );
        }
    }
}
