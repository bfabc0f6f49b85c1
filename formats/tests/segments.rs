//! The segment store: round trips, rotation, tailing, recovery from torn tails and damaged
//! indexes, position files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use focuser_formats::segment::{
    self, index_path, item_path, read_position, write_position, Cursor, Item, Origin, Partition,
    Position, PositionError, SegmentIndex, Status, SyncPolicy, Writer, WriterOptions,
};

fn item(n: u32) -> Item {
    Item {
        status: if n.is_multiple_of(7) {
            Status::Delete
        } else {
            Status::Update
        },
        doc_id: format!("{:016x}", u64::from(n) * 0x9e37_79b9).into_bytes(),
        url: format!("http://h{}.example/p/{n}", n % 13).into_bytes(),
        content: vec![b'a' + (n % 26) as u8; (n as usize * 37) % 3000],
        time_ms: 1_700_000_000_000 + u64::from(n),
        origin: Origin::default(),
    }
}

fn opts(max_items: u32) -> WriterOptions {
    WriterOptions {
        max_age_s: 0,
        max_items,
        max_bytes: 1 << 30,
        sync: SyncPolicy {
            every_items: 1,
            every_ms: 0,
        },
    }
}

fn read_all(dir: &Path, from: Position, p: Option<Partition>) -> Vec<(Position, Item)> {
    let mut c = Cursor::new(dir, from, p);
    let mut out = Vec::new();
    while let Some(s) = c.next().unwrap() {
        out.push((
            Position {
                file_id: s.file_id,
                item_idx: s.item_idx,
            },
            s.item,
        ));
    }
    out
}

#[test]
fn items_round_trip_across_rotations_and_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, rec) = Writer::open(dir.path(), opts(10)).unwrap();
    assert_eq!((rec.file_id, rec.items), (1, 0));
    let mut at = Vec::new();
    for n in 1..=35 {
        at.push(w.append(&item(n)).unwrap());
    }
    w.rotate().unwrap();
    w.close().unwrap();
    assert_eq!(
        segment::list_segments(dir.path()).unwrap(),
        vec![1, 2, 3, 4, 5]
    );
    assert_eq!(
        at[10],
        Position {
            file_id: 2,
            item_idx: 1
        }
    );
    let all = read_all(dir.path(), Position::START, None);
    assert_eq!(all.len(), 35);
    for (i, (pos, it)) in all.iter().enumerate() {
        assert_eq!(*pos, at[i]);
        assert_eq!(*it, item(i as u32 + 1));
    }
    // From the middle, and one partition of three: exactly the items that hash there.
    let tail = read_all(dir.path(), at[20], None);
    assert_eq!(tail.len(), 15);
    let mut seen = 0;
    for k in 0..3 {
        let part = Partition { count: 3, index: k };
        let got = read_all(dir.path(), Position::START, Some(part));
        assert!(got
            .iter()
            .all(|(_, it)| segment::doc_hash(&it.doc_id) % 3 == k));
        seen += got.len();
    }
    assert_eq!(seen, 35);
}

#[test]
fn a_reader_sees_only_synced_items_and_follows_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(4);
    o.sync = SyncPolicy {
        every_items: 3,
        every_ms: 1_000_000,
    };
    let (mut w, _) = Writer::open(dir.path(), o).unwrap();
    let mut c = Cursor::new(dir.path(), Position::START, None);
    w.append(&item(1)).unwrap();
    w.append(&item(2)).unwrap();
    assert!(c.next().unwrap().is_none(), "unsynced items are invisible");
    w.append(&item(3)).unwrap(); // the third makes the batch durable
    for n in 1..=3 {
        assert_eq!(c.next().unwrap().unwrap().item, item(n));
    }
    assert!(c.next().unwrap().is_none());
    w.append(&item(4)).unwrap();
    w.append(&item(5)).unwrap(); // rotation seals 1..4, 5 waits in segment 2
    w.sync().unwrap();
    assert_eq!(c.next().unwrap().unwrap().item, item(4));
    assert_eq!(c.next().unwrap().unwrap().item, item(5));
    assert_eq!(
        c.position(),
        Position {
            file_id: 2,
            item_idx: 2
        }
    );
}

