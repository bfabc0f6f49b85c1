//! Reading a segment while its writer appends: follow its index, and once the next segment
//! exists (the seal is then done) make sure the index covers the item file. The cursor that
//! reads a whole store is in [`super::cursor`].

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::crc;
use super::record::{
    FileHeader, IndexEntry, RecordHeader, FILE_HEADER_LEN, INDEX_ENTRY_LEN, INDEX_MAGIC,
    ITEM_MAGIC, RECORD_HEADER_LEN,
};
use super::scan::scan_items;
use super::{index_path, item_path, list_segments, Item, SegmentError, StoredItem};

/// Receiver `index` of a group of `count`: the items whose `doc_hash % count == index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    pub count: u32,
    pub index: u32,
}

impl Partition {
    pub fn wants(&self, doc_hash: u32) -> bool {
        self.count <= 1 || doc_hash % self.count == self.index
    }
}

/// The items of one segment that a reader may read, found through its index.
pub struct SegmentIndex {
    file_id: u64,
    item_path: PathBuf,
    item: File,
    index: Option<File>,
    entries: Vec<IndexEntry>,
    /// Bytes of the index file taken in so far.
    index_read: u64,
    sealed: bool,
    /// The index did not cover the sealed item file and was completed by a scan.
    pub rebuilt: bool,
    /// The sealed item file ends in damage: not yet reported.
    damage: Option<SegmentError>,
}

