//! The item file's bytes: its header and its records (docs/formats.md, "Item/index segments").
//! Pure functions over byte slices, so the writer, the readers and the fuzzer share them.

use super::crc;
use super::{Item, ItemRef, Origin, Status};

/// First bytes of every item file.
pub const ITEM_MAGIC: &[u8; 8] = b"FCSRITEM";
/// First bytes of every index file.
pub const INDEX_MAGIC: &[u8; 8] = b"FCSRINDX";
pub const VERSION: u32 = 1;

/// Both files start with a header of this size.
pub const FILE_HEADER_LEN: usize = 32;
/// Every record starts with a header of this size.
pub const RECORD_HEADER_LEN: usize = 56;
/// No record may be longer (header included): a bound on what a reader allocates.
pub const MAX_RECORD_LEN: usize = 64 << 20;

/// The header both files of a segment start with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    pub file_id: u64,
    /// Milliseconds since the epoch when the segment was opened.
    pub created_ms: u64,
}

impl FileHeader {
    /// magic[8] version u32 file_id u64 created_ms u64 crc32c(bytes 0..28) u32, little-endian.
    pub fn encode(&self, magic: &[u8; 8]) -> [u8; FILE_HEADER_LEN] {
        let mut b = [0u8; FILE_HEADER_LEN];
        b[0..8].copy_from_slice(magic);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..20].copy_from_slice(&self.file_id.to_le_bytes());
        b[20..28].copy_from_slice(&self.created_ms.to_le_bytes());
        let crc = crc::crc32c(&b[0..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8], magic: &[u8; 8]) -> Result<FileHeader, &'static str> {
        if b.len() < FILE_HEADER_LEN {
            return Err("shorter than its header");
        }
        if &b[0..8] != magic {
            return Err("bad magic");
        }
        if crc::crc32c(&b[0..28]) != le32(&b[28..32]) {
            return Err("header CRC mismatch");
        }
        if le32(&b[8..12]) != VERSION {
            return Err("unknown format version");
        }
        Ok(FileHeader {
            file_id: le64(&b[12..20]),
            created_ms: le64(&b[20..28]),
        })
    }
}

/// A record's fixed header, decoded and checked for internal consistency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// The whole record's length, header included.
    pub len: u32,
    pub crc: u32,
    pub file_id: u64,
    pub item_idx: u32,
    pub status: Status,
    pub doc_id_len: u16,
    pub url_len: u32,
    pub content_len: u32,
    pub time_ms: u64,
    pub origin: Origin,
}

impl RecordHeader {
    /// Decodes and checks the 56 header bytes (not the CRC, which covers the body too).
    pub fn decode(b: &[u8]) -> Result<RecordHeader, &'static str> {
        if b.len() < RECORD_HEADER_LEN {
            return Err("short record header");
        }
        let h = RecordHeader {
            len: le32(&b[0..4]),
            crc: le32(&b[4..8]),
            file_id: le64(&b[8..16]),
            item_idx: le32(&b[16..20]),
            status: Status::from_byte(b[20]).ok_or("unknown status")?,
            doc_id_len: u16::from_le_bytes([b[22], b[23]]),
            url_len: le32(&b[24..28]),
            content_len: le32(&b[28..32]),
            time_ms: le64(&b[32..40]),
            origin: Origin {
                stream: le32(&b[40..44]),
                item_idx: le32(&b[44..48]),
                file_id: le64(&b[48..56]),
            },
        };
        if b[21] != 0 {
            return Err("unknown flags");
        }
        let body = h.doc_id_len as u64 + h.url_len as u64 + h.content_len as u64;
        if h.len as u64 != RECORD_HEADER_LEN as u64 + body {
            return Err("length disagrees with field lengths");
        }
        if h.len as usize > MAX_RECORD_LEN {
            return Err("record longer than the maximum");
        }
        if h.item_idx == 0 {
            return Err("item index 0");
        }
        Ok(h)
    }
}