/// Writes items 1..=n into one segment and returns the item file's bytes.
fn one_segment(dir: &Path, n: u32) -> Vec<u8> {
    let (mut w, _) = Writer::open(dir, opts(1000)).unwrap();
    for k in 1..=n {
        w.append(&item(k)).unwrap();
    }
    w.close().unwrap();
    std::fs::read(item_path(dir, 1)).unwrap()
}

#[test]
fn a_torn_tail_cut_at_every_byte_keeps_every_earlier_record() {
    let dir = tempfile::tempdir().unwrap();
    let full = one_segment(dir.path(), 5);
    let (_, before) = {
        let d = tempfile::tempdir().unwrap();
        let b = one_segment(d.path(), 4);
        (d, b)
    };
    let last_start = before.len();
    assert!(full.len() > last_start + 100);
    for cut in last_start..full.len() {
        let d = tempfile::tempdir().unwrap();
        std::fs::copy(index_path(dir.path(), 1), index_path(d.path(), 1)).unwrap();
        std::fs::write(item_path(d.path(), 1), &full[..cut]).unwrap();
        let (mut w, rec) = Writer::open(d.path(), opts(1000)).unwrap();
        assert_eq!(rec.items, 4, "cut at {cut}");
        assert_eq!(rec.cut_bytes, (cut - last_start) as u64);
        assert!(rec.index_rebuilt, "the index had 5 entries");
        // The store goes on: the next item is item 5 again, and everything reads back.
        assert_eq!(
            w.append(&item(5)).unwrap(),
            Position {
                file_id: 1,
                item_idx: 5
            }
        );
        w.close().unwrap();
        let all = read_all(d.path(), Position::START, None);
        assert_eq!(all.len(), 5);
        assert_eq!(std::fs::read(item_path(d.path(), 1)).unwrap(), full);
    }
}

#[test]
fn garbage_from_any_offset_to_the_end_is_cut_at_the_first_bad_record() {
    let dir = tempfile::tempdir().unwrap();
    let full = one_segment(dir.path(), 20);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..200 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let from = 32 + (seed as usize % (full.len() - 32));
        let mut bad = full.clone();
        for (i, b) in bad[from..].iter_mut().enumerate() {
            *b = (seed >> (i % 56)) as u8 ^ i as u8;
        }
        let d = tempfile::tempdir().unwrap();
        std::fs::write(item_path(d.path(), 1), &bad).unwrap();
        std::fs::copy(index_path(dir.path(), 1), index_path(d.path(), 1)).unwrap();
        let (w, rec) = Writer::open(d.path(), opts(1000)).unwrap();
        w.close().unwrap();
        let got = read_all(d.path(), Position::START, None);
        // Every record that ends before the garbage starts survives, and nothing else.
        let intact = got.len();
        assert_eq!(rec.items as usize, intact);
        for (k, (_, it)) in got.iter().enumerate() {
            assert_eq!(*it, item(k as u32 + 1));
        }
        let good_end = 32
            + (1..=intact as u32)
                .map(|k| rec_len(&item(k)))
                .sum::<usize>();
        assert!(
            good_end <= from,
            "a record overlapping the garbage survived"
        );
        if intact < 20 {
            assert!(good_end + rec_len(&item(intact as u32 + 1)) > from);
        }
    }
}

fn rec_len(it: &Item) -> usize {
    56 + it.doc_id.len() + it.url.len() + it.content.len()
}

