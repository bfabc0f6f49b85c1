//! Opening a store: the active segment as a crash or a failure left it, made whole again
//! (a torn tail cut, an index that does not match rewritten), and the files of a new segment.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use super::record::{
    self, FileHeader, IndexEntry, FILE_HEADER_LEN, INDEX_ENTRY_LEN, INDEX_MAGIC, ITEM_MAGIC,
};
use super::scan::scan_items;
use super::{index_path, item_path, now_ms, SegmentError};
use crate::fsutil;

/// What opening the store found and repaired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    pub file_id: u64,
    /// Items in the active segment after recovery.
    pub items: u32,
    /// Bytes of a torn tail cut off the active item file, and why the first of them was bad.
    pub cut_bytes: u64,
    pub cut_reason: Option<&'static str>,
    /// The active index was missing, behind, ahead or damaged and was rewritten.
    pub index_rebuilt: bool,
    /// The last segment's item file had a bad header (short, wrong magic, CRC, file id): it
    /// was left as it is, for readers to report and skip, and a new segment was opened.
    pub left_behind: Option<String>,
}

/// The active segment as recovery leaves it.
pub(super) struct Active {
    pub file_id: u64,
    pub created_ms: u64,
    pub item: File,
    pub index: File,
    pub item_len: u64,
    pub items: u32,
}

/// Cuts a torn tail off the active segment and rebuilds its index if it does not match.
pub(super) fn recover_active(dir: &Path, file_id: u64) -> Result<(Active, Recovery), SegmentError> {
    let ipath = item_path(dir, file_id);
    let item = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&ipath)
        .map_err(SegmentError::io(&ipath))?;
    let mut head = Vec::with_capacity(FILE_HEADER_LEN);
    (&item)
        .take(FILE_HEADER_LEN as u64)
        .read_to_end(&mut head)
        .map_err(SegmentError::io(&ipath))?;
    let header = FileHeader::decode(&head, ITEM_MAGIC)
        .and_then(|h| match h.file_id == file_id {
            true => Ok(h),
            false => Err("file id disagrees with the name"),
        })
        .map_err(|reason| SegmentError::BadHeader {
            path: ipath.clone(),
            reason,
        })?;
    let len = item.metadata().map_err(SegmentError::io(&ipath))?.len();
    let scanned = scan_items(
        &item,
        &ipath,
        file_id,
        len,
        FILE_HEADER_LEN as u64,
        Vec::new(),
    )?;
    let mut rec = Recovery {
        file_id,
        items: scanned.entries.len() as u32,
        ..Recovery::default()
    };
    if scanned.end < len {
        rec.cut_bytes = len - scanned.end;
        rec.cut_reason = scanned.stopped;
        item.set_len(scanned.end)
            .map_err(SegmentError::io(&ipath))?;
    }
    // What survived the crash becomes durable before the index makes it visible.
    item.sync_all().map_err(SegmentError::io(&ipath))?;
    let xpath = index_path(dir, file_id);
    if read_index(&xpath, file_id).as_deref() != Some(&scanned.entries[..]) {
        rec.index_rebuilt = true;
        write_index(&xpath, &header, &scanned.entries)?;
    }
    let mut index = OpenOptions::new()
        .append(true)
        .open(&xpath)
        .map_err(SegmentError::io(&xpath))?;
    index.flush().map_err(SegmentError::io(&xpath))?;
    let item = OpenOptions::new()
        .append(true)
        .open(&ipath)
        .map_err(SegmentError::io(&ipath))?;
    Ok((
        Active {
            file_id,
            created_ms: header.created_ms,
            item,
            index,
            item_len: scanned.end,
            items: rec.items,
        },
        rec,
    ))
}

/// Creates the empty pair of `header`: the index first, so that whoever sees the item file
/// also finds its index.
pub(super) fn create_segment(dir: &Path, header: &FileHeader) -> Result<(), SegmentError> {
    write_index(&index_path(dir, header.file_id), header, &[])?;
    let ipath = item_path(dir, header.file_id);
    fsutil::write_atomically(&ipath, |w| w.write_all(&header.encode(ITEM_MAGIC)))
        .map_err(SegmentError::io(&ipath))
}

/// The header of a segment opened now.
pub(super) fn fresh_header(file_id: u64) -> FileHeader {
    FileHeader {
        file_id,
        created_ms: now_ms(),
    }
}

/// The length of an index file of `items` entries.
pub(super) fn index_len(items: u32) -> u64 {
    (FILE_HEADER_LEN + items as usize * INDEX_ENTRY_LEN) as u64
}

/// Writes an index file whole, atomically.
fn write_index(
    path: &Path,
    header: &FileHeader,
    entries: &[IndexEntry],
) -> Result<(), SegmentError> {
    fsutil::write_atomically(path, |w| {
        w.write_all(&header.encode(INDEX_MAGIC))?;
        for (i, e) in entries.iter().enumerate() {
            w.write_all(&e.encode(i as u32 + 1))?;
        }
        Ok(())
    })
    .map_err(SegmentError::io(path))
}

/// The entries of an index file that is whole and well-formed; None otherwise.
fn read_index(path: &Path, file_id: u64) -> Option<Vec<IndexEntry>> {
    let bytes = std::fs::read(path).ok()?;
    let header = FileHeader::decode(&bytes, INDEX_MAGIC).ok()?;
    let body = &bytes[FILE_HEADER_LEN..];
    if header.file_id != file_id || body.len() % INDEX_ENTRY_LEN != 0 {
        return None;
    }
    let entries = record::decode_entries(body);
    (entries.len() * INDEX_ENTRY_LEN == body.len()).then_some(entries)
}

/// Leftovers of a crash in the middle of publishing a file.
pub(super) fn remove_temporaries(dir: &Path) -> Result<(), SegmentError> {
    for entry in std::fs::read_dir(dir).map_err(SegmentError::io(dir))? {
        let entry = entry.map_err(SegmentError::io(dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(".dat.tmp") {
            let p = entry.path();
            std::fs::remove_file(&p).map_err(SegmentError::io(&p))?;
        }
    }
    Ok(())
}
