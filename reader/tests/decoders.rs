//! The fuzz targets' decoders as ordinary tests: over the committed corpus (fuzz/seeds/) and
//! over damage generated from real files and frames: every truncation, every bit flipped,
//! garbage tails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::*;
use focuser_formats::segment::crc;
use focuser_formats::segment::{index_path, item_path, Item, Origin, Position, Status};
use focuser_reader::corpus::{
    check_frames, check_index, check_position, check_record, check_segment, check_snapshot_files,
    segment_input,
};
use focuser_reader::wire::frame::encode_frame;
use focuser_reader::wire::messages::{ErrorMsg, FileBegin, Hello, Mode, Welcome};
use focuser_reader::wire::{Batch, FrameType, WireItem};

type Check = fn(&[u8]);

fn targets() -> [(&'static str, Check); 6] {
    [
        ("record", check_record),
        ("index", check_index),
        ("position", check_position),
        ("frame", check_frames),
        ("segment", check_segment),
        ("snapshot", check_snapshot_files),
    ]
}

fn seeds_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target)
}

#[test]
fn the_committed_corpus_decodes_without_panics() {
    let mut n = 0;
    for (target, check) in targets() {
        let dir = seeds_dir(target);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for e in entries {
            let p = e.unwrap().path();
            check(&std::fs::read(&p).unwrap());
            n += 1;
        }
    }
    assert!(n >= 20, "only {n} corpus files");
}

/// Every prefix, every single-bit flip, and garbage from a few offsets.
fn damage(good: &[u8], check: Check) {
    check(good);
    for cut in 0..good.len() {
        check(&good[..cut]);
    }
    for i in 0..good.len() {
        for bit in [0, 3, 7] {
            let mut b = good.to_vec();
            b[i] ^= 1 << bit;
            check(&b);
        }
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for from in (0..good.len()).step_by(good.len() / 16 + 1) {
        let mut b = good.to_vec();
        for byte in &mut b[from..] {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *byte = x as u8;
        }
        check(&b);
    }
}

#[test]
fn damaged_segment_files_and_positions_decode_without_panics() {
    let rig = Rig::new();
    rig.write(6, &["--min", "10", "--max", "60"]);
    damage(
        &std::fs::read(item_path(&rig.store(), 1)).unwrap(),
        check_record,
    );
    damage(
        &std::fs::read(index_path(&rig.store(), 1)).unwrap(),
        check_index,
    );
    damage(
        &Position {
            file_id: 7,
            item_idx: 9,
        }
        .encode(),
        check_position,
    );
    // A resend snapshot's ask file and manifest, as yacobot and the reader write them.
    damage(
        b"stream = r1.Index.0.resend7\nreceiver = Index.0 127.0.0.1:9100\n",
        check_snapshot_files,
    );
    damage(b"items = 120\nposition = 3:17\n", check_snapshot_files);
    // The segment as a cursor, lag and dump read it once it is sealed.
    damage(
        &segment_input(
            &std::fs::read(index_path(&rig.store(), 1)).unwrap(),
            &std::fs::read(item_path(&rig.store(), 1)).unwrap(),
        ),
        check_segment,
    );
}

#[test]
fn damaged_frames_decode_without_panics() {
    let item = Item {
        status: Status::Delete,
        doc_id: b"abcdef0123456789".to_vec(),
        url: b"http://site.example/x".to_vec(),
        content: b"<xml>item</xml>".to_vec(),
        time_ms: 42,
        origin: Origin::default(),
    };
    let batch = Batch {
        upto: Position {
            file_id: 2,
            item_idx: 5,
        },
        items: vec![
            WireItem {
                at: Position {
                    file_id: 2,
                    item_idx: 1,
                },
                item: item.clone(),
            },
            WireItem {
                at: Position {
                    file_id: 2,
                    item_idx: 4,
                },
                item,
            },
        ],
    };
    let mut items = Vec::new();
    batch.encode_into(&mut items);
    // The same items as stored records (RECORDS frames carry them as they lie on disk).
    let records = focuser_reader::corpus::records_payload(&batch);
    let payloads: Vec<(FrameType, Vec<u8>)> = vec![
        (
            FrameType::Hello,
            Hello {
                mode: Mode::Items,
                stream: "node1.Index.0".into(),
                nonce: [7; 32],
            }
            .encode(),
        ),
        (FrameType::Challenge, vec![1; 32]),
        (
            FrameType::Welcome,
            Welcome {
                mac: [3; 32],
                last: Position {
                    file_id: 1,
                    item_idx: 2,
                },
            }
            .encode(),
        ),
        (FrameType::Items, items),
        (FrameType::Records, records),
        (FrameType::Ack, vec![2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0]),
        (
            FrameType::Error,
            ErrorMsg {
                code: 3,
                message: "authentication failed".into(),
            }
            .encode(),
        ),
        (
            FrameType::FileBegin,
            FileBegin {
                name: "master1-0000000001.q".into(),
                size: 3,
            }
            .encode(),
        ),
        (FrameType::FileData, b"abc".to_vec()),
        (
            FrameType::FileEnd,
            crc::crc32c(b"abc").to_le_bytes().to_vec(),
        ),
    ];
    let mut stream = Vec::new();
    for (kind, p) in &payloads {
        let mut one = Vec::new();
        encode_frame(*kind, p, &mut one);
        damage(&one, check_frames);
        stream.extend_from_slice(&one);
    }
    damage(&stream, check_frames);
}