#[test]
fn an_empty_short_or_zeroed_index_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, _) = Writer::open(dir.path(), opts(6)).unwrap();
    for k in 1..=10 {
        w.append(&item(k)).unwrap();
    }
    w.close().unwrap();
    let good1 = std::fs::read(index_path(dir.path(), 1)).unwrap();
    let good2 = std::fs::read(index_path(dir.path(), 2)).unwrap();
    type Damage = fn(&[u8]) -> Vec<u8>;
    let damage: [(&str, Damage); 4] = [
        ("empty", |_| Vec::new()),
        ("short", |b| b[..b.len() - 20].to_vec()),
        ("zeroed", |b| vec![0u8; b.len()]),
        ("zeroed entries", |b| {
            let mut v = b.to_vec();
            v[40..].iter_mut().for_each(|x| *x = 0);
            v
        }),
    ];
    for (what, f) in damage {
        // Sealed segment 1: a reader completes the index by scanning the item file.
        std::fs::write(index_path(dir.path(), 1), f(&good1)).unwrap();
        let seg = SegmentIndex::open(dir.path(), 1).unwrap().unwrap();
        assert_eq!(seg.len(), 6, "{what}");
        assert!(seg.rebuilt, "{what}");
        assert_eq!(
            read_all(dir.path(), Position::START, None).len(),
            10,
            "{what}"
        );
        std::fs::write(index_path(dir.path(), 1), &good1).unwrap();
        // Active segment 2: the writer's recovery rewrites it.
        std::fs::write(index_path(dir.path(), 2), f(&good2)).unwrap();
        let (w, rec) = Writer::open(dir.path(), opts(6)).unwrap();
        assert!(rec.index_rebuilt, "{what}");
        assert_eq!(rec.items, 4, "{what}");
        w.close().unwrap();
        assert_eq!(
            std::fs::read(index_path(dir.path(), 2)).unwrap(),
            good2,
            "{what}"
        );
    }
}

#[test]
fn a_second_writer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_w, _) = Writer::open(dir.path(), opts(6)).unwrap();
    let err = Writer::open(dir.path(), opts(6)).err().unwrap();
    assert!(err.to_string().contains("another writer"), "{err}");
}

#[test]
fn position_files_round_trip_and_damage_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("pos_x.dat");
    assert!(read_position(&p).unwrap().is_none());
    let pos = Position {
        file_id: 17,
        item_idx: 4242,
    };
    write_position(&p, pos).unwrap();
    assert_eq!(read_position(&p).unwrap(), Some(pos));
    for (bytes, reason) in [
        (vec![], "empty"),
        (vec![0u8; 24], "bad magic"),
        (vec![0u8; 4096], "wrong length"),
        (pos.encode()[..23].to_vec(), "wrong length"),
    ] {
        std::fs::write(&p, bytes).unwrap();
        match read_position(&p) {
            Err(PositionError::Bad { reason: r, .. }) => assert_eq!(r, reason),
            other => panic!("{other:?}"),
        }
    }
    let mut flipped = pos.encode();
    flipped[9] ^= 1;
    std::fs::write(&p, flipped).unwrap();
    assert!(read_position(&p).is_err());
}

#[test]
fn a_cursor_jumps_over_deleted_segments_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, _) = Writer::open(dir.path(), opts(5)).unwrap();
    for k in 1..=16 {
        w.append(&item(k)).unwrap();
    }
    w.close().unwrap();
    segment::delete_segment(dir.path(), 1).unwrap();
    segment::delete_segment(dir.path(), 2).unwrap();
    let mut c = Cursor::new(
        dir.path(),
        Position {
            file_id: 1,
            item_idx: 3,
        },
        None,
    );
    assert_eq!(c.next().unwrap().unwrap().item, item(11));
    assert_eq!(
        c.take_gap(),
        Some((
            Position {
                file_id: 1,
                item_idx: 3
            },
            Position {
                file_id: 3,
                item_idx: 1
            }
        ))
    );
    // From the start nothing is a gap.
    let mut c = Cursor::new(dir.path(), Position::START, None);
    assert_eq!(c.next().unwrap().unwrap().item, item(11));
    assert_eq!(c.take_gap(), None);
}

#[test]
fn a_corrupt_record_in_a_sealed_segment_is_an_error_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, _) = Writer::open(dir.path(), opts(5)).unwrap();
    for k in 1..=6 {
        w.append(&item(k)).unwrap();
    }
    w.close().unwrap();
    let p = item_path(dir.path(), 1);
    let mut b = std::fs::read(&p).unwrap();
    let off = 32 + rec_len(&item(1)) + 60; // inside item 2's body
    b[off] ^= 0xff;
    std::fs::write(&p, b).unwrap();
    let mut c = Cursor::new(dir.path(), Position::START, None);
    assert_eq!(c.next().unwrap().unwrap().item, item(1));
    let err = c.next().unwrap_err().to_string();
    assert!(err.contains("item 2") && err.contains("CRC"), "{err}");
    assert_eq!(c.next().unwrap().unwrap().item, item(3));
}

