//! The one writer of a segment store: append, batch fsync, rotation, recovery on open.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::record::{
    self, FileHeader, IndexEntry, FILE_HEADER_LEN, INDEX_ENTRY_LEN, INDEX_MAGIC, ITEM_MAGIC,
};
use super::scan::scan_items;
use super::{index_path, item_path, list_segments, now_ms, Item, ItemRef, Position, SegmentError};
use crate::fsutil;

/// When appended items are made durable (and visible to readers): after this many items or
/// this many milliseconds since the first unsynced one, whichever comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncPolicy {
    pub every_items: u32,
    pub every_ms: u64,
}

/// `Segment.*` keys: when the active segment is sealed and how often it is synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    /// Seal a segment this many seconds after it was opened (0: never by age).
    pub max_age_s: u64,
    pub max_items: u32,
    pub max_bytes: u64,
    pub sync: SyncPolicy,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            max_age_s: 300,
            max_items: 100_000,
            max_bytes: 256 << 20,
            sync: SyncPolicy {
                every_items: 1000,
                every_ms: 200,
            },
        }
    }
}

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

pub struct Writer {
    dir: PathBuf,
    opts: WriterOptions,
    _lock: File,
    file_id: u64,
    created_ms: u64,
    item: File,
    index: File,
    /// Bytes of the item file, including what is still in `buf`.
    item_len: u64,
    /// Encoded records not yet written to the item file.
    buf: Vec<u8>,
    /// Items in the active segment, synced or not.
    items: u32,
    /// Index entries of the items appended since the last sync.
    pending: Vec<IndexEntry>,
    first_unsynced: Option<Instant>,
}

const WRITE_CHUNK: usize = 1 << 20;

/// The active segment as recovery leaves it.
struct Active {
    file_id: u64,
    created_ms: u64,
    item: File,
    index: File,
    item_len: u64,
    items: u32,
}

impl Writer {
    /// Opens (creating if need be) the store in `dir` for appending, after recovering its
    /// active segment: a torn tail is cut off and an index that does not match is rebuilt.
    pub fn open(dir: &Path, opts: WriterOptions) -> Result<(Writer, Recovery), SegmentError> {
        std::fs::create_dir_all(dir).map_err(SegmentError::io(dir))?;
        let lock_path = dir.join(".writer.lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(SegmentError::io(&lock_path))?;
        lock.try_lock().map_err(|_| SegmentError::Io {
            path: lock_path.clone(),
            source: std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                "another writer has this segment store open",
            ),
        })?;
        remove_temporaries(dir)?;
        let file_id = match list_segments(dir)?.last() {
            Some(&id) => id,
            None => {
                create_segment(dir, 1)?;
                1
            }
        };
        let (active, rec) = match Self::recover_active(dir, file_id) {
            Err(e @ SegmentError::BadHeader { .. }) => {
                create_segment(dir, file_id + 1)?;
                let (active, mut rec) = Self::recover_active(dir, file_id + 1)?;
                rec.left_behind = Some(e.to_string());
                (active, rec)
            }
            r => r?,
        };
        Ok((Writer::new(dir, opts, lock, active), rec))
    }

    fn new(dir: &Path, opts: WriterOptions, lock: File, a: Active) -> Writer {
        Writer {
            dir: dir.to_path_buf(),
            opts,
            _lock: lock,
            file_id: a.file_id,
            created_ms: a.created_ms,
            item: a.item,
            index: a.index,
            item_len: a.item_len,
            buf: Vec::with_capacity(WRITE_CHUNK * 2),
            items: a.items,
            pending: Vec::new(),
            first_unsynced: None,
        }
    }

