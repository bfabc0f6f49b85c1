//! The receiver's store when its disk fills up (a tmpfs the test mounts: it runs as root, as
//! CI does): it answers ERROR 6 and acknowledges nothing it has not made durable, logs the
//! episode once rather than a line per try, and once there is room again takes the items
//! resent; after a restart every acknowledged item is there exactly once and WELCOME agrees.
//! And when the store was cut short below its checkpoint: WELCOME says what it holds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use focuser_formats::segment::{Item, Origin, Position, Status, SyncPolicy, WriterOptions};
use focuser_reader::recv::RecvStore;
use focuser_reader::wire::frame::{encode_frame, Fields};
use focuser_reader::wire::handshake;
use focuser_reader::wire::messages::{code, position, ErrorMsg};
use focuser_reader::wire::{read_frame, Batch, FrameType, Mode, Secret, WireItem};
use focuser_tests::connect_within;
use focuser_tests::tmpfs::Tmpfs;

const STREAM: &str = "node1.Index.0";

/// A sender played by the test: one connection, one batch at a time.
struct Peer {
    s: TcpStream,
    /// Where the receiver said the stream stands.
    welcome: Position,
}

enum Answer {
    Ack(Position),
    Refused(u16),
}

impl Peer {
    fn connect(rig: &Rig, port: u16) -> Peer {
        let mut s = connect_within(port, Duration::from_secs(60));
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let secret = Secret::from_bytes(rig.secret.as_bytes());
        let welcome = handshake::client(&mut s, &secret, Mode::Items, STREAM).unwrap();
        Peer { s, welcome }
    }

    /// Sends items `from..=to` of segment 1 (about 1 KB each) and reads the answer.
    fn send(&mut self, from: u32, to: u32) -> Answer {
        let b = batch(from, to);
        let (mut payload, mut frame) = (Vec::new(), Vec::new());
        b.encode_into(&mut payload);
        encode_frame(FrameType::Items, &payload, &mut frame);
        self.s.write_all(&frame).unwrap();
        let f = read_frame(&mut BufReader::new(&self.s), 1 << 20).unwrap();
        match f.kind {
            FrameType::Ack => Answer::Ack(position(&mut Fields::new(&f.payload, "ACK")).unwrap()),
            FrameType::Error => Answer::Refused(ErrorMsg::decode(&f.payload).unwrap().code),
            k => panic!("unexpected {k:?}"),
        }
    }
}

fn at(k: u32) -> Position {
    Position {
        file_id: 1,
        item_idx: k,
    }
}

/// The item index (at the sender) of each item the receiver's store holds, in store order.
fn held(dir: &std::path::Path) -> Vec<u32> {
    items(dir).iter().map(|s| s.item.origin.item_idx).collect()
}

#[test]
fn a_full_disk_loses_no_acknowledged_item_and_the_receiver_resumes_when_there_is_room() {
    let rig = Rig::new();
    let (cf, port) = rig.receiver_cf("r", "");
    let fs = Tmpfs::mount("400k");
    let store = fs.path().join("received");
    let text = std::fs::read_to_string(&cf)
        .unwrap()
        .replace("Segment.MaxItems = 300", "Segment.MaxItems = 100000")
        .replace(
            "Recv.StoreDir = received",
            &format!("Recv.StoreDir = {}", store.display()),
        );
    std::fs::write(&cf, text).unwrap();
    let mut r = Proc::start(&["-c", cf.to_str().unwrap(), "--recv"]);
    let mut peer = Peer::connect(&rig, port);
    assert_eq!(peer.welcome, Position::default());
    // 1 KB items, ten a batch, until the receiver cannot store them.
    let mut acked = 0;
    loop {
        let from = acked + 1;
        match peer.send(from, from + 9) {
            Answer::Ack(upto) => {
                assert_eq!(upto, at(from + 10));
                acked += 10;
            }
            Answer::Refused(c) => {
                assert_eq!(c, code::STORE);
                break;
            }
        }
        assert!(acked < 2000, "the disk never filled");
    }
    // Still full: refused again. WELCOME says every acknowledged item is held, and at most
    // the refused batch more (if only its index entries failed, its items are durable).
    let mut peer = Peer::connect(&rig, port);
    assert!(
        peer.welcome >= at(acked) && peer.welcome <= at(acked + 10),
        "{} after {acked}",
        peer.welcome
    );
    acked = peer.welcome.item_idx;
    assert!(matches!(
        peer.send(acked + 1, acked + 10),
        Answer::Refused(6)
    ));
    // The old receiver logged a full disk every 100 ms; a second of it says whether it still does.
    std::thread::sleep(Duration::from_secs(1));
    fs.resize("8m");
    let mut peer = Peer::connect(&rig, port);
    assert!(peer.welcome >= at(acked) && peer.welcome <= at(acked + 10));
    acked = peer.welcome.item_idx;
    for _ in 0..15 {
        let from = acked + 1;
        assert!(matches!(peer.send(from, from + 9), Answer::Ack(_)));
        acked += 10;
    }
    drop(peer);
    assert_eq!(held(&store), (1..=acked).collect::<Vec<_>>());
    // A restart finds the store as it was acknowledged: nothing cut, nothing missing.
    r.restart();
    let peer = Peer::connect(&rig, port);
    assert_eq!(peer.welcome, at(acked));
    assert_eq!(held(&store), (1..=acked).collect::<Vec<_>>());
    let log = rig.log("r");
    assert!(!log.contains("recovered segment"), "{log}");
    // One line when it began, one when it ended (debug lines aside).
    let full = log
        .lines()
        .filter(|l| l.contains("No space left") && !l.contains(" DEBUG "))
        .count();
    assert_eq!(full, 1, "lines about the full disk:\n{log}");
    assert!(log.contains("storing again"), "{log}");
}