#[test]
fn an_old_segment_is_sealed_and_the_oldest_unsynced_item_waits_at_most_every_ms() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(1000);
    o.max_age_s = 1;
    o.sync = SyncPolicy {
        every_items: 1000,
        every_ms: 50,
    };
    // Taken before the segment is created and before the append: a bound on how long the
    // segment and the unsynced item can have waited. On a loaded machine a stall can make the
    // sync or the seal (rightly) due before the negative checks; those are then skipped.
    let opened = Instant::now();
    let (mut w, _) = Writer::open(dir.path(), o).unwrap();
    assert!(
        !w.rotate_if_due().unwrap(),
        "an empty segment is never sealed"
    );
    let appended = Instant::now();
    w.append(&item(1)).unwrap();
    let mut c = Cursor::new(dir.path(), Position::START, None);
    let early = c.next().unwrap();
    let synced_early = w.sync_if_due().unwrap();
    let stalled = appended.elapsed() >= Duration::from_millis(50);
    if !stalled {
        assert!(early.is_none(), "visible before its sync");
        assert!(!synced_early, "synced before every_ms");
    }
    std::thread::sleep(Duration::from_millis(60));
    let synced = w.sync_if_due().unwrap();
    if !stalled {
        assert!(synced, "not synced after every_ms");
    }
    let first = match early {
        Some(first) => first,
        None => c.next().unwrap().unwrap(),
    };
    assert_eq!(first.item, item(1));
    let rotated_early = w.rotate_if_due().unwrap();
    // 900 ms, not 1000: the segment's age counts in whole milliseconds of the wall clock.
    if opened.elapsed() < Duration::from_millis(900) {
        assert!(!rotated_early, "sealed before max_age");
    }
    std::thread::sleep(Duration::from_millis(1000));
    // A segment sealed early leaves an empty one, which is not sealed again.
    assert!(rotated_early || w.rotate_if_due().unwrap());
    assert_eq!(segment::list_segments(dir.path()).unwrap(), vec![1, 2]);
}

#[test]
fn a_sealed_segment_with_a_bad_header_is_reported_and_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, _) = Writer::open(dir.path(), opts(5)).unwrap();
    for k in 1..=12 {
        w.append(&item(k)).unwrap();
    }
    w.close().unwrap();
    let p = item_path(dir.path(), 2);
    let mut b = std::fs::read(&p).unwrap();
    b[0] = b'X';
    std::fs::write(&p, b).unwrap();
    let mut c = Cursor::new(dir.path(), Position::START, None);
    for k in 1..=5 {
        assert_eq!(c.next().unwrap().unwrap().item, item(k));
    }
    let err = c.next().unwrap_err().to_string();
    assert!(
        err.contains("item_0000000002.dat") && err.contains("bad magic"),
        "{err}"
    );
    assert_eq!(c.next().unwrap().unwrap().item, item(11));
}

#[test]
fn a_reader_follows_an_index_the_writers_recovery_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, _) = Writer::open(dir.path(), opts(1000)).unwrap();
    for k in 1..=3 {
        w.append(&item(k)).unwrap();
    }
    let mut c = Cursor::new(dir.path(), Position::START, None);
    for k in 1..=3 {
        assert_eq!(c.next().unwrap().unwrap().item, item(k));
    }
    assert!(c.next().unwrap().is_none());
    // A crash between the item file's fsync and the index append: item 4 is durable, the
    // index is behind. The reopened writer rewrites the index (a new file, by rename).
    drop(w);
    let mut rec = Vec::new();
    segment::record::encode_record(&item(4).as_ref(), 1, 4, &mut rec);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(item_path(dir.path(), 1))
        .unwrap();
    std::io::Write::write_all(&mut f, &rec).unwrap();
    let (mut w, r) = Writer::open(dir.path(), opts(1000)).unwrap();
    assert!(r.index_rebuilt && r.items == 4, "{r:?}");
    // The reader, still holding the old index open, follows the new one: 4, then what the
    // writer appends to it, long before any seal.
    assert_eq!(c.next().unwrap().unwrap().item, item(4));
    assert!(c.next().unwrap().is_none());
    w.append(&item(5)).unwrap();
    assert_eq!(c.next().unwrap().unwrap().item, item(5));
    assert_eq!(segment::list_segments(dir.path()).unwrap(), vec![1]);
    // A clean reopen leaves a whole index alone, and the reader carries on where it was.
    w.close().unwrap();
    let (w, r) = Writer::open(dir.path(), opts(1000)).unwrap();
    assert!(!r.index_rebuilt);
    w.close().unwrap();
    assert!(c.next().unwrap().is_none());
}

