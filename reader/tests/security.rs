//! A receiver refuses peers not in allowdb, wrong secrets, oversized and corrupt frames, and
//! file names that are paths; each is logged and nothing is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use focuser_formats::segment::crc;
use focuser_formats::segment::{Item, Origin, Position, Status};
use focuser_reader::wire::frame::{encode_frame, put_string};
use focuser_reader::wire::handshake::{self, ProtoError};
use focuser_reader::wire::messages::code;
use focuser_reader::wire::{read_frame, Batch, FileBegin, FrameType, Mode, Secret, WireItem};
use focuser_tests::{connect_within, free_port, metric, wait_for};

fn connect(port: u16) -> TcpStream {
    // Up to a minute: a receiver starting on a loaded machine.
    let s = connect_within(port, Duration::from_secs(60));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn secret(rig: &Rig) -> Secret {
    Secret::from_bytes(rig.secret.as_bytes())
}

fn batch() -> Vec<u8> {
    let b = Batch {
        upto: Position {
            file_id: 1,
            item_idx: 2,
        },
        items: vec![WireItem {
            at: Position {
                file_id: 1,
                item_idx: 1,
            },
            item: Item {
                status: Status::Update,
                doc_id: b"d1".to_vec(),
                url: b"http://x/".to_vec(),
                content: b"hello".to_vec(),
                time_ms: 1,
                origin: Origin::default(),
            },
        }],
    };
    let mut p = Vec::new();
    b.encode_into(&mut p);
    p
}

/// After a refusal the receiver closes the connection: EOF follows.
fn closed(s: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).is_ok()
}

#[test]
fn peers_not_in_allowdb_and_wrong_secrets_are_refused_and_logged() {
    let rig = Rig::new();
    std::fs::write(rig.root().join("hosts.allow"), "10.9.9.9\n").unwrap();
    let (cf, port) = rig.receiver_cf("r", "");
    let _r = Proc::start(&["-c", cf.to_str().unwrap(), "--recv"]);
    let mut s = connect(port);
    let e = handshake::client(&mut s, &secret(&rig), Mode::Items, "node1.Index.0").unwrap_err();
    assert!(
        matches!(
            e,
            ProtoError::Refused {
                code: code::NOT_ALLOWED,
                ..
            }
        ),
        "{e}"
    );
    wait_for("the refusal in the log", Duration::from_secs(10), || {
        rig.log("r").contains("not in allowdb")
    });

    let rig = Rig::new();
    let (cf, port) = rig.receiver_cf("r", "");
    let _r = Proc::start(&["-c", cf.to_str().unwrap(), "--recv"]);
    let mut s = connect(port);
    let wrong = Secret::from_bytes(b"not-the-shared-secret-at-all");
    let e = handshake::client(&mut s, &wrong, Mode::Items, "node1.Index.0").unwrap_err();
    assert!(
        matches!(
            e,
            ProtoError::Refused {
                code: code::AUTH,
                ..
            }
        ),
        "{e}"
    );
    assert!(closed(&mut s));
    wait_for("the refusal in the log", Duration::from_secs(10), || {
        rig.log("r").contains("does not know the secret")
    });
    // The secret never travels: a sender's whole handshake does not contain it.
    let mut s = connect(port);
    let tap = Tap::new(&mut s);
    let mut tap = tap;
    handshake::client(&mut tap, &secret(&rig), Mode::Items, "node1.Index.0").unwrap();
    let seen = [tap.sent.clone(), tap.got.clone()].concat();
    let clear = rig.secret.as_bytes();
    assert!(!seen.windows(clear.len()).any(|w| w == clear));
    assert!(items(&rig.root().join("r/received")).is_empty());
}

/// Records what goes through a stream.
struct Tap<'a> {
    s: &'a mut TcpStream,
    sent: Vec<u8>,
    got: Vec<u8>,
}

impl<'a> Tap<'a> {
    fn new(s: &'a mut TcpStream) -> Self {
        Tap {
            s,
            sent: Vec::new(),
            got: Vec::new(),
        }
    }
}

impl Read for Tap<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.s.read(buf)?;
        self.got.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl Write for Tap<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.s.write(buf)?;
        self.sent.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.s.flush()
    }
}

