//! The writer on a disk that fills up (a small tmpfs, mounted by the test: it runs as root, as
//! CI does): a failed write or fsync leaves the files as they were at the last sync, what was
//! synced reads back whole, and the writer goes on once there is room again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use focuser_formats::segment::{
    self, index_path, item_path, Cursor, Item, Origin, Position, Status, SyncPolicy, Writer,
    WriterOptions,
};
use focuser_tests::tmpfs::Tmpfs;

fn item(n: u32, size: usize) -> Item {
    Item {
        status: Status::Update,
        doc_id: format!("{n:016x}").into_bytes(),
        url: format!("http://h.example/{n}").into_bytes(),
        content: vec![b'a' + (n % 26) as u8; size],
        time_ms: 1_700_000_000_000 + u64::from(n),
        origin: Origin::default(),
    }
}

fn opts(max_bytes: u64, every_items: u32) -> WriterOptions {
    WriterOptions {
        max_age_s: 0,
        max_items: 1_000_000,
        max_bytes,
        sync: SyncPolicy {
            every_items,
            every_ms: 60_000,
        },
    }
}

/// The store's items in order, failing on any damage.
fn read_all(dir: &Path) -> Vec<(Position, Item)> {
    let mut c = Cursor::new(dir, Position::START, None);
    let mut out = Vec::new();
    while let Some(s) = c.next().unwrap() {
        let at = Position {
            file_id: s.file_id,
            item_idx: s.item_idx,
        };
        out.push((at, s.item));
    }
    out
}

/// Every item file's length: its header and the records of the items read back, nothing more.
fn assert_no_stray_bytes(dir: &Path, all: &[(Position, Item)]) {
    for id in segment::list_segments(dir).unwrap() {
        let records: u64 = all
            .iter()
            .filter(|(p, _)| p.file_id == id)
            .map(|(_, it)| (56 + it.doc_id.len() + it.url.len() + it.content.len()) as u64)
            .sum();
        let len = std::fs::metadata(item_path(dir, id)).unwrap().len();
        assert_eq!(len, 32 + records, "segment {id}: bytes beyond its items");
    }
}

/// Fills a store until the disk is full, keeps trying while it is, then makes room and goes
/// on: the items of every sync that succeeded, and those the writer says are durable, are
/// there once each, and nothing else is.
fn fill_then_grow(size: usize, max_bytes: u64, every_items: u32) {
    let fs = Tmpfs::mount("256k");
    let dir = fs.path().join("store");
    let (mut w, _) = Writer::open(&dir, opts(max_bytes, every_items)).unwrap();
    // n of each item by its position, as far as the writer still holds it.
    let mut written: Vec<(Position, u32)> = Vec::new();
    let mut synced = 0usize;
    let mut n = 0u32;
    let mut failures = 0;
    while failures < 5 {
        n += 1;
        let r = w.append(&item(n, size)).map(|at| written.push((at, n)));
        let r = r.and_then(|()| match n.is_multiple_of(3) {
            true => w.sync(),
            false => Ok(()),
        });
        match r {
            Ok(()) if n.is_multiple_of(3) => synced = written.len(),
            Ok(()) => {}
            Err(e) => {
                failures += 1;
                assert!(e.to_string().contains("No space left"), "{e}");
                // What the writer holds is what its files hold: up to the last durable item.
                let durable = w.durable();
                written.retain(|(at, _)| *at < durable);
                assert!(written.len() >= synced, "a synced item was taken back");
                assert_eq!(w.position(), durable);
                synced = written.len();
            }
        }
        assert!(n < 10_000, "the disk never filled");
    }
    let before = read_all(&dir);
    assert_eq!(before.len(), synced);
    assert_no_stray_bytes(&dir, &before);
    fs.resize("8m");
    for _ in 0..150 {
        n += 1;
        written.push((w.append(&item(n, size)).unwrap(), n));
    }
    w.close().unwrap();
    let (w, rec) = Writer::open(&dir, opts(max_bytes, every_items)).unwrap();
    assert_eq!((rec.cut_bytes, rec.index_rebuilt), (0, false), "{rec:?}");
    drop(w);
    let all = read_all(&dir);
    assert_no_stray_bytes(&dir, &all);
    let got: Vec<(Position, u32)> = all
        .iter()
        .map(|(at, it)| {
            let k = u32::from_str_radix(std::str::from_utf8(&it.doc_id).unwrap(), 16).unwrap();
            assert_eq!(*it, item(k, size));
            (*at, k)
        })
        .collect();
    assert_eq!(got, written);
}

