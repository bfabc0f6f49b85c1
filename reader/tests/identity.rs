//! A receiver position this store cannot have (a rebuilt store under a stream name the
//! receiver knows, a receiver claiming an item far past the store's end) is a stream identity
//! mismatch: logged once as an episode, counted, nothing sent and nothing deleted, until the
//! operator starts a new stream epoch; then everything is delivered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use focuser_formats::segment::{list_segments, read_position, Position};
use focuser_reader::wire::frame::{encode_frame, read_frame_unchecked};
use focuser_reader::wire::handshake;
use focuser_reader::wire::messages::put_position;
use focuser_reader::wire::{BatchRef, FrameType, Secret};
use focuser_tests::{free_port, get, metric, wait_for};

/// The labels of the one sender of `sender_cf` to receiver port `port`.
fn label(port: u16) -> String {
    format!("daemon=\"reader\",group=\"Index.0\",receiver=\"127.0.0.1:{port}\"")
}

fn value(status: u16, name: &str, labels: &str) -> f64 {
    metric(status, &format!("focuser_reader_{name}{{{labels}}}")).unwrap_or(-1.0)
}

/// Waits until the sender has refused the receiver's position a few times while retention
/// ran (or, as it did before, until retention deleted what was never delivered), then checks
/// what a mismatch must leave as it was.
fn assert_mismatch_held(rig: &Rig, status: u16, port: u16, segments: &[u64], lag: f64) {
    let l = label(port);
    wait_for(
        "refused attempts and retention checks",
        Duration::from_secs(30),
        || {
            let checked = value(status, "retention_checks_total", "daemon=\"reader\"") >= 3.0;
            let refused = value(status, "sender_stream_mismatches_total", &l) >= 4.0;
            checked && (refused || list_segments(&rig.store()).unwrap() != segments)
        },
    );
    assert_eq!(list_segments(&rig.store()).unwrap(), segments);
    assert_eq!(value(status, "sender_stream_mismatch", &l), 1.0);
    assert_eq!(value(status, "sender_lag_items", &l), lag);
    let pos = rig
        .root()
        .join(format!("sender/state/pos_Index.0_0_127.0.0.1_{port}.dat"));
    let saved = read_position(&pos).unwrap();
    assert!(
        saved.is_none() || saved == Some(Position::START),
        "{saved:?}"
    );
    // Loud, and once: one line however often it was retried, saying what to do.
    let log = rig.log("sender");
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("stream identity mismatch"))
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].contains("ERROR") && lines[0].contains("stream_epoch"),
        "{}",
        lines[0]
    );
    assert!(!log.contains("going on from"), "{log}");
    let page = get(status, "/status.json");
    assert!(page.contains("stream mismatches"), "{page}");
    assert!(page.contains("this store is not the one"), "{page}");
}

/// Raises `stream_epoch` in the sender's config: the documented way out.
fn new_epoch(cf: &std::path::Path, epoch: u32) {
    let mut text = std::fs::read_to_string(cf).unwrap();
    text.push_str(&format!("stream_epoch = {epoch}\n"));
    std::fs::write(cf, text).unwrap();
}

