//! Reading a store while its writer appends: follow the index of each segment, move on once
//! the next segment exists (the seal is then done), skip other partitions by the index's hash.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::record::{
    FileHeader, IndexEntry, RecordHeader, FILE_HEADER_LEN, INDEX_ENTRY_LEN, INDEX_MAGIC,
    ITEM_MAGIC, RECORD_HEADER_LEN,
};
use super::scan::scan_items;
use super::{index_path, item_path, list_segments, Item, Position, SegmentError, StoredItem};

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
        item.read_exact(&mut head)
            .map_err(SegmentError::io(&item_path))?;
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
            if !self.covers_item_file()? {
                let len = self.item_len()?;
                let start = match self.entries.last() {
                    Some(e) => e.offset + self.record_len_at(e.offset)?,
                    None => FILE_HEADER_LEN as u64,
                };
                let scanned = scan_items(
                    &self.item,
                    &self.item_path,
                    self.file_id,
                    len,
                    start,
                    std::mem::take(&mut self.entries),
                )?;
                self.entries = scanned.entries;
                self.rebuilt = true;
            }
        }
        Ok(())
    }

    fn read_new_entries(&mut self, dir: &Path) -> Result<(), SegmentError> {
        let xpath = index_path(dir, self.file_id);
        if self.index.is_none() {
            match File::open(&xpath) {
                Ok(f) => self.index = Some(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(SegmentError::io(&xpath)(e)),
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
                    .map_err(SegmentError::io(&xpath))?;
                return Ok(());
            }
            match FileHeader::decode(&head, INDEX_MAGIC) {
                Ok(h) if h.file_id == self.file_id => self.index_read = FILE_HEADER_LEN as u64,
                _ => {
                    // A damaged index is ignored; the seal's check rebuilds it.
                    f.seek(SeekFrom::Start(0))
                        .map_err(SegmentError::io(&xpath))?;
                    return Ok(());
                }
            }
        }
        f.seek(SeekFrom::Start(self.index_read))
            .map_err(SegmentError::io(&xpath))?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)
            .map_err(SegmentError::io(&xpath))?;
        for chunk in bytes.chunks_exact(INDEX_ENTRY_LEN) {
            let idx = self.entries.len() as u32 + 1;
            match IndexEntry::decode(chunk, idx) {
                Ok(e) if self.entries.last().is_none_or(|l| e.offset > l.offset) => {
                    self.entries.push(e);
                    self.index_read += INDEX_ENTRY_LEN as u64;
                }
                _ => break,
            }
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

    fn record_len_at(&self, offset: u64) -> Result<u64, SegmentError> {
        let mut head = [0u8; RECORD_HEADER_LEN];
        if self.item.read_exact_at(&mut head, offset).is_err() {
            return Ok(u64::MAX);
        }
        Ok(RecordHeader::decode(&head)
            .map(|h| h.len as u64)
            .unwrap_or(u64::MAX))
    }

    fn covers_item_file(&self) -> Result<bool, SegmentError> {
        let len = self.item_len()?;
        Ok(match self.entries.last() {
            None => len == FILE_HEADER_LEN as u64,
            Some(e) => e.offset.checked_add(self.record_len_at(e.offset)?) == Some(len),
        })
    }

    pub fn file_id(&self) -> u64 {
        self.file_id
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

    /// Reads item `item_idx` (from 1), checking its CRC and its place.
    pub fn read(&self, item_idx: u32) -> Result<StoredItem, SegmentError> {
        let corrupt = |offset, reason| SegmentError::Corrupt {
            path: self.item_path.clone(),
            item_idx,
            offset,
            reason,
        };
        let k = (item_idx as usize)
            .checked_sub(1)
            .filter(|&k| k < self.entries.len())
            .ok_or(corrupt(0, "no such item"))?;
        let e = self.entries[k];
        let beyond = |_| corrupt(e.offset, "record beyond the end of the file");
        let mut head = [0u8; RECORD_HEADER_LEN];
        self.item
            .read_exact_at(&mut head, e.offset)
            .map_err(beyond)?;
        let h = RecordHeader::decode(&head).map_err(|r| corrupt(e.offset, r))?;
        if h.file_id != self.file_id || h.item_idx != item_idx {
            return Err(corrupt(e.offset, "record of another place"));
        }
        // Straight into the item's own buffers: no copy after the read.
        let mut ids = vec![0u8; h.doc_id_len as usize + h.url_len as usize];
        let mut content = vec![0u8; h.content_len as usize];
        let at = e.offset + RECORD_HEADER_LEN as u64;
        self.item.read_exact_at(&mut ids, at).map_err(beyond)?;
        self.item
            .read_exact_at(&mut content, at + ids.len() as u64)
            .map_err(beyond)?;
        let crc = crc32c::crc32c_append(
            crc32c::crc32c_append(crc32c::crc32c(&head[8..]), &ids),
            &content,
        );
        if crc != h.crc {
            return Err(corrupt(e.offset, "record CRC mismatch"));
        }
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
            doc_hash: e.doc_hash,
            item,
        })
    }
}