#[test]
fn a_short_item_file_or_a_bad_header_is_named_and_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, _) = Writer::open(dir.path(), opts(5)).unwrap();
    for k in 1..=12 {
        w.append(&item(k)).unwrap();
    }
    w.close().unwrap();
    // Sealed segment 2 cut inside its header; active segment 3 with a bad magic.
    let two = item_path(dir.path(), 2);
    let b = std::fs::read(&two).unwrap();
    std::fs::write(&two, &b[..10]).unwrap();
    let three = item_path(dir.path(), 3);
    let mut b = std::fs::read(&three).unwrap();
    b[0] = b'X';
    std::fs::write(&three, b).unwrap();
    // The writer names the active one, leaves it as it is and goes on in segment 4.
    let (mut w, rec) = Writer::open(dir.path(), opts(5)).unwrap();
    let bad = rec.left_behind.clone().unwrap();
    assert!(
        bad.contains("item_0000000003.dat") && bad.contains("bad magic"),
        "{bad}"
    );
    assert_eq!(rec.file_id, 4);
    assert_eq!(
        w.append(&item(13)).unwrap(),
        Position {
            file_id: 4,
            item_idx: 1
        }
    );
    w.close().unwrap();
    assert!(
        std::fs::metadata(&three).unwrap().len() > 32,
        "left as it was"
    );
    // A reader names each file and why, once, and reads on.
    let mut c = Cursor::new(dir.path(), Position::START, None);
    for k in 1..=5 {
        assert_eq!(c.next().unwrap().unwrap().item, item(k));
    }
    let err = c.next().unwrap_err().to_string();
    assert!(
        err.contains("item_0000000002.dat") && err.contains("shorter than its header"),
        "{err}"
    );
    let err = c.next().unwrap_err().to_string();
    assert!(
        err.contains("item_0000000003.dat") && err.contains("bad magic"),
        "{err}"
    );
    assert_eq!(c.next().unwrap().unwrap().item, item(13));
    assert!(c.next().unwrap().is_none());
    // An active segment shorter than its header: the same.
    std::fs::write(item_path(dir.path(), 4), b"FCSR").unwrap();
    let (w, rec) = Writer::open(dir.path(), opts(5)).unwrap();
    let bad = rec.left_behind.clone().unwrap();
    assert!(
        bad.contains("item_0000000004.dat") && bad.contains("shorter than its header"),
        "{bad}"
    );
    assert_eq!(rec.file_id, 5);
    w.close().unwrap();
}

#[test]
fn segments_are_sealed_before_they_pass_max_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(1_000_000);
    o.max_bytes = 20_000;
    let (mut w, _) = Writer::open(dir.path(), o).unwrap();
    let mut big = item(1);
    big.content = vec![b'z'; 30_000]; // alone over the limit: a segment of its own
    let mut all: Vec<Item> = (1..=60).map(item).collect();
    all.insert(30, big);
    let mut at = Vec::new();
    for it in &all {
        at.push(w.append(it).unwrap());
    }
    w.close().unwrap();
    let ids = segment::list_segments(dir.path()).unwrap();
    assert!(ids.len() >= 4, "{ids:?}");
    for &id in &ids {
        let len = std::fs::metadata(item_path(dir.path(), id)).unwrap().len();
        let mine: Vec<usize> = (0..all.len()).filter(|&i| at[i].file_id == id).collect();
        if mine.len() > 1 {
            assert!(len <= 20_000, "segment {id}: {len} bytes");
        }
        // It was sealed because the next item would not have fit.
        if let Some(next) = mine.last().map(|i| i + 1).filter(|&i| i < all.len()) {
            if id != *ids.last().unwrap() {
                assert!(len as usize + rec_len(&all[next]) > 20_000, "segment {id}");
            }
        }
    }
    let back: Vec<Item> = read_all(dir.path(), Position::START, None)
        .into_iter()
        .map(|(_, it)| it)
        .collect();
    assert_eq!(back, all);
}

