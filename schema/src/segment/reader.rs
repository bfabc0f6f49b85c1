//! Reading a store while its writer appends: follow the index of each segment, move on once
//! the next segment exists (the seal is then done), skip other partitions by the index's hash.

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

    fn corrupt(&self, item_idx: u32, offset: u64, reason: &'static str) -> SegmentError {
        SegmentError::Corrupt {
            path: self.item_path.clone(),
            item_idx,
            offset,
            reason,
        }
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

/// What [`Cursor::next_raw`] is to do with the item whose header it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Take it: [`Cursor::next_raw`] reads its body into the buffer.
    Read,
    /// Go past it.
    Skip,
    /// Leave it for the next call.
    Stop,
}

/// An item whose body [`Cursor::next_raw`] appended to the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawItem {
    pub file_id: u64,
    pub item_idx: u32,
    pub header: RecordHeader,
    /// CRC-32C of the body bytes appended (doc id, url, content).
    pub body_crc: u32,
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

    /// Goes to the next durable item of the partition without taking it; Ok(None) when
    /// there is none yet.
    fn peek(&mut self) -> Result<Option<u32>, SegmentError> {
        loop {
            let need_open = self
                .seg
                .as_ref()
                .is_none_or(|s| s.file_id() != self.pos.file_id);
            if need_open {
                self.seg = match SegmentIndex::open(&self.dir, self.pos.file_id) {
                    Ok(s) => s,
                    Err(e @ SegmentError::BadHeader { .. }) => {
                        // A segment that cannot be read is reported once and left behind,
                        // if a later one exists; the active one is waited on.
                        let ids = list_segments(&self.dir)?;
                        if let Some(&next) = ids.iter().find(|&&id| id > self.pos.file_id) {
                            self.pos = Position {
                                file_id: next,
                                item_idx: 1,
                            };
                        }
                        return Err(e);
                    }
                    Err(e) => return Err(e),
                };
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
            if wanted {
                return Ok(Some(idx));
            }
            self.pos.item_idx += 1;
        }
    }

    /// The next durable item of the partition; Ok(None) when there is none yet. A corrupt
    /// record, or a sealed segment whose header is bad, is returned as an error and skipped:
    /// the next call goes on after it.
    #[allow(clippy::should_implement_trait)] // fallible, and None means "not yet", not "done"
    pub fn next(&mut self) -> Result<Option<StoredItem>, SegmentError> {
        let Some(idx) = self.peek()? else {
            return Ok(None);
        };
        self.pos.item_idx += 1;
        match self.seg.as_ref() {
            Some(seg) => seg.read(idx).map(Some),
            None => Ok(None),
        }
    }

    /// Like [`Cursor::next`], for a caller that builds its own bytes: `decide` sees each
    /// item's header first, and a body to read is appended to `out` rather than copied into
    /// an [`Item`]. Ok(None): nothing durable now, or `decide` said [`Take::Stop`].
    pub fn next_raw(
        &mut self,
        out: &mut Vec<u8>,
        decide: impl FnMut(&RecordHeader) -> Take,
    ) -> Result<Option<RawItem>, SegmentError> {
        let Some(at) = self.next_located(decide)? else {
            return Ok(None);
        };
        let Some(seg) = self.seg.as_ref() else {
            return Ok(None);
        };
        let body_crc = seg.read_body(&at, out)?;
        Ok(Some(RawItem {
            file_id: at.header.file_id,
            item_idx: at.header.item_idx,
            header: at.header,
            body_crc,
        }))
    }

    /// Like [`Cursor::next_raw`] without touching the body: the item taken is where its
    /// record lies in [`Cursor::item_file`], for a caller that ships records as they are
    /// (`sendfile`). Only the header is read and checked; the record's CRC is not.
    pub fn next_located(
        &mut self,
        mut decide: impl FnMut(&RecordHeader) -> Take,
    ) -> Result<Option<Located>, SegmentError> {
        loop {
            let Some(idx) = self.peek()? else {
                return Ok(None);
            };
            let Some(seg) = self.seg.as_ref() else {
                return Ok(None);
            };
            let at = match seg.header(idx) {
                Ok(x) => x,
                Err(e) => {
                    self.pos.item_idx += 1;
                    return Err(e);
                }
            };
            match decide(&at.header) {
                Take::Stop => return Ok(None),
                Take::Skip => self.pos.item_idx += 1,
                Take::Read => {
                    self.pos.item_idx += 1;
                    return Ok(Some(at));
                }
            }
        }
    }

    /// The item file of the segment the cursor is in: where the last [`Located`] lies.
    pub fn item_file(&self) -> Option<&File> {
        self.seg.as_ref().map(|s| &s.item)
    }
}