/// Items `from..=to` of segment 1 of a stream, about 1 KB each.
fn batch(from: u32, to: u32) -> Batch {
    Batch {
        upto: at(to + 1),
        items: (from..=to)
            .map(|k| WireItem {
                at: at(k),
                item: Item {
                    status: Status::Update,
                    doc_id: format!("d{k}").into_bytes(),
                    url: format!("http://x.example/{k}").into_bytes(),
                    content: vec![b'a' + (k % 26) as u8; 1000],
                    time_ms: 1,
                    origin: Origin::default(),
                },
            })
            .collect(),
    }
}

#[test]
fn items_a_failed_sync_took_from_another_stream_are_not_acknowledged_to_it() {
    let fs = Tmpfs::mount("256k");
    let dir = fs.path().join("received");
    let opts = WriterOptions {
        sync: SyncPolicy {
            every_items: 1_000_000,
            every_ms: 600_000,
        },
        ..WriterOptions::default()
    };
    let (mut st, _) = RecvStore::open(&dir, opts).unwrap();
    let (a, b) = ("node1.Index.0", "node2.Index.0");
    // Both streams append, then A syncs (for both), until the disk is full: B's last batch
    // was appended but went with A's failed sync.
    let mut next = 1;
    loop {
        st.append(b, &batch(next, next + 4).as_ref()).unwrap();
        let r = st
            .append(a, &batch(next, next + 4).as_ref())
            .and_then(|_| st.sync(a));
        if r.is_err() {
            break;
        }
        next += 5;
        assert!(next < 2000, "the disk never filled");
    }
    fs.resize("8m");
    let held_b = st.last(b);
    assert!(
        held_b < at(next),
        "{held_b}: B's last batch is durable (the disk filled at the index only)"
    );
    // B's connection must not acknowledge what it sent, nor store more after the gap...
    let e = st.sync(b).unwrap_err().to_string();
    assert!(
        e.contains("node2.Index.0") && e.contains("send them again"),
        "{e}"
    );
    st.append(b, &batch(next + 5, next + 9).as_ref())
        .unwrap_err();
    // ...until its sender resumes from where B stands.
    assert_eq!(st.resume(b), held_b);
    let from = held_b.item_idx + 1;
    st.append(b, &batch(from, next + 9).as_ref()).unwrap();
    st.sync(b).unwrap();
    let from = st.resume(a).item_idx + 1;
    st.append(a, &batch(from, next + 9).as_ref()).unwrap();
    st.sync(a).unwrap();
    st.checkpoint().unwrap();
    drop(st);
    let (st, _) = RecvStore::open(&dir, opts).unwrap();
    assert_eq!((st.last(a), st.last(b)), (at(next + 9), at(next + 9)));
    for stream in [1, 2] {
        let got: Vec<u32> = items(&dir)
            .iter()
            .filter(|s| s.item.origin.stream == stream)
            .map(|s| s.item.origin.item_idx)
            .collect();
        assert_eq!(got, (1..=next + 9).collect::<Vec<_>>(), "stream {stream}");
    }
}

#[test]
fn a_store_cut_short_below_its_checkpoint_welcomes_from_what_it_holds() {
    let rig = Rig::new();
    let (cf, port) = rig.receiver_cf("r", "");
    let store = rig.root().join("r/received");
    let mut r = Proc::start(&["-c", cf.to_str().unwrap(), "--recv"]);
    let mut peer = Peer::connect(&rig, port);
    for from in (1..=100).step_by(10) {
        assert!(matches!(peer.send(from, from + 9), Answer::Ack(_)));
    }
    drop(peer);
    // Stopped: the checkpoint says stream node1.Index.0 is at 1:100. The item file is then
    // cut inside item 61 (as a restore from an older copy, or a disk's damage, would leave it).
    assert!(r.stop());
    let index = std::fs::read(store.join("index_0000000001.dat")).unwrap();
    let e = focuser_formats::segment::IndexEntry::decode(&index[32 + 60 * 16..], 61).unwrap();
    let item = store.join("item_0000000001.dat");
    std::fs::File::options()
        .write(true)
        .open(&item)
        .unwrap()
        .set_len(e.offset + 100)
        .unwrap();
    let mut r = Proc::start(&["-c", cf.to_str().unwrap(), "--recv"]);
    let mut peer = Peer::connect(&rig, port);
    assert_eq!(peer.welcome, at(60), "{}", rig.log("r"));
    for from in (61..=100).step_by(10) {
        assert!(matches!(peer.send(from, from + 9), Answer::Ack(_)));
    }
    drop(peer);
    assert_eq!(held(&store), (1..=100).collect::<Vec<_>>());
    assert!(r.stop());
    let log = rig.log("r");
    assert!(
        log.contains("covers 1:101 but the store ends at 1:61"),
        "{log}"
    );
    assert!(log.contains("at 1:100 by the checkpoint, the store holds it up to 1:60"));
}