#[test]
fn oversized_and_corrupt_frames_close_the_connection_and_store_nothing() {
    let rig = Rig::new();
    let (cf, port) = rig.receiver_cf("r", "MaxFrame = 65536\nSend.BatchBytes = 32768");
    let _r = Proc::start(&["-c", cf.to_str().unwrap(), "--recv"]);
    let store = rig.root().join("r/received");

    // A frame announcing more than MaxFrame: refused on its length alone.
    let mut s = connect(port);
    handshake::client(&mut s, &secret(&rig), Mode::Items, "node1.Index.0").unwrap();
    let mut huge = Vec::new();
    huge.extend_from_slice(&(1u32 << 20).to_le_bytes());
    huge.extend_from_slice(&[0u8; 4]);
    huge.push(FrameType::Items as u8);
    s.write_all(&huge).unwrap();
    let f = read_frame(&mut BufReader::new(&s), 1 << 20).unwrap();
    assert_eq!(f.kind, FrameType::Error);
    assert!(closed(&mut s));

    // A well-formed batch whose CRC does not match.
    let mut s = connect(port);
    handshake::client(&mut s, &secret(&rig), Mode::Items, "node1.Index.0").unwrap();
    let mut frame = Vec::new();
    encode_frame(FrameType::Items, &batch(), &mut frame);
    let last = frame.len() - 1;
    frame[last] ^= 0x20;
    s.write_all(&frame).unwrap();
    let f = read_frame(&mut BufReader::new(&s), 1 << 20).unwrap();
    assert_eq!(f.kind, FrameType::Error);
    assert!(closed(&mut s));
    assert!(items(&store).is_empty(), "nothing may be written");
    wait_for("the errors in the log", Duration::from_secs(10), || {
        let log = rig.log("r");
        log.contains("exceeds the maximum") && log.contains("CRC mismatch")
    });

    // The same batch intact is stored and acknowledged, once even if sent twice.
    for _ in 0..2 {
        let mut s = connect(port);
        handshake::client(&mut s, &secret(&rig), Mode::Items, "node1.Index.0").unwrap();
        let mut frame = Vec::new();
        encode_frame(FrameType::Items, &batch(), &mut frame);
        s.write_all(&frame).unwrap();
        let f = read_frame(&mut BufReader::new(&s), 1 << 20).unwrap();
        assert_eq!(f.kind, FrameType::Ack);
    }
    assert_eq!(items(&store).len(), 1);
}

#[test]
fn file_names_that_are_paths_are_refused() {
    let rig = Rig::new();
    let (cf, port) = rig.receiver_cf("r", "");
    let _r = Proc::start(&["-c", cf.to_str().unwrap(), "--recv"]);
    for name in ["../escape.q", "a/b.q", "..", "x\0y.q", ".hidden"] {
        let mut s = connect(port);
        handshake::client(&mut s, &secret(&rig), Mode::Files, "master1-node1").unwrap();
        let mut out = Vec::new();
        let begin = FileBegin {
            name: name.into(),
            size: 3,
        };
        encode_frame(FrameType::FileBegin, &begin.encode(), &mut out);
        encode_frame(FrameType::FileData, b"abc", &mut out);
        encode_frame(
            FrameType::FileEnd,
            &crc::crc32c(b"abc").to_le_bytes(),
            &mut out,
        );
        let _ = s.write_all(&out);
        let f = read_frame(&mut BufReader::new(&s), 1 << 20).unwrap();
        assert_eq!(f.kind, FrameType::Error, "{name:?}");
        assert!(closed(&mut s));
    }
    // Nothing was written anywhere: the inbox is empty and nothing escaped it.
    let inbox = rig.root().join("r/inbox/master1-node1");
    assert_eq!(std::fs::read_dir(&inbox).unwrap().count(), 0);
    assert!(!rig.root().join("r/inbox/escape.q").exists());
    assert!(!rig.root().join("r/escape.q").exists());
    // A good name with a wrong CRC is refused too, and leaves no temporary behind.
    let mut s = connect(port);
    handshake::client(&mut s, &secret(&rig), Mode::Files, "master1-node1").unwrap();
    let mut out = Vec::new();
    encode_frame(
        FrameType::FileBegin,
        &FileBegin {
            name: "ok.q".into(),
            size: 3,
        }
        .encode(),
        &mut out,
    );
    encode_frame(FrameType::FileData, b"abc", &mut out);
    encode_frame(FrameType::FileEnd, &0u32.to_le_bytes(), &mut out);
    s.write_all(&out).unwrap();
    let f = read_frame(&mut BufReader::new(&s), 1 << 20).unwrap();
    assert_eq!(f.kind, FrameType::Error);
    assert_eq!(std::fs::read_dir(&inbox).unwrap().count(), 0);
    // And an intact one lands whole.
    let mut s = connect(port);
    handshake::client(&mut s, &secret(&rig), Mode::Files, "master1-node1").unwrap();
    let mut out = Vec::new();
    encode_frame(
        FrameType::FileBegin,
        &FileBegin {
            name: "ok.q".into(),
            size: 3,
        }
        .encode(),
        &mut out,
    );
    encode_frame(FrameType::FileData, b"abc", &mut out);
    encode_frame(
        FrameType::FileEnd,
        &crc::crc32c(b"abc").to_le_bytes(),
        &mut out,
    );
    s.write_all(&out).unwrap();
    let f = read_frame(&mut BufReader::new(&s), 1 << 20).unwrap();
    assert_eq!(f.kind, FrameType::FileAck);
    let mut p = Vec::new();
    put_string(&mut p, "ok.q");
    assert_eq!(f.payload, p);
    assert_eq!(std::fs::read(inbox.join("ok.q")).unwrap(), b"abc");
    wait_for("the refusals in the log", Duration::from_secs(10), || {
        let log = rig.log("r");
        log.contains("contains a path separator") && log.contains("contains a NUL")
    });
}