/// The record's length for these field sizes, or None past [`MAX_RECORD_LEN`].
pub fn record_len(doc_id: usize, url: usize, content: usize) -> Option<usize> {
    let len = RECORD_HEADER_LEN
        .checked_add(doc_id)?
        .checked_add(url)?
        .checked_add(content)?;
    (len <= MAX_RECORD_LEN && doc_id <= u16::MAX as usize).then_some(len)
}

/// Appends the record for `item` (as item `item_idx` of segment `file_id`) to `out`.
/// The caller has checked the length with [`record_len`].
pub fn encode_record(item: &ItemRef<'_>, file_id: u64, item_idx: u32, out: &mut Vec<u8>) {
    let start = out.len();
    encode_header(item, file_id, item_idx, out);
    out.extend_from_slice(item.doc_id);
    out.extend_from_slice(item.url);
    out.extend_from_slice(item.content);
    let crc = crc::crc32c(&out[start + 8..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// [`encode_record`] for a caller that already has `body_crc`, the CRC-32C of doc id ‖ url ‖
/// content (a receiver, from checking the frame): the body is not gone over again.
pub fn encode_record_with_body_crc(
    item: &ItemRef<'_>,
    file_id: u64,
    item_idx: u32,
    body_crc: u32,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    encode_header(item, file_id, item_idx, out);
    let body_len = item.doc_id.len() + item.url.len() + item.content.len();
    let head_crc = crc::crc32c(&out[start + 8..]);
    let crc = super::crc::combine(head_crc, body_crc, body_len as u64);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(item.doc_id);
    out.extend_from_slice(item.url);
    out.extend_from_slice(item.content);
}

/// The 56 header bytes of `item`'s record, its CRC left 0.
fn encode_header(item: &ItemRef<'_>, file_id: u64, item_idx: u32, out: &mut Vec<u8>) {
    let len = RECORD_HEADER_LEN + item.doc_id.len() + item.url.len() + item.content.len();
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 4]); // the CRC, filled in below
    out.extend_from_slice(&file_id.to_le_bytes());
    out.extend_from_slice(&item_idx.to_le_bytes());
    out.push(item.status as u8);
    out.push(0);
    out.extend_from_slice(&(item.doc_id.len() as u16).to_le_bytes());
    out.extend_from_slice(&(item.url.len() as u32).to_le_bytes());
    out.extend_from_slice(&(item.content.len() as u32).to_le_bytes());
    out.extend_from_slice(&item.time_ms.to_le_bytes());
    out.extend_from_slice(&item.origin.stream.to_le_bytes());
    out.extend_from_slice(&item.origin.item_idx.to_le_bytes());
    out.extend_from_slice(&item.origin.file_id.to_le_bytes());
}

/// Decodes one whole record (`b` is exactly its bytes), checking the CRC.
pub fn decode_record(b: &[u8]) -> Result<(RecordHeader, Item), &'static str> {
    let h = RecordHeader::decode(b)?;
    if b.len() != h.len as usize {
        return Err("record length mismatch");
    }
    if crc::crc32c(&b[8..]) != h.crc {
        return Err("record CRC mismatch");
    }
    let d = RECORD_HEADER_LEN + h.doc_id_len as usize;
    let u = d + h.url_len as usize;
    Ok((
        h,
        Item {
            status: h.status,
            doc_id: b[RECORD_HEADER_LEN..d].to_vec(),
            url: b[d..u].to_vec(),
            content: b[u..].to_vec(),
            time_ms: h.time_ms,
            origin: h.origin,
        },
    ))
}

/// One index entry: where item k starts and its doc id's hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    pub offset: u64,
    pub doc_hash: u32,
}

pub const INDEX_ENTRY_LEN: usize = 16;