#[test]
fn a_rebuilt_store_under_a_known_stream_name_is_refused_until_a_new_epoch() {
    let rig = Rig::new();
    rig.write(400, &["--max-items", "100"]); // segments 1..=4 sealed, 5 active
    let (r_cf, port) = rig.receiver_cf("r", "");
    let _recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    let status = free_port();
    let s_cf = rig.sender_cf(
        &[("Index.0", &[port])],
        &format!("Store.CheckInterval = 1\nstatus_listen = 127.0.0.1:{status}"),
    );
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let got = rig.root().join("r/received");
    wait_for("the first store delivered", Duration::from_secs(60), || {
        ns(&got).len() == 400
    });
    assert!(sender.stop());
    // The node's disks are replaced: a new store whose file ids start at 1 again, no state.
    std::fs::remove_dir_all(rig.store()).unwrap();
    std::fs::remove_dir_all(rig.root().join("sender/state")).unwrap();
    std::fs::remove_file(rig.root().join("sender/logs/reader.log")).unwrap();
    // Segments 1..=3 sealed (50, 50, 11 items), 4 active and empty: the receiver's 4:100
    // is past the end of segment 4.
    rig.write(111, &["--max-items", "50"]);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    assert_mismatch_held(&rig, status, port, &[1, 2, 3, 4], 111.0);
    assert_eq!(per_stream(&got).into_values().collect::<Vec<_>>(), [400]);
    assert!(sender.stop());

    new_epoch(&s_cf, 1);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    wait_for("the new store delivered", Duration::from_secs(60), || {
        per_stream(&got).into_values().collect::<Vec<_>>() == [400, 111]
    });
    let new: Vec<u64> = ns(&got)[400..].to_vec();
    assert_eq!(new, (1..=111).collect::<Vec<u64>>());
    let streams = std::fs::read_to_string(got.join("streams.state")).unwrap();
    assert!(streams.contains("node1.Index.0.epoch1"), "{streams}");
    assert!(sender.stop());
}

/// A receiver in the test: for `claimed` it says it holds `last`; any other stream it takes
/// whole, noting each item's place.
struct Fake {
    port: u16,
    got: Arc<Mutex<Vec<Position>>>,
}

fn fake_receiver(secret: Secret, claimed: &'static str, last: Position) -> Fake {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&got);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let (s, secret, seen) = (s.unwrap(), secret.clone(), Arc::clone(&seen));
            std::thread::spawn(move || serve_fake(s, &secret, claimed, last, &seen));
        }
    });
    Fake { port, got }
}

fn serve_fake(
    mut s: TcpStream,
    secret: &Secret,
    claimed: &str,
    last: Position,
    seen: &Mutex<Vec<Position>>,
) {
    let Ok(a) = handshake::server(&mut s, secret) else {
        return;
    };
    let mine = a.hello.stream == claimed;
    let at = if mine { last } else { Position::default() };
    if handshake::welcome(&mut s, &a, at).is_err() {
        return;
    }
    let mut r = BufReader::new(s.try_clone().unwrap());
    let (mut payload, mut crcs) = (Vec::new(), Vec::new());
    while let Ok(head) = read_frame_unchecked(&mut r, 32 << 20, &mut payload) {
        let batch = BatchRef::decode_checked(&payload, head, &mut crcs).unwrap();
        seen.lock()
            .unwrap()
            .extend(batch.items.iter().map(|i| i.at));
        let mut ack = Vec::new();
        put_position(&mut ack, batch.upto);
        let mut frame = Vec::new();
        encode_frame(FrameType::Ack, &ack, &mut frame);
        if s.write_all(&frame).is_err() {
            return;
        }
    }
}

#[test]
fn a_receiver_claiming_an_item_past_the_stores_end_is_refused_until_a_new_epoch() {
    let rig = Rig::new();
    rig.write(300, &["--max-items", "100"]); // segments 1..=3 sealed, 4 active
    let fake = fake_receiver(
        Secret::from_bytes(rig.secret.as_bytes()),
        "node1.Index.0",
        Position {
            file_id: 1 << 40,
            item_idx: 7,
        },
    );
    let status = free_port();
    let s_cf = rig.sender_cf(
        &[("Index.0", &[fake.port])],
        &format!("Store.CheckInterval = 1\nstatus_listen = 127.0.0.1:{status}"),
    );
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    assert_mismatch_held(&rig, status, fake.port, &[1, 2, 3, 4], 300.0);
    assert!(fake.got.lock().unwrap().is_empty());
    assert!(sender.stop());

    new_epoch(&s_cf, 1);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let want: BTreeSet<Position> = (1..=3u64)
        .flat_map(|file_id| (1..=100).map(move |item_idx| Position { file_id, item_idx }))
        .collect();
    wait_for("every item delivered", Duration::from_secs(60), || {
        fake.got
            .lock()
            .unwrap()
            .iter()
            .copied()
            .collect::<BTreeSet<_>>()
            == want
    });
    assert!(sender.stop());
}
