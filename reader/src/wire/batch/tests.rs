//! ITEMS and RECORDS batches: round trips, and every truncation or flipped bit refused.

use super::*;

fn item(n: u8) -> Item {
    Item {
        status: Status::Update,
        doc_id: vec![b'd', n],
        url: b"http://x/".to_vec(),
        content: vec![n; n as usize],
        time_ms: 5,
        origin: Origin::default(),
    }
}

#[test]
fn batches_round_trip_and_every_truncation_fails() {
    let b = Batch {
        upto: Position {
            file_id: 3,
            item_idx: 9,
        },
        items: vec![
            WireItem {
                at: Position {
                    file_id: 3,
                    item_idx: 2,
                },
                item: item(4),
            },
            WireItem {
                at: Position {
                    file_id: 3,
                    item_idx: 8,
                },
                item: item(9),
            },
        ],
    };
    let mut out = Vec::new();
    b.encode_into(&mut out);
    assert_eq!(Batch::decode(&out).unwrap(), b);
    for cut in 0..out.len() {
        assert!(Batch::decode(&out[..cut]).is_err(), "cut {cut}");
    }
    let mut backwards = b.clone();
    backwards.items.swap(0, 1);
    let mut out = Vec::new();
    backwards.encode_into(&mut out);
    assert!(Batch::decode(&out).is_err());
}

#[test]
fn a_checked_decode_gives_body_crcs_and_catches_every_flipped_bit() {
    use crate::wire::frame::{encode_frame, read_frame_unchecked};
    let b = Batch {
        upto: Position {
            file_id: 3,
            item_idx: 9,
        },
        items: (1..4)
            .map(|n| WireItem {
                at: Position {
                    file_id: 3,
                    item_idx: n,
                },
                item: item(n as u8 * 5),
            })
            .collect(),
    };
    let mut payload = Vec::new();
    b.encode_into(&mut payload);
    let mut frame = Vec::new();
    encode_frame(FrameType::Items, &payload, &mut frame);
    let (mut got, mut crcs) = (Vec::new(), Vec::new());
    let head = read_frame_unchecked(&mut &frame[..], 1 << 20, &mut got).unwrap();
    let back = BatchRef::decode_checked(&got, head, &mut crcs).unwrap();
    assert_eq!(back, b.as_ref());
    let want: Vec<u32> = b
        .items
        .iter()
        .map(|w| crc::crc32c(&[&w.item.doc_id[..], &w.item.url, &w.item.content].concat()))
        .collect();
    assert_eq!(crcs, want);
    for i in 4..frame.len() {
        let mut bad = frame.clone();
        bad[i] ^= 0x10;
        let Ok(head) = read_frame_unchecked(&mut &bad[..], 1 << 20, &mut got) else {
            continue; // a length no longer matching the bytes
        };
        assert!(
            BatchRef::decode_checked(&got, head, &mut crcs).is_err(),
            "byte {i}"
        );
    }
}

/// A RECORDS frame as a sender builds it: `(header, payload)`, the CRC worked out before
/// `damage` is applied to the payload (as a record damaged on the sender's disk).
fn records_frame(items: &[(u32, Item)], damage: impl FnOnce(&mut Vec<u8>)) -> (Unchecked, Vec<u8>) {
    let upto = Position {
        file_id: 3,
        item_idx: 100,
    };
    let mut payload = batch_fixed(upto, items.len() as u32).to_vec();
    for (idx, it) in items {
        focuser_formats::segment::record::encode_record(&it.as_ref(), 3, *idx, &mut payload);
    }
    let head = Unchecked {
        kind: FrameType::Records as u8,
        crc: crc::append(crc::crc32c(&[FrameType::Records as u8]), &payload),
    };
    damage(&mut payload);
    (head, payload)
}