#[test]
fn a_sealed_segment_cut_short_reports_its_damaged_tail_once_and_the_cursor_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (mut w, _) = Writer::open(dir.path(), opts(10)).unwrap();
    for k in 1..=15 {
        w.append(&item(k)).unwrap();
    }
    w.close().unwrap();
    // Segment 1 (sealed) cut inside item 7's body: items 7 to 10 are gone.
    let start: u64 = 32 + (1..=6).map(|k| rec_len(&item(k)) as u64).sum::<u64>();
    let f = std::fs::File::options()
        .write(true)
        .open(item_path(dir.path(), 1))
        .unwrap();
    f.set_len(start + 60).unwrap();
    let mut c = Cursor::new(dir.path(), Position::START, None);
    let mut got = Vec::new();
    let mut errors = Vec::new();
    loop {
        match c.next() {
            Ok(Some(s)) => got.push(s.item),
            Ok(None) => break,
            Err(e) => {
                assert_eq!(e.items_skipped(), 4, "{e}");
                errors.push(e.to_string());
            }
        }
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains(&format!(
            "damaged from offset {start} (item 7 on): torn record"
        )),
        "{}",
        errors[0]
    );
    let want: Vec<Item> = (1..=6).chain(11..=15).map(item).collect();
    assert_eq!(got, want);
    // A cursor whose position was past part of the damage counts only the rest.
    let mut c = Cursor::new(
        dir.path(),
        Position {
            file_id: 1,
            item_idx: 9,
        },
        None,
    );
    assert_eq!(c.next().unwrap_err().items_skipped(), 2);
    assert_eq!(c.next().unwrap().unwrap().item, item(11));
}

/// `next_records` (what RECORDS frames are built from) takes the same items as `next`, as
/// the bytes the writer stored, whatever the partition, the statuses skipped and the reads'
/// budget; and it stops at the end of a segment.
#[test]
fn records_read_in_runs_are_the_stored_records_of_the_items_a_cursor_reads() {
    use focuser_formats::segment::record::{encode_record, RecordHeader};
    use focuser_formats::segment::Take;
    let dir = tempfile::tempdir().unwrap();
    let (mut w, _) = Writer::open(dir.path(), opts(25)).unwrap();
    let mut at = Vec::new();
    for n in 1..=60 {
        at.push(w.append(&item(n)).unwrap());
    }
    w.close().unwrap();
    let stored = |n: u32| {
        let mut b = Vec::new();
        let p = at[n as usize - 1];
        encode_record(&item(n).as_ref(), p.file_id, p.item_idx, &mut b);
        b
    };
    for part in [None, Some(Partition { count: 3, index: 1 })] {
        for budget in [1, 5_000, 1 << 20] {
            let want: Vec<u32> = (1..=60)
                .filter(|&n| part.is_none_or(|p| p.wants(segment::doc_hash(&item(n).doc_id))))
                .filter(|&n| item(n).status == Status::Update)
                .collect();
            let mut c = Cursor::new(dir.path(), Position::START, part);
            let (mut got, mut bytes) = (Vec::new(), Vec::new());
            loop {
                let before = bytes.len();
                let file = std::cell::Cell::new(None);
                let n = c
                    .next_records(&mut bytes, budget, |h: &RecordHeader| {
                        assert!(file.replace(Some(h.file_id)).is_none_or(|f| f == h.file_id));
                        if h.status == Status::Update {
                            let pos = Position {
                                file_id: h.file_id,
                                item_idx: h.item_idx,
                            };
                            got.push(at.iter().position(|p| *p == pos).unwrap() as u32 + 1);
                            Take::Read
                        } else {
                            Take::Skip
                        }
                    })
                    .unwrap();
                assert_eq!(n == 0, bytes.len() == before);
                if n == 0
                    && c.position()
                        == (Position {
                            file_id: 3,
                            item_idx: 11,
                        })
                {
                    break;
                }
            }
            assert_eq!(got, want, "partition {part:?}, budget {budget}");
            let expected: Vec<u8> = want.iter().flat_map(|&n| stored(n)).collect();
            assert!(bytes == expected, "partition {part:?}, budget {budget}");
        }
    }
}