    /// Cuts a torn tail off the active segment and rebuilds its index if it does not match.
    fn recover_active(dir: &Path, file_id: u64) -> Result<(Active, Recovery), SegmentError> {
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

    /// Appends `item`; returns where it was put. It becomes durable and visible to readers at
    /// the next sync, which this call makes itself when the sync policy says so.
    pub fn append(&mut self, item: &Item) -> Result<Position, SegmentError> {
        self.append_ref(&item.as_ref())
    }

    /// [`Writer::append`] from borrowed fields.
    pub fn append_ref(&mut self, item: &ItemRef<'_>) -> Result<Position, SegmentError> {
        self.append_with(item, None)
    }

    /// [`Writer::append_ref`] for a caller that has the CRC-32C of doc id ‖ url ‖ content
    /// already (computed over the very bytes of `item`): the record's CRC is combined from it.
    pub fn append_with_body_crc(
        &mut self,
        item: &ItemRef<'_>,
        body_crc: u32,
    ) -> Result<Position, SegmentError> {
        self.append_with(item, Some(body_crc))
    }

    fn append_with(
        &mut self,
        item: &ItemRef<'_>,
        body_crc: Option<u32>,
    ) -> Result<Position, SegmentError> {
        let len = record::record_len(item.doc_id.len(), item.url.len(), item.content.len()).ok_or(
            SegmentError::TooLarge {
                doc_id: item.doc_id.len(),
                url: item.url.len(),
                content: item.content.len(),
            },
        )?;
        if self.items > 0
            && (self.items >= self.opts.max_items
                || self.item_len + len as u64 > self.opts.max_bytes)
        {
            self.rotate()?;
        }
        let idx = self.items + 1;
        match body_crc {
            Some(c) => {
                record::encode_record_with_body_crc(item, self.file_id, idx, c, &mut self.buf)
            }
            None => record::encode_record(item, self.file_id, idx, &mut self.buf),
        }
        self.pending.push(IndexEntry {
            offset: self.item_len,
            doc_hash: record::doc_hash(item.doc_id),
        });
        self.item_len += len as u64;
        self.items = idx;
        self.first_unsynced.get_or_insert_with(Instant::now);
        if self.buf.len() >= WRITE_CHUNK {
            self.write_buf()?;
        }
        if self.pending.len() as u32 >= self.opts.sync.every_items.max(1) {
            self.sync()?;
        } else {
            self.sync_if_due()?;
        }
        Ok(Position {
            file_id: self.file_id,
            item_idx: idx,
        })
    }

    fn write_buf(&mut self) -> Result<(), SegmentError> {
        if !self.buf.is_empty() {
            let path = item_path(&self.dir, self.file_id);
            self.item
                .write_all(&self.buf)
                .map_err(SegmentError::io(&path))?;
            super::writeback::start(&self.item);
            self.buf.clear();
        }
        Ok(())
    }

    /// Makes every appended item durable, then visible: fsync the item file, then append the
    /// index entries (which need no fsync of their own: recovery rebuilds them).
    pub fn sync(&mut self) -> Result<(), SegmentError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.write_buf()?;
        let ipath = item_path(&self.dir, self.file_id);
        self.item.sync_data().map_err(SegmentError::io(&ipath))?;
        let first = self.items - self.pending.len() as u32 + 1;
        let mut bytes = Vec::with_capacity(self.pending.len() * INDEX_ENTRY_LEN);
        for (i, e) in self.pending.iter().enumerate() {
            bytes.extend_from_slice(&e.encode(first + i as u32));
        }
        let xpath = index_path(&self.dir, self.file_id);
        self.index
            .write_all(&bytes)
            .map_err(SegmentError::io(&xpath))?;
        self.pending.clear();
        self.first_unsynced = None;
        Ok(())
    }

    /// Syncs if the oldest unsynced item has waited `every_ms`; call it from the main loop.
    pub fn sync_if_due(&mut self) -> Result<bool, SegmentError> {
        match self.first_unsynced {
            Some(t) if t.elapsed().as_millis() as u64 >= self.opts.sync.every_ms => {
                self.sync()?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Seals the active segment if it is `Segment.MaxAge` old and not empty.
    pub fn rotate_if_due(&mut self) -> Result<bool, SegmentError> {
        let age_ms = now_ms().saturating_sub(self.created_ms);
        if self.opts.max_age_s > 0 && self.items > 0 && age_ms >= self.opts.max_age_s * 1000 {
            self.rotate()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Seals the active segment (sync, fsync both files) and opens the next. The next item
    /// file appears only after the seal, so its existence tells readers the seal is done.
    /// An empty active segment is left as it is.
    pub fn rotate(&mut self) -> Result<(), SegmentError> {
        if self.items == 0 {
            return Ok(());
        }
        self.sync()?;
        let xpath = index_path(&self.dir, self.file_id);
        self.index.sync_all().map_err(SegmentError::io(&xpath))?;
        let ipath = item_path(&self.dir, self.file_id);
        self.item.sync_all().map_err(SegmentError::io(&ipath))?;
        let next = self.file_id + 1;
        let header = create_segment(&self.dir, next)?;
        let ipath = item_path(&self.dir, next);
        let xpath = index_path(&self.dir, next);
        self.item = OpenOptions::new()
            .append(true)
            .open(&ipath)
            .map_err(SegmentError::io(&ipath))?;
        self.index = OpenOptions::new()
            .append(true)
            .open(&xpath)
            .map_err(SegmentError::io(&xpath))?;
        self.file_id = next;
        self.created_ms = header.created_ms;
        self.item_len = FILE_HEADER_LEN as u64;
        self.items = 0;
        Ok(())
    }

    /// Where the next item will go (before any rotation it may cause).
    pub fn position(&self) -> Position {
        Position {
            file_id: self.file_id,
            item_idx: self.items + 1,
        }
    }

    /// Items appended but not yet synced.
    pub fn unsynced(&self) -> usize {
        self.pending.len()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Syncs and closes.
    pub fn close(mut self) -> Result<(), SegmentError> {
        self.sync()
    }
}

/// Creates the empty pair for `file_id`: the index first, so that whoever sees the item file
/// also finds its index.
fn create_segment(dir: &Path, file_id: u64) -> Result<FileHeader, SegmentError> {
    let header = FileHeader {
        file_id,
        created_ms: now_ms(),
    };
    write_index(&index_path(dir, file_id), &header, &[])?;
    let ipath = item_path(dir, file_id);
    fsutil::write_atomically(&ipath, |w| w.write_all(&header.encode(ITEM_MAGIC)))
        .map_err(SegmentError::io(&ipath))?;
    Ok(header)
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
fn remove_temporaries(dir: &Path) -> Result<(), SegmentError> {
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