impl SegmentIndex {
    /// Opens segment `file_id` of `dir`; None if its item file does not exist.
    pub fn open(dir: &Path, file_id: u64) -> Result<Option<SegmentIndex>, SegmentError> {
        let item_path = item_path(dir, file_id);
        let mut item = match File::open(&item_path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(SegmentError::io(&item_path)(e)),
        };
        let mut head = [0u8; FILE_HEADER_LEN];
        match item.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(SegmentError::BadHeader {
                    path: item_path,
                    reason: "shorter than its header",
                })
            }
            Err(e) => return Err(SegmentError::io(&item_path)(e)),
        }
        match FileHeader::decode(&head, ITEM_MAGIC) {
            Ok(h) if h.file_id == file_id => {}
            Ok(_) => {
                return Err(SegmentError::BadHeader {
                    path: item_path,
                    reason: "file id disagrees with the name",
                })
            }
            Err(reason) => {
                return Err(SegmentError::BadHeader {
                    path: item_path,
                    reason,
                })
            }
        }
        let mut seg = SegmentIndex {
            file_id,
            item_path,
            item,
            index: None,
            entries: Vec::new(),
            index_read: 0,
            sealed: false,
            rebuilt: false,
            damage: None,
        };
        seg.refresh(dir)?;
        Ok(Some(seg))
    }

    /// Takes in index entries written since the last look; once the segment is sealed, makes
    /// sure the index covers the whole item file, scanning it if not.
    pub fn refresh(&mut self, dir: &Path) -> Result<(), SegmentError> {
        if self.sealed {
            return Ok(());
        }
        // Looked at before reading the index: if the next segment exists now, every entry
        // of this one is already written.
        let sealed = item_path(dir, self.file_id + 1).exists()
            || list_segments(dir)?.iter().any(|&id| id > self.file_id);
        self.read_new_entries(dir)?;
        if sealed {
            self.sealed = true;
            self.index = None;
            self.check_sealed()?;
        }
        Ok(())
    }

    /// Once sealed, the index must cover the item file, no less and no more. Entries whose
    /// records are not whole in the file (it was cut short) are dropped; records the index
    /// lacks (it was behind) are found by a scan. What can be read of neither is the damaged
    /// tail, kept for [`SegmentIndex::take_damage`].
    fn check_sealed(&mut self) -> Result<(), SegmentError> {
        let len = self.item_len()?;
        let header_fits = |e: &IndexEntry| {
            e.offset
                .checked_add(RECORD_HEADER_LEN as u64)
                .is_some_and(|end| end <= len)
        };
        let mut whole = self.entries.partition_point(header_fits);
        let mut end = FILE_HEADER_LEN as u64;
        while let Some(k) = whole.checked_sub(1) {
            match self.record_end(self.entries[k].offset, len) {
                Some(e) => {
                    end = e;
                    break;
                }
                None => whole = k,
            }
        }
        let dropped = self.entries.len() - whole;
        self.entries.truncate(whole);
        let (mut found, mut stopped) = (0, None);
        if end < len {
            let scanned = scan_items(
                &self.item,
                &self.item_path,
                self.file_id,
                len,
                end,
                std::mem::take(&mut self.entries),
            )?;
            self.entries = scanned.entries;
            found = self.entries.len() - whole;
            (end, stopped) = (scanned.end, scanned.stopped);
            self.rebuilt = found > 0;
        }
        let lost = dropped.saturating_sub(found);
        if lost > 0 || stopped.is_some() {
            self.damage = Some(SegmentError::DamagedTail {
                path: self.item_path.clone(),
                item_idx: self.entries.len() as u32 + 1,
                offset: end,
                items: lost.max(1) as u32,
                reason: stopped.unwrap_or("the item file ends before its indexed records"),
            });
        }
        Ok(())
    }

    /// The damage found at the end of this sealed segment, once.
    pub fn take_damage(&mut self) -> Option<SegmentError> {
        self.damage.take()
    }

    /// The damage found at the end of this sealed segment, if any.
    pub fn damage(&self) -> Option<&SegmentError> {
        self.damage.as_ref()
    }

    fn read_new_entries(&mut self, dir: &Path) -> Result<(), SegmentError> {
        let xpath = index_path(dir, self.file_id);
        let before = self.entries.len();
        self.take_in(&xpath)?;
        if self.entries.len() == before && self.index_replaced(&xpath) {
            // The writer's recovery rewrote the index under a new inode (an index that was
            // behind after a crash): what it appends from now on goes there, so read it anew.
            self.index = None;
            self.index_read = 0;
            self.take_in(&xpath)?;
        }
        Ok(())
    }

    /// Whether the index file at `xpath` is no longer the one this reader has open.
    fn index_replaced(&self, xpath: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Some(f) = self.index.as_ref() else {
            return false;
        };
        match (f.metadata(), std::fs::metadata(xpath)) {
            (Ok(open), Ok(now)) => (open.dev(), open.ino()) != (now.dev(), now.ino()),
            _ => false,
        }
    }

    /// Takes in the index entries past `index_read`. Entries this reader already has (when
    /// a rewritten index is read anew) must be the same ones; the first that is not ends it.
    fn take_in(&mut self, xpath: &Path) -> Result<(), SegmentError> {
        if self.index.is_none() {
            match File::open(xpath) {
                Ok(f) => self.index = Some(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(SegmentError::io(xpath)(e)),
            }
        }
        let Some(f) = self.index.as_mut() else {
            return Ok(());
        };
        if self.index_read == 0 {
            let mut head = [0u8; FILE_HEADER_LEN];
            if f.read_exact(&mut head).is_err() {
                // Empty or short: nothing to take in yet (a sealed one is rebuilt).
                f.seek(SeekFrom::Start(0))
                    .map_err(SegmentError::io(xpath))?;
                return Ok(());
            }
            match FileHeader::decode(&head, INDEX_MAGIC) {
                Ok(h) if h.file_id == self.file_id => self.index_read = FILE_HEADER_LEN as u64,
                _ => {
                    // A damaged index is ignored; the seal's check rebuilds it.
                    f.seek(SeekFrom::Start(0))
                        .map_err(SegmentError::io(xpath))?;
                    return Ok(());
                }
            }
        }
        f.seek(SeekFrom::Start(self.index_read))
            .map_err(SegmentError::io(xpath))?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map_err(SegmentError::io(xpath))?;
        for chunk in bytes.chunks_exact(INDEX_ENTRY_LEN) {
            let k = (self.index_read - FILE_HEADER_LEN as u64) as usize / INDEX_ENTRY_LEN;
            let Ok(e) = IndexEntry::decode(chunk, k as u32 + 1) else {
                break;
            };
            match self.entries.get(k) {
                Some(known) if *known == e => {}
                Some(_) => break,
                None if self.entries.last().is_none_or(|l| e.offset > l.offset) => {
                    self.entries.push(e)
                }
                None => break,
            }
            self.index_read += INDEX_ENTRY_LEN as u64;
        }
        Ok(())
    }

    fn item_len(&self) -> Result<u64, SegmentError> {
        Ok(self
            .item
            .metadata()
            .map_err(SegmentError::io(&self.item_path))?
            .len())
    }

    /// Where the record at `offset` ends, if it is whole in the first `len` bytes.
    fn record_end(&self, offset: u64, len: u64) -> Option<u64> {
        let mut head = [0u8; RECORD_HEADER_LEN];
        self.item.read_exact_at(&mut head, offset).ok()?;
        let h = RecordHeader::decode(&head).ok()?;
        offset
            .checked_add(u64::from(h.len))
            .filter(|&end| end <= len)
    }

    pub fn file_id(&self) -> u64 {
        self.file_id
    }

    /// The item file, where [`Located`] records lie.
    pub(super) fn item_file(&self) -> &File {
        &self.item
    }

    pub fn sealed(&self) -> bool {
        self.sealed
    }

    /// Items readable now.
    pub fn len(&self) -> u32 {
        self.entries.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn doc_hash(&self, item_idx: u32) -> Option<u32> {
        let k = (item_idx as usize).checked_sub(1)?;
        self.entries.get(k).map(|e| e.doc_hash)
    }

    fn corrupt(&self, item_idx: u32, offset: u64, reason: &'static str) -> SegmentError {
        SegmentError::Corrupt {
            path: self.item_path.clone(),
            item_idx,
            offset,
            reason,
        }
    }

    /// Where item `item_idx`'s record starts, and where it ends when the index says so (the
    /// next entry's offset; None for the last item the index has).
    pub fn span(&self, item_idx: u32) -> Option<(u64, Option<u64>)> {
        let k = (item_idx as usize).checked_sub(1)?;
        let start = self.entries.get(k)?.offset;
        Some((start, self.entries.get(k + 1).map(|e| e.offset)))
    }

    /// Reads `buf.len()` bytes of the item file from `offset` (records as they are stored).
    pub fn read_stored(
        &self,
        buf: &mut [u8],
        offset: u64,
        item_idx: u32,
    ) -> Result<(), SegmentError> {
        self.item
            .read_exact_at(buf, offset)
            .map_err(|_| self.corrupt(item_idx, offset, "record beyond the end of the file"))
    }

    /// A record at `offset` that is not what the index says it is: an error naming it.
    pub fn misplaced(&self, item_idx: u32, offset: u64, reason: &'static str) -> SegmentError {
        self.corrupt(item_idx, offset, reason)
    }

    /// Reads the header of item `item_idx` (from 1) and checks its place.
    pub fn header(&self, item_idx: u32) -> Result<Located, SegmentError> {
        let k = (item_idx as usize)
            .checked_sub(1)
            .filter(|&k| k < self.entries.len())
            .ok_or_else(|| self.corrupt(item_idx, 0, "no such item"))?;
        let offset = self.entries[k].offset;
        let mut head = [0u8; RECORD_HEADER_LEN];
        self.item
            .read_exact_at(&mut head, offset)
            .map_err(|_| self.corrupt(item_idx, offset, "record beyond the end of the file"))?;
        let h = RecordHeader::decode(&head).map_err(|r| self.corrupt(item_idx, offset, r))?;
        if h.file_id != self.file_id || h.item_idx != item_idx {
            return Err(self.corrupt(item_idx, offset, "record of another place"));
        }
        Ok(Located {
            header: h,
            offset,
            head_crc: crc::crc32c(&head[8..]),
        })
    }

    /// Appends the record's doc id, url and content (in that order) to `out`, checking the
    /// record's CRC; returns the CRC-32C of the appended bytes. On error `out` is as it was.
    pub fn read_body(&self, at: &Located, out: &mut Vec<u8>) -> Result<u32, SegmentError> {
        let (h, offset) = (&at.header, at.offset);
        let start = out.len();
        let len = h.len as usize - RECORD_HEADER_LEN;
        out.resize(start + len, 0);
        let body = &mut out[start..];
        let read = self
            .item
            .read_exact_at(body, offset + RECORD_HEADER_LEN as u64);
        // One pass over the body: the record's CRC (its header from byte 8, then the body)
        // is combined from the body's, which the caller may reuse (a frame's CRC).
        let body_crc = crc::crc32c(body);
        let crc = super::crc::combine(at.head_crc, body_crc, len as u64);
        if read.is_err() || crc != h.crc {
            out.truncate(start);
            let reason = if read.is_err() {
                "record beyond the end of the file"
            } else {
                "record CRC mismatch"
            };
            return Err(self.corrupt(h.item_idx, offset, reason));
        }
        Ok(body_crc)
    }

    /// Reads item `item_idx` (from 1), checking its CRC and its place.
    pub fn read(&self, item_idx: u32) -> Result<StoredItem, SegmentError> {
        let at = self.header(item_idx)?;
        let h = at.header;
        let mut ids = Vec::with_capacity(h.len as usize - RECORD_HEADER_LEN);
        self.read_body(&at, &mut ids)?;
        let content = ids.split_off(h.doc_id_len as usize + h.url_len as usize);
        let url = ids.split_off(h.doc_id_len as usize);
        let item = Item {
            status: h.status,
            doc_id: ids,
            url,
            content,
            time_ms: h.time_ms,
            origin: h.origin,
        };
        Ok(StoredItem {
            file_id: self.file_id,
            item_idx,
            doc_hash: self.doc_hash(item_idx).unwrap_or(0),
            item,
        })
    }
}

/// A record's header, where it is, and the CRC-32C of its bytes 8..56 (the record's CRC up
/// to its body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    pub header: RecordHeader,
    pub offset: u64,
    pub head_crc: u32,
}