#[test]
fn records_decode_to_the_stored_items_with_their_body_crcs() {
    let items: Vec<(u32, Item)> = vec![(1, item(3)), (2, item(0)), (7, item(200))];
    let (head, payload) = records_frame(&items, |_| {});
    let mut crcs = vec![9];
    let b = BatchRef::decode_checked(&payload, head, &mut crcs).unwrap();
    assert_eq!(
        b.upto,
        Position {
            file_id: 3,
            item_idx: 100
        }
    );
    assert_eq!(b.items.len(), 3);
    for ((w, (idx, it)), c) in b.items.iter().zip(&items).zip(&crcs) {
        assert_eq!(
            w.at,
            Position {
                file_id: 3,
                item_idx: *idx
            }
        );
        assert_eq!(w.item, it.as_ref());
        assert_eq!(
            *c,
            crc::crc32c(&[&it.doc_id[..], &it.url, &it.content].concat())
        );
    }
}

#[test]
fn a_damaged_record_body_is_named_and_nothing_is_taken() {
    let items: Vec<(u32, Item)> = vec![(1, item(3)), (2, item(50)), (3, item(4))];
    // The second record's content: 16 fixed + 59 + 56 header + 2 + 9 + 10 bytes in.
    let at = BATCH_FIXED + RECORD_HEADER_LEN + 2 + 9 + 3 + RECORD_HEADER_LEN + 2 + 9 + 10;
    let (head, payload) = records_frame(&items, |p| p[at] ^= 0x40);
    let mut crcs = Vec::new();
    let e = BatchRef::decode_checked(&payload, head, &mut crcs).unwrap_err();
    assert!(
        matches!(
            e,
            FrameError::BadRecord {
                file_id: 3,
                item_idx: 2
            }
        ),
        "{e}"
    );
    assert!(crcs.is_empty());
    // A record's length or CRC field damaged: the frame's CRC fails.
    let (head, payload) = records_frame(&items, |p| p[BATCH_FIXED + 5] ^= 1);
    assert!(matches!(
        BatchRef::decode_checked(&payload, head, &mut crcs),
        Err(FrameError::BadCrc)
    ));
}

#[test]
fn malformed_records_payloads_are_refused() {
    let bad = |items: &[(u32, Item)], damage: fn(&mut Vec<u8>)| {
        let (head, payload) = records_frame(items, |_| {});
        let mut damaged = payload.clone();
        damage(&mut damaged);
        // Sent with a CRC over the damaged bytes: the decoding itself must refuse it.
        let head = Unchecked {
            kind: head.kind,
            crc: crc::append(crc::crc32c(&[head.kind]), &damaged),
        };
        BatchRef::decode_checked(&damaged, head, &mut Vec::new()).unwrap_err()
    };
    let two = [(1, item(3)), (2, item(4))];
    let reason = |e: FrameError| e.to_string();
    assert!(reason(bad(&two, |p| p.push(0))).contains("bytes after the last record"));
    assert!(reason(bad(&two, |p| p.truncate(p.len() - 1))).contains("past the payload"));
    let back = [(2, item(3)), (1, item(4))];
    assert!(reason(bad(&back, |_| {})).contains("not increasing"));
    // One record more than there are.
    assert!(reason(bad(&two, |p| p[12] = 3)).contains("short record header"));
    let past = [(1, item(3)), (100, item(4))];
    assert!(reason(bad(&past, |_| {})).contains("at or past the batch's end"));
}

#[test]
fn every_flipped_bit_of_a_records_frame_is_refused() {
    let items: Vec<(u32, Item)> = vec![(1, item(3)), (4, item(9))];
    let (head, good) = records_frame(&items, |_| {});
    for bit in 0..good.len() * 8 {
        let mut p = good.clone();
        p[bit / 8] ^= 1 << (bit % 8);
        let mut crcs = Vec::new();
        assert!(
            BatchRef::decode_checked(&p, head, &mut crcs).is_err(),
            "bit {bit} flipped went through"
        );
        assert!(crcs.is_empty());
    }
}