#[test]
fn a_full_disk_takes_back_only_what_was_not_durable_and_the_writer_goes_on() {
    // Records of several sizes: the disk fills inside a record, between records, at a sync
    // inside an append (every 4 items) and at a rotation (segments of 40 KiB).
    for size in [700, 1000, 3000, 9000, 30_000] {
        fill_then_grow(size, 40 << 10, 4);
    }
}

/// Fills the disk with a file of its own: nothing is left for anyone.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let p = dir.join("filler");
    let mut f = std::fs::File::create(&p).unwrap();
    let chunk = vec![0u8; 4096];
    while f.write_all(&chunk).is_ok() {}
    while f.write_all(&chunk[..1]).is_ok() {}
    p
}

#[test]
fn items_synced_whose_index_could_not_be_written_stay_and_become_visible_later() {
    let fs = Tmpfs::mount("1m");
    let dir = fs.path().join("store");
    let (mut w, _) = Writer::open(&dir, opts(1 << 30, 1_000_000)).unwrap();
    // 254 small items: the index is 32 + 254 × 16 = 4096 bytes, one page to the byte, and the
    // item file's last page has room for one more record.
    for n in 1..=254 {
        w.append(&item(n, 0)).unwrap();
    }
    w.sync().unwrap();
    assert_eq!(std::fs::metadata(index_path(&dir, 1)).unwrap().len(), 4096);
    let filler = fill(fs.path());
    let at = w.append(&item(255, 0)).unwrap();
    let e = w.sync().unwrap_err();
    assert!(e.to_string().contains("index_"), "{e}");
    // The item is durable (the index is what failed) and stays; readers do not see it yet.
    assert!(at < w.durable(), "{at} {}", w.durable());
    assert_eq!(read_all(&dir).len(), 254);
    assert_eq!(
        std::fs::metadata(index_path(&dir, 1)).unwrap().len(),
        4096,
        "a partial index entry was left"
    );
    std::fs::remove_file(filler).unwrap();
    w.sync().unwrap();
    let all = read_all(&dir);
    assert_eq!(all.len(), 255);
    assert_eq!(all[254].1, item(255, 0));
    w.append(&item(256, 0)).unwrap();
    w.close().unwrap();
    let (_, rec) = Writer::open(&dir, opts(1 << 30, 1)).unwrap();
    assert_eq!(
        (rec.items, rec.cut_bytes, rec.index_rebuilt),
        (256, 0, false)
    );
}

#[test]
fn a_seal_that_cannot_create_the_next_segment_leaves_the_active_one_as_it_was() {
    let fs = Tmpfs::mount("1m");
    let dir = fs.path().join("store");
    let (mut w, _) = Writer::open(&dir, opts(1 << 30, 1)).unwrap();
    for n in 1..=3 {
        w.append(&item(n, 100)).unwrap();
    }
    let filler = fill(fs.path());
    w.rotate().unwrap_err();
    assert_eq!(segment::list_segments(&dir).unwrap(), vec![1]);
    assert_eq!(
        w.position(),
        Position {
            file_id: 1,
            item_idx: 4
        }
    );
    std::fs::remove_file(filler).unwrap();
    w.rotate().unwrap();
    w.append(&item(4, 100)).unwrap();
    w.close().unwrap();
    let ns: Vec<Position> = read_all(&dir).into_iter().map(|(p, _)| p).collect();
    assert_eq!(ns.len(), 4);
    assert_eq!(
        ns[3],
        Position {
            file_id: 2,
            item_idx: 1
        }
    );
}
