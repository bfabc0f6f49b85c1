//! Writes the fuzz targets' seed corpus: valid item and index files, positions and frames,
//! so the fuzzer starts past the CRCs. `cargo run -p focuser-reader --example fuzzseeds -- fuzz/seeds`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use focuser_formats::segment::crc;
use focuser_formats::segment::{
    index_path, item_path, Item, Origin, Position, Status, SyncPolicy, Writer, WriterOptions,
};
use focuser_reader::wire::frame::encode_frame;
use focuser_reader::wire::messages::{ErrorMsg, FileBegin, Hello, Mode, Welcome};
use focuser_reader::wire::{Batch, FrameType, WireItem};

fn item(n: u32) -> Item {
    Item {
        status: if n.is_multiple_of(3) {
            Status::Delete
        } else {
            Status::Update
        },
        doc_id: format!("{:016x}", n * 7919).into_bytes(),
        url: format!("http://site{n}.example/p").into_bytes(),
        content: vec![b'a' + n as u8 % 26; n as usize * 5],
        time_ms: 1_700_000_000_000 + n as u64,
        origin: Origin {
            stream: n % 2,
            file_id: 1,
            item_idx: n,
        },
    }
}

fn main() {
    let out = std::env::args().nth(1).expect("usage: fuzzseeds DIR");
    let out = Path::new(&out);
    for t in ["record", "index", "position", "frame", "segment"] {
        std::fs::create_dir_all(out.join(t)).unwrap();
    }
    let tmp = tempfile::tempdir().unwrap();
    let opts = WriterOptions {
        max_age_s: 0,
        max_items: 4,
        max_bytes: 1 << 20,
        sync: SyncPolicy {
            every_items: 1,
            every_ms: 0,
        },
    };
    let (mut w, _) = Writer::open(tmp.path(), opts).unwrap();
    for n in 1..=9 {
        w.append(&item(n)).unwrap();
    }
    w.close().unwrap();
    for id in 1..=3 {
        std::fs::copy(
            item_path(tmp.path(), id),
            out.join(format!("record/item_{id}")),
        )
        .unwrap();
        std::fs::copy(
            index_path(tmp.path(), id),
            out.join(format!("index/index_{id}")),
        )
        .unwrap();
        let segment = focuser_reader::corpus::segment_input(
            &std::fs::read(index_path(tmp.path(), id)).unwrap(),
            &std::fs::read(item_path(tmp.path(), id)).unwrap(),
        );
        std::fs::write(out.join(format!("segment/segment_{id}")), segment).unwrap();
    }
    for (i, p) in [(0, 1), (3, 17), (u64::MAX, u32::MAX)].iter().enumerate() {
        let pos = Position {
            file_id: p.0,
            item_idx: p.1,
        };
        std::fs::write(out.join(format!("position/pos_{i}")), pos.encode()).unwrap();
    }
    std::fs::write(out.join("position/empty"), b"").unwrap();
    std::fs::write(out.join("position/zeroes"), [0u8; 24]).unwrap();
    let batch = Batch {
        upto: Position {
            file_id: 1,
            item_idx: 5,
        },
        items: (1..=3)
            .map(|n| WireItem {
                at: Position {
                    file_id: 1,
                    item_idx: n,
                },
                item: item(n),
            })
            .collect(),
    };
    let mut items = Vec::new();
    batch.encode_into(&mut items);
    // The same items as stored records (RECORDS frames carry them as they lie on disk).
    let records = focuser_reader::corpus::records_payload(&batch);
    let frames: Vec<(&str, FrameType, Vec<u8>)> = vec![
        (
            "hello",
            FrameType::Hello,
            Hello {
                mode: Mode::Files,
                stream: "m1-n1".into(),
                nonce: [9; 32],
            }
            .encode(),
        ),
        ("challenge", FrameType::Challenge, vec![5; 32]),
        ("auth", FrameType::Auth, vec![6; 32]),
        (
            "welcome",
            FrameType::Welcome,
            Welcome {
                mac: [1; 32],
                last: Position {
                    file_id: 3,
                    item_idx: 4,
                },
            }
            .encode(),
        ),
        ("items", FrameType::Items, items),
        ("records", FrameType::Records, records),
        (
            "ack",
            FrameType::Ack,
            vec![1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0],
        ),
        (
            "error",
            FrameType::Error,
            ErrorMsg {
                code: 2,
                message: "not allowed".into(),
            }
            .encode(),
        ),
        (
            "file_begin",
            FrameType::FileBegin,
            FileBegin {
                name: "x-0000000001.q".into(),
                size: 2,
            }
            .encode(),
        ),
        ("file_data", FrameType::FileData, b"ok".to_vec()),
        (
            "file_end",
            FrameType::FileEnd,
            crc::crc32c(b"ok").to_le_bytes().to_vec(),
        ),
    ];
    let mut all = Vec::new();
    for (name, kind, p) in frames {
        let mut b = Vec::new();
        encode_frame(kind, &p, &mut b);
        std::fs::write(out.join(format!("frame/{name}")), &b).unwrap();
        all.extend_from_slice(&b);
    }
    std::fs::write(out.join("frame/all"), &all).unwrap();
}
