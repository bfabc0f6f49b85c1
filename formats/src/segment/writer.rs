//! The one writer of a segment store: append, batch fsync, rotation, and going back to what
//! is durable when a write fails. Recovery on open is in [`super::recovery`].

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::record::{self, FileHeader, IndexEntry, FILE_HEADER_LEN, INDEX_ENTRY_LEN};
use super::recovery::{
    create_segment, fresh_header, index_len, recover_active, remove_temporaries, Active, Recovery,
};
use super::{index_path, item_path, list_segments, now_ms, Item, ItemRef, Position, SegmentError};

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
    /// Items in the active segment, durable or not.
    items: u32,
    /// Index entries not yet in the index file: those of the items appended since the last
    /// sync, after any whose entries a failed sync could not write.
    pending: Vec<IndexEntry>,
    first_unsynced: Option<Instant>,
    /// The active segment as of its last sync; what a failed write or fsync goes back to.
    durable: Durable,
    /// What a failed call left to do before anything else is written.
    undone: Undone,
}

/// How far the active segment's files are durable: the item file (fsynced) and the index file
/// (whole entries written).
#[derive(Debug, Clone, Copy)]
struct Durable {
    item_len: u64,
    items: u32,
    index_len: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Undone {
    Nothing,
    /// A write or fsync failed: both files go back to their durable lengths.
    Truncate,
    /// The next segment was created (readers take this one as sealed) but is not open yet.
    OpenNext(FileHeader),
}

const WRITE_CHUNK: usize = 1 << 20;

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
            error: std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                "another writer has this segment store open",
            ),
        })?;
        remove_temporaries(dir)?;
        let file_id = match list_segments(dir)?.last() {
            Some(&id) => id,
            None => {
                create_segment(dir, &fresh_header(1))?;
                1
            }
        };
        let (active, rec) = match recover_active(dir, file_id) {
            Err(e @ SegmentError::BadHeader { .. }) => {
                create_segment(dir, &fresh_header(file_id + 1))?;
                let (active, mut rec) = recover_active(dir, file_id + 1)?;
                rec.left_behind = Some(e.to_string());
                (active, rec)
            }
            r => r?,
        };
        Ok((Writer::new(dir, opts, lock, active), rec))
    }

    fn new(dir: &Path, opts: WriterOptions, lock: File, a: Active) -> Writer {
        let durable = Durable {
            item_len: a.item_len,
            items: a.items,
            index_len: index_len(a.items),
        };
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
            durable,
            undone: Undone::Nothing,
        }
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
        self.finish_undone()?;
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
            self.write_buf().map_err(|e| self.discard(e))?;
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
    ///
    /// If writing or syncing the item file fails (a full disk, an I/O error), the items
    /// appended since the last sync are forgotten and the file goes back to its length then:
    /// [`Writer::position`] is [`Writer::durable`] again, and their positions will be given to
    /// the next items. If only the index entries cannot be written, the items stay (they are
    /// durable) and become visible at the next sync that writes their entries.
    pub fn sync(&mut self) -> Result<(), SegmentError> {
        self.finish_undone()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        if self.items > self.durable.items {
            let ipath = item_path(&self.dir, self.file_id);
            let synced = self
                .write_buf()
                .and_then(|()| self.item.sync_data().map_err(SegmentError::io(&ipath)));
            synced.map_err(|e| self.discard(e))?;
            self.durable.item_len = self.item_len;
            self.durable.items = self.items;
        }
        let first = self.items - self.pending.len() as u32 + 1;
        let mut bytes = Vec::with_capacity(self.pending.len() * INDEX_ENTRY_LEN);
        for (i, e) in self.pending.iter().enumerate() {
            bytes.extend_from_slice(&e.encode(first + i as u32));
        }
        let xpath = index_path(&self.dir, self.file_id);
        if let Err(e) = self.index.write_all(&bytes) {
            // Whatever part of the entries was written goes; they are all written again.
            self.undone = Undone::Truncate;
            let _ = self.finish_undone();
            return Err(SegmentError::io(&xpath)(e));
        }
        self.durable.index_len += bytes.len() as u64;
        self.pending.clear();
        self.first_unsynced = None;
        Ok(())
    }

    /// After a failed write or fsync of the item file: the items not yet durable are
    /// forgotten, and the files are cut back to what is (now, or before the next write if
    /// that fails too). Returns `e`.
    fn discard(&mut self, e: SegmentError) -> SegmentError {
        let lost = self.items - self.durable.items;
        self.pending
            .truncate(self.pending.len().saturating_sub(lost as usize));
        self.buf.clear();
        self.items = self.durable.items;
        self.item_len = self.durable.item_len;
        if self.pending.is_empty() {
            self.first_unsynced = None;
        }
        self.undone = Undone::Truncate;
        let _ = self.finish_undone();
        e
    }

    /// Does what a failed call left undone; until it succeeds nothing else is written.
    fn finish_undone(&mut self) -> Result<(), SegmentError> {
        match self.undone {
            Undone::Nothing => {}
            Undone::Truncate => {
                let ipath = item_path(&self.dir, self.file_id);
                self.item
                    .set_len(self.durable.item_len)
                    .map_err(SegmentError::io(&ipath))?;
                let xpath = index_path(&self.dir, self.file_id);
                self.index
                    .set_len(self.durable.index_len)
                    .map_err(SegmentError::io(&xpath))?;
            }
            Undone::OpenNext(header) => self.open_next(header)?,
        }
        self.undone = Undone::Nothing;
        Ok(())
    }

    /// The position of the first item that is not durable: every item before it is kept
    /// whatever happens to the writer. [`Writer::position`] once everything is synced.
    pub fn durable(&self) -> Position {
        Position {
            file_id: self.file_id,
            item_idx: self.durable.items + 1,
        }
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
    /// An empty active segment is left as it is; so is one whose next segment could not be
    /// created.
    pub fn rotate(&mut self) -> Result<(), SegmentError> {
        self.finish_undone()?;
        if self.items == 0 {
            return Ok(());
        }
        self.sync()?;
        let xpath = index_path(&self.dir, self.file_id);
        self.index.sync_all().map_err(SegmentError::io(&xpath))?;
        let ipath = item_path(&self.dir, self.file_id);
        self.item.sync_all().map_err(SegmentError::io(&ipath))?;
        let header = fresh_header(self.file_id + 1);
        if let Err(e) = create_segment(&self.dir, &header) {
            // Once the item file is there (only its directory's fsync failed), readers take
            // this segment as sealed: nothing more may go into it.
            if !item_path(&self.dir, header.file_id).exists() {
                return Err(e);
            }
        }
        self.undone = Undone::OpenNext(header);
        self.finish_undone()
    }

    fn open_next(&mut self, header: FileHeader) -> Result<(), SegmentError> {
        let ipath = item_path(&self.dir, header.file_id);
        let xpath = index_path(&self.dir, header.file_id);
        let item = OpenOptions::new()
            .append(true)
            .open(&ipath)
            .map_err(SegmentError::io(&ipath))?;
        let index = OpenOptions::new()
            .append(true)
            .open(&xpath)
            .map_err(SegmentError::io(&xpath))?;
        self.item = item;
        self.index = index;
        self.file_id = header.file_id;
        self.created_ms = header.created_ms;
        self.item_len = FILE_HEADER_LEN as u64;
        self.items = 0;
        self.durable = Durable {
            item_len: self.item_len,
            items: 0,
            index_len: index_len(0),
        };
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