#[test]
fn before_authentication_a_large_frame_is_cut_off_on_its_length() {
    let rig = Rig::new();
    // MaxFrame stays at its 32 MiB default: the handshake has its own, far smaller limit.
    let status = free_port();
    let (cf, port) = rig.receiver_cf("r", &format!("status_listen = 127.0.0.1:{status}"));
    let _r = Proc::start(&["-c", cf.to_str().unwrap(), "--recv"]);
    // A HELLO announcing 16 MiB, of which only the header is sent: the receiver answers on
    // the length alone (it does not wait for, nor allocate, the 16 MiB) and closes.
    for (kind, len) in [(FrameType::Hello, 16u32 << 20), (FrameType::Auth, 8192)] {
        let mut s = connect(port);
        let mut head = Vec::new();
        head.extend_from_slice(&len.to_le_bytes());
        head.extend_from_slice(&[0u8; 4]);
        head.push(kind as u8);
        s.write_all(&head).unwrap();
        let f = read_frame(&mut BufReader::new(&s), 1 << 16).unwrap();
        assert_eq!(f.kind, FrameType::Error, "{kind:?}");
        let msg = String::from_utf8_lossy(&f.payload).into_owned();
        assert!(msg.contains("exceeds the maximum of 4096"), "{msg}");
        assert!(closed(&mut s));
    }
    // A peer that says nothing is not kept past the handshake's few seconds.
    let mut s = connect(port);
    let t = std::time::Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    assert!(closed(&mut s));
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    // Both counted; logged once, as one episode of this address and problem.
    let refused = |reason: &str| {
        metric(
            status,
            &format!("focuser_reader_recv_refused_total{{daemon=\"reader\",reason=\"{reason}\"}}"),
        )
    };
    wait_for("the refusals counted", Duration::from_secs(10), || {
        refused("protocol") == Some(2.0) && refused("handshake_timeout") == Some(1.0)
    });
    assert_eq!(
        rig.log("r").matches("exceeds the maximum of 4096").count(),
        1,
        "{}",
        rig.log("r")
    );
    // A proper sender still gets in.
    let mut s = connect(port);
    handshake::client(&mut s, &secret(&rig), Mode::Items, "node1.Index.0").unwrap();
}

/// An ITEMS frame with items `from..=to` of segment 1.
fn items_frame(from: u32, to: u32, out: &mut Vec<u8>) {
    let b = Batch {
        upto: Position {
            file_id: 1,
            item_idx: to + 1,
        },
        items: (from..=to)
            .map(|k| WireItem {
                at: Position {
                    file_id: 1,
                    item_idx: k,
                },
                item: Item {
                    status: Status::Update,
                    doc_id: format!("d{k}").into_bytes(),
                    url: format!("http://x/{k}").into_bytes(),
                    content: vec![b'c'; 3000],
                    time_ms: 1,
                    origin: Origin::default(),
                },
            })
            .collect(),
    };
    let mut p = Vec::new();
    b.encode_into(&mut p);
    encode_frame(FrameType::Items, &p, out);
}

#[test]
fn batches_sent_back_to_back_are_each_acknowledged_in_order_and_stored_once() {
    let rig = Rig::new();
    let (cf, port) = rig.receiver_cf("r", "");
    let _r = Proc::start(&["-c", cf.to_str().unwrap(), "--recv"]);
    let mut s = connect(port);
    handshake::client(&mut s, &secret(&rig), Mode::Items, "node1.Index.0").unwrap();
    // Five batches in one write (the receiver may sync them together); the third resends
    // items of the second.
    let mut out = Vec::new();
    for (from, to) in [(1, 10), (11, 20), (15, 30), (31, 40), (41, 50)] {
        items_frame(from, to, &mut out);
    }
    s.write_all(&out).unwrap();
    let mut r = BufReader::new(&s);
    for to in [10, 20, 30, 40, 50] {
        let f = read_frame(&mut r, 1 << 16).unwrap();
        assert_eq!(f.kind, FrameType::Ack);
        let mut want = Vec::new();
        focuser_reader::wire::messages::put_position(
            &mut want,
            Position {
                file_id: 1,
                item_idx: to + 1,
            },
        );
        assert_eq!(f.payload, want, "ack of the batch up to {to}");
    }
    let urls: Vec<String> = items(&rig.root().join("r/received"))
        .iter()
        .map(|s| String::from_utf8_lossy(&s.item.url).into_owned())
        .collect();
    let want: Vec<String> = (1..=50).map(|k| format!("http://x/{k}")).collect();
    assert_eq!(urls, want);
}
