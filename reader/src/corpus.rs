//! Every decoder of bytes from disk or the network, run over one input with the invariants
//! that must hold whatever the bytes: no panic, and whatever decodes re-encodes to the same
//! bytes. The fuzz targets (fuzz/) and the ordinary tests (tests/decoders.rs) both call these.

use focuser_formats::segment::record::{
    self, FileHeader, IndexEntry, RecordHeader, FILE_HEADER_LEN, INDEX_ENTRY_LEN, INDEX_MAGIC,
    ITEM_MAGIC,
};
use focuser_formats::segment::{
    crc, index_path, item_path, Cursor, Partition, Position, SegmentError,
};

use crate::wire::frame::Unchecked;
use crate::wire::messages::{ErrorMsg, FileBegin, Hello, Welcome};
use crate::wire::{decode_frame, BatchRef, FrameType};

/// Item files: the header, then records one after another as a reader would take them.
pub fn check_record(data: &[u8]) {
    if let Ok(h) = FileHeader::decode(data, ITEM_MAGIC) {
        assert_eq!(&h.encode(ITEM_MAGIC)[..], &data[..FILE_HEADER_LEN]);
    }
    let mut rest = data.get(FILE_HEADER_LEN..).unwrap_or(data);
    while let Ok(h) = RecordHeader::decode(rest) {
        let Some(rec) = rest.get(..h.len as usize) else {
            break;
        };
        let Ok((h2, item)) = record::decode_record(rec) else {
            break;
        };
        let mut again = Vec::new();
        record::encode_record(&item.as_ref(), h2.file_id, h2.item_idx, &mut again);
        assert_eq!(again, rec, "a decoded record re-encodes to its bytes");
        rest = &rest[rec.len()..];
    }
}

/// Index files: the header and the valid prefix of entries.
pub fn check_index(data: &[u8]) {
    if let Ok(h) = FileHeader::decode(data, INDEX_MAGIC) {
        assert_eq!(&h.encode(INDEX_MAGIC)[..], &data[..FILE_HEADER_LEN]);
    }
    let body = data.get(FILE_HEADER_LEN..).unwrap_or(data);
    let entries = record::decode_entries(body);
    assert!(entries.len() * INDEX_ENTRY_LEN <= body.len());
    for (i, e) in entries.iter().enumerate() {
        let at = i * INDEX_ENTRY_LEN;
        assert_eq!(
            e.encode(i as u32 + 1)[..],
            body[at..at + INDEX_ENTRY_LEN],
            "a decoded entry re-encodes to its bytes"
        );
    }
    let _ = IndexEntry::decode(data, 1);
}

pub fn check_position(data: &[u8]) {
    if let Ok(p) = Position::decode(data) {
        assert_eq!(&p.encode()[..], data);
    }
}

/// A resend snapshot's ask file and manifest (docs/formats.md "Resend snapshots"), read as
/// the owner and the reader read them: what parses encodes back to what parses the same.
pub fn check_snapshot_files(data: &[u8]) {
    use focuser_formats::snapshot::{Ask, Manifest};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = std::path::Path::new("fuzz");
    if let Ok(a) = Ask::parse(path, text) {
        assert_eq!(Ask::parse(path, &a.encode()).ok(), Some(a));
    }
    if let Ok(m) = Manifest::parse(path, text) {
        assert_eq!(Manifest::parse(path, &m.encode()).ok(), Some(m));
    }
}

/// The RECORDS payload carrying `batch`'s items as stored records: a good input for the
/// decoders' tests and the fuzzer's seeds.
pub fn records_payload(batch: &crate::wire::Batch) -> Vec<u8> {
    let mut out = crate::wire::batch::batch_fixed(batch.upto, batch.items.len() as u32).to_vec();
    for w in &batch.items {
        record::encode_record(&w.item.as_ref(), w.at.file_id, w.at.item_idx, &mut out);
    }
    out
}