impl IndexEntry {
    /// offset u64, doc_hash u32, crc32c(offset ‖ doc_hash ‖ item_idx) u32: the item index in
    /// the CRC makes an entry written at the wrong place as bad as a zeroed one.
    pub fn encode(&self, item_idx: u32) -> [u8; INDEX_ENTRY_LEN] {
        let mut b = [0u8; INDEX_ENTRY_LEN];
        b[0..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..12].copy_from_slice(&self.doc_hash.to_le_bytes());
        let crc = entry_crc(&b[0..12], item_idx);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8], item_idx: u32) -> Result<IndexEntry, &'static str> {
        if b.len() < INDEX_ENTRY_LEN {
            return Err("short index entry");
        }
        if entry_crc(&b[0..12], item_idx) != le32(&b[12..16]) {
            return Err("index entry CRC mismatch");
        }
        Ok(IndexEntry {
            offset: le64(&b[0..8]),
            doc_hash: le32(&b[8..12]),
        })
    }
}

fn entry_crc(b: &[u8], item_idx: u32) -> u32 {
    crc::append(crc::crc32c(b), &item_idx.to_le_bytes())
}

/// Decodes the entries of an index file's bytes after its header: the valid prefix.
pub fn decode_entries(b: &[u8]) -> Vec<IndexEntry> {
    let mut out = Vec::with_capacity(b.len() / INDEX_ENTRY_LEN);
    for (i, chunk) in b.chunks_exact(INDEX_ENTRY_LEN).enumerate() {
        match IndexEntry::decode(chunk, i as u32 + 1) {
            Ok(e) => out.push(e),
            Err(_) => break,
        }
    }
    out
}

/// The partition hash of a doc id: CRC-32C of its bytes. A group of n receivers sends item
/// to receiver `doc_hash % n`.
pub fn doc_hash(doc_id: &[u8]) -> u32 {
    crc::crc32c(doc_id)
}

fn le32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item() -> Item {
        Item {
            status: Status::Update,
            doc_id: b"00000000deadbeef".to_vec(),
            url: b"http://example.com/a".to_vec(),
            content: b"<html>hello</html>".to_vec(),
            time_ms: 1_700_000_000_123,
            origin: Origin {
                stream: 3,
                file_id: 7,
                item_idx: 9,
            },
        }
    }

    #[test]
    fn a_record_round_trips_and_any_flipped_bit_is_caught() {
        let mut b = Vec::new();
        encode_record(&item().as_ref(), 5, 42, &mut b);
        let (h, back) = decode_record(&b).unwrap();
        assert_eq!((h.file_id, h.item_idx), (5, 42));
        assert_eq!(back, item());
        let i = item();
        let body = [&i.doc_id[..], &i.url, &i.content].concat();
        let mut same = Vec::new();
        encode_record_with_body_crc(&i.as_ref(), 5, 42, crc::crc32c(&body), &mut same);
        assert_eq!(same, b);
        for i in 0..b.len() {
            for bit in 0..8 {
                let mut bad = b.clone();
                bad[i] ^= 1 << bit;
                assert!(decode_record(&bad).is_err(), "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn headers_and_entries_round_trip_and_reject_zeroes() {
        let h = FileHeader {
            file_id: 12,
            created_ms: 99,
        };
        assert_eq!(FileHeader::decode(&h.encode(ITEM_MAGIC), ITEM_MAGIC), Ok(h));
        assert!(FileHeader::decode(&h.encode(ITEM_MAGIC), INDEX_MAGIC).is_err());
        assert!(FileHeader::decode(&[0u8; 32], ITEM_MAGIC).is_err());
        let e = IndexEntry {
            offset: 32,
            doc_hash: 0xabcd,
        };
        assert_eq!(IndexEntry::decode(&e.encode(3), 3), Ok(e));
        assert!(IndexEntry::decode(&e.encode(3), 4).is_err());
        assert!(IndexEntry::decode(&[0u8; 16], 1).is_err());
        let mut two = e.encode(1).to_vec();
        two.extend_from_slice(&[0u8; 16]);
        assert_eq!(decode_entries(&two), vec![e]);
    }
}
