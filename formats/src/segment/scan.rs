//! Reading an item file record by record: how recovery finds the torn tail and how an index
//! that is behind is rebuilt.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use super::crc;
use super::record::{self, IndexEntry, RecordHeader, RECORD_HEADER_LEN};
use super::SegmentError;

/// The valid records from where the scan started.
pub(crate) struct Scanned {
    /// Entries of the valid records, in order (appended to what the caller passed in).
    pub entries: Vec<IndexEntry>,
    /// Where the valid records end.
    pub end: u64,
    /// Why the scan stopped before the end of the file, if it did.
    pub stopped: Option<&'static str>,
}

/// Scans `file` (segment `file_id`, `len` bytes) from `offset`, where item `entries.len() + 1`
/// starts, to the end or the first record that is torn or does not belong.
pub(crate) fn scan_items(
    file: &File,
    path: &Path,
    file_id: u64,
    len: u64,
    offset: u64,
    mut entries: Vec<IndexEntry>,
) -> Result<Scanned, SegmentError> {
    let mut r = BufReader::with_capacity(1 << 20, file);
    r.seek(SeekFrom::Start(offset))
        .map_err(SegmentError::io(path))?;
    let mut pos = offset;
    let mut buf = Vec::new();
    let stopped = loop {
        if pos == len {
            break None;
        }
        if len - pos < RECORD_HEADER_LEN as u64 {
            break Some("torn record header");
        }
        buf.resize(RECORD_HEADER_LEN, 0);
        r.read_exact(&mut buf).map_err(SegmentError::io(path))?;
        let h = match RecordHeader::decode(&buf) {
            Ok(h) => h,
            Err(reason) => break Some(reason),
        };
        let idx = entries.len() as u64 + 1;
        if h.file_id != file_id || h.item_idx as u64 != idx {
            break Some("record of another segment or out of order");
        }
        if len - pos < h.len as u64 {
            break Some("torn record");
        }
        buf.resize(h.len as usize, 0);
        r.read_exact(&mut buf[RECORD_HEADER_LEN..])
            .map_err(SegmentError::io(path))?;
        if crc::crc32c(&buf[8..]) != h.crc {
            break Some("record CRC mismatch");
        }
        let d = RECORD_HEADER_LEN + h.doc_id_len as usize;
        entries.push(IndexEntry {
            offset: pos,
            doc_hash: record::doc_hash(&buf[RECORD_HEADER_LEN..d]),
        });
        pos += h.len as u64;
    };
    Ok(Scanned {
        entries,
        end: pos,
        stopped,
    })
}