/// A byte stream of frames, each payload through its decoder.
pub fn check_frames(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some((f, used))) = decode_frame(rest, 1 << 20) {
        assert!(used <= rest.len());
        match f.kind {
            FrameType::Hello => {
                if let Ok(h) = Hello::decode(&f.payload) {
                    assert_eq!(h.encode(), f.payload);
                }
            }
            FrameType::Welcome => {
                if let Ok(w) = Welcome::decode(&f.payload) {
                    assert_eq!(w.encode(), f.payload);
                }
            }
            FrameType::Items => {
                if let Ok(b) = BatchRef::decode(&f.payload) {
                    let mut again = Vec::new();
                    b.encode_into(&mut again);
                    assert_eq!(again, f.payload);
                }
            }
            FrameType::Records => {
                // `decode_frame` checked the frame's CRC: this is the CRC it carried.
                let head = Unchecked {
                    kind: f.kind as u8,
                    crc: crc::append(crc::crc32c(&[f.kind as u8]), &f.payload),
                };
                let mut body_crcs = Vec::new();
                if let Ok(b) = BatchRef::decode_records_checked(&f.payload, head, &mut body_crcs) {
                    assert_eq!(b.items.len(), body_crcs.len());
                    for (w, c) in b.items.iter().zip(&body_crcs) {
                        let i = &w.item;
                        let body = [i.doc_id, i.url, i.content].concat();
                        assert_eq!(crc::crc32c(&body), *c);
                    }
                }
            }
            FrameType::Error => {
                let _ = ErrorMsg::decode(&f.payload);
            }
            FrameType::FileBegin => {
                if let Ok(b) = FileBegin::decode(&f.payload) {
                    assert_eq!(b.encode(), f.payload);
                    let _ = crate::wire::check_file_name(&b.name);
                }
            }
            _ => {}
        }
        rest = &rest[used..];
    }
}

/// A sealed segment read whole, as the senders, `reader stat` and `reader dump` read it:
/// `data` is the index file's length (u16, little-endian), the index file, then the item file
/// (`segment_input` makes one). Whatever the bytes: no panic, a cursor reads every item it
/// can, reports damage and comes to the end; the damage it skips is counted.
pub fn check_segment(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let (index, item) = rest.split_at(usize::from(u16::from_le_bytes(*len)).min(rest.len()));
    let Ok(dir) = Scratch::new() else {
        return;
    };
    let empty = FileHeader {
        file_id: 2,
        created_ms: 0,
    };
    // Segment 2, empty and whole, seals segment 1.
    let files = [
        (item_path(&dir.0, 1), item),
        (index_path(&dir.0, 1), index),
        (item_path(&dir.0, 2), &empty.encode(ITEM_MAGIC)[..]),
        (index_path(&dir.0, 2), &empty.encode(INDEX_MAGIC)[..]),
    ];
    for (p, b) in &files {
        if std::fs::write(p, b).is_err() {
            return;
        }
    }
    let _ = crate::tools::dump(&files[0].0, &mut std::io::sink());
    let _ = crate::tools::dump(&files[1].0, &mut std::io::sink());
    let all = Partition { count: 1, index: 0 };
    let lag = crate::sender::lag::lag(&dir.0, Position::START, all);
    let mut cursor = Cursor::new(&dir.0, Position::START, None);
    // Items read, and items the index has whose records do not check.
    let (mut read, mut corrupt) = (0u64, 0u64);
    for _ in 0..=item.len() + 2 {
        match cursor.next() {
            Ok(Some(s)) => {
                assert_eq!(s.file_id, 1, "segment 2 is empty");
                read += 1;
            }
            Ok(None) => {
                assert_eq!(cursor.position().file_id, 2, "the cursor reached the end");
                if let Ok(lag) = lag {
                    assert_eq!(lag.items, read + corrupt, "lag counts what a reader meets");
                }
                return;
            }
            Err(e) => {
                assert!(e.is_damage(), "{e}");
                corrupt += u64::from(matches!(e, SegmentError::Corrupt { .. }));
            }
        }
    }
    panic!("the cursor never came to the end of the segment");
}

/// The input [`check_segment`] takes for an index file and an item file.
pub fn segment_input(index: &[u8], item: &[u8]) -> Vec<u8> {
    let mut out = (index.len().min(usize::from(u16::MAX)) as u16)
        .to_le_bytes()
        .to_vec();
    out.extend_from_slice(index);
    out.extend_from_slice(item);
    out
}

/// A directory of its own under the temporary directory (a tmpfs if there is one), removed
/// when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let shm = std::path::Path::new("/dev/shm");
        let base = match shm.is_dir() {
            true => shm.to_path_buf(),
            false => std::env::temp_dir(),
        };
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!(".focuser-segment-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