/// Reads a store in order from a position, optionally one partition only.
pub struct Cursor {
    dir: PathBuf,
    pos: Position,
    partition: Option<Partition>,
    seg: Option<SegmentIndex>,
    /// Set when the cursor had to jump over segments that no longer exist.
    gap: Option<(Position, Position)>,
}

impl Cursor {
    /// `from` is the next item to read; [`Position::START`] means the oldest segment.
    pub fn new(dir: &Path, from: Position, partition: Option<Partition>) -> Cursor {
        Cursor {
            dir: dir.to_path_buf(),
            pos: from,
            partition,
            seg: None,
            gap: None,
        }
    }

    /// The next item this cursor would read.
    pub fn position(&self) -> Position {
        self.pos
    }

    /// Where the cursor jumped because the segments it needed were gone (deleted past
    /// `Store.MaxBytes`), once.
    pub fn take_gap(&mut self) -> Option<(Position, Position)> {
        self.gap.take()
    }

    /// The next durable item of the partition; Ok(None) when there is none yet. A corrupt
    /// record is returned as an error and skipped: the next call goes on after it.
    #[allow(clippy::should_implement_trait)] // fallible, and None means "not yet", not "done"
    pub fn next(&mut self) -> Result<Option<StoredItem>, SegmentError> {
        loop {
            let need_open = self
                .seg
                .as_ref()
                .is_none_or(|s| s.file_id() != self.pos.file_id);
            if need_open {
                self.seg = SegmentIndex::open(&self.dir, self.pos.file_id)?;
                if self.seg.is_none() {
                    // Gone or not yet written: go to the first segment after the position.
                    let Some(&next) = list_segments(&self.dir)?
                        .iter()
                        .find(|&&id| id > self.pos.file_id)
                    else {
                        return Ok(None);
                    };
                    let to = Position {
                        file_id: next,
                        item_idx: 1,
                    };
                    if self.pos.file_id != 0 {
                        self.gap = Some((self.pos, to));
                    }
                    self.pos = to;
                    continue;
                }
            }
            let Some(seg) = self.seg.as_mut() else {
                return Ok(None);
            };
            if self.pos.item_idx > seg.len() {
                seg.refresh(&self.dir)?;
            }
            if self.pos.item_idx == 0 {
                self.pos.item_idx = 1;
            }
            let idx = self.pos.item_idx;
            if idx > seg.len() {
                if seg.sealed() {
                    self.pos = Position {
                        file_id: self.pos.file_id + 1,
                        item_idx: 1,
                    };
                    continue;
                }
                return Ok(None);
            }
            let wanted = match (self.partition, seg.doc_hash(idx)) {
                (Some(p), Some(h)) => p.wants(h),
                _ => true,
            };
            self.pos.item_idx += 1;
            if wanted {
                return seg.read(idx).map(Some);
            }
        }
    }
}
