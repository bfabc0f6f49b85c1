//! Files into a receiver's inbox: two transfers of one name at once each write a temporary
//! of their own; the first to finish is published and acknowledged, whole; the second, with
//! other bytes, is refused and the first kept; the same bytes again are a resend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use common::*;
use focuser_formats::segment::crc;
use focuser_reader::wire::frame::{encode_frame, Fields};
use focuser_reader::wire::handshake;
use focuser_reader::wire::messages::code;
use focuser_reader::wire::{read_frame, ErrorMsg, FileBegin, Frame, FrameType, Mode, Secret};
use focuser_tests::wait_for;

const NAME: &str = "m1-0000000042.q";
const SIZE: usize = 300_000;
const HALF: usize = SIZE / 2;

fn open(rig: &Rig, port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let secret = Secret::from_bytes(rig.secret.as_bytes());
    handshake::client(&mut s, &secret, Mode::Files, "master1-node1").unwrap();
    s
}

fn begin(s: &mut TcpStream, first: &[u8]) {
    let mut out = Vec::new();
    let b = FileBegin {
        name: NAME.into(),
        size: SIZE as u64,
    };
    encode_frame(FrameType::FileBegin, &b.encode(), &mut out);
    encode_frame(FrameType::FileData, first, &mut out);
    s.write_all(&out).unwrap();
}

/// Sends the rest and FILE_END; the receiver's answer.
fn finish(s: &mut TcpStream, rest: &[u8], whole: &[u8]) -> Frame {
    let mut out = Vec::new();
    encode_frame(FrameType::FileData, rest, &mut out);
    encode_frame(
        FrameType::FileEnd,
        &crc::crc32c(whole).to_le_bytes(),
        &mut out,
    );
    s.write_all(&out).unwrap();
    read_frame(&mut BufReader::new(&*s), 1 << 16).unwrap()
}

/// Whether a temporary file in `inbox` holds at least `first` (a transfer's first half).
fn temporary_holds(inbox: &Path, first: &[u8]) -> bool {
    std::fs::read_dir(inbox).is_ok_and(|d| {
        d.flatten().any(|e| {
            e.file_name().to_string_lossy().starts_with('.')
                && std::fs::read(e.path()).is_ok_and(|b| b.starts_with(first))
        })
    })
}

fn content(seed: u8) -> Vec<u8> {
    let mut x = u32::from(seed) | 1;
    (0..SIZE)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

#[test]
fn two_transfers_of_one_name_never_publish_a_mix() {
    let rig = Rig::new();
    let (cf, port) = rig.receiver_cf("r", "");
    let _r = Proc::start(&["-c", cf.to_str().unwrap(), "--recv"]);
    wait_for("the receiver listening", Duration::from_secs(60), || {
        rig.log("r").contains("listening on")
    });
    let inbox = rig.root().join("r/inbox/master1-node1");
    let published = inbox.join(NAME);
    let (a, b) = (content(1), content(2));

    // A sends half its file, then B (the same name, other bytes) half of its own.
    let mut sa = open(&rig, port);
    begin(&mut sa, &a[..HALF]);
    wait_for("A's first half taken", Duration::from_secs(30), || {
        temporary_holds(&inbox, &a[..HALF])
    });
    let mut sb = open(&rig, port);
    begin(&mut sb, &b[..HALF]);
    wait_for("B's first half taken", Duration::from_secs(30), || {
        temporary_holds(&inbox, &b[..HALF])
    });

    // A finishes first: acknowledged, and what is published is A, whole.
    let fa = finish(&mut sa, &a[HALF..], &a);
    assert_eq!(fa.kind, FrameType::FileAck);
    assert_eq!(Fields::new(&fa.payload, "FILE_ACK").string().unwrap(), NAME);
    assert!(
        std::fs::read(&published).unwrap() == a,
        "A acknowledged, not published whole"
    );

    // B, finishing with other bytes, is refused: A stays.
    let fb = finish(&mut sb, &b[HALF..], &b);
    assert_eq!(fb.kind, FrameType::Error);
    let e = ErrorMsg::decode(&fb.payload).unwrap();
    assert_eq!(e.code, code::BAD_FILE);
    assert!(
        e.message.contains("different file of this name"),
        "{}",
        e.message
    );
    assert!(std::fs::read(&published).unwrap() == a);

    // A sent again (a sender that did not see its ack) is acknowledged: it is there.
    let mut sa = open(&rig, port);
    begin(&mut sa, &a[..HALF]);
    let again = finish(&mut sa, &a[HALF..], &a);
    assert_eq!(again.kind, FrameType::FileAck);
    assert!(std::fs::read(&published).unwrap() == a);

    // No temporary is left behind.
    let names: Vec<String> = std::fs::read_dir(&inbox)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [NAME]);
    wait_for("the refusal in the log", Duration::from_secs(10), || {
        rig.log("r")
            .contains("a different file of this name is in the inbox")
    });
}
