//! The node's archive: its item/index segment store (docs/design.md#yacobot-archive), which the
//! reader ships. Every downloaded page is an `UPDATE` item whose doc id is the URL id in hex; a
//! page that is gone is a `DELETE` item. A page re-indexed from the archive is read back from where
//! its last copy is (`url.archive_file`, `url.archive_item`) and written again as a new `UPDATE`
//! item.
//!
//! A failed write (a full disk) takes back the items not yet durable, and their positions
//! are given again: the next [`Archive::sync`] fails too, so that the caller books none of
//! the pages it appended since the last sync.

use std::path::{Path, PathBuf};

use focuser_formats::segment::{
    Item, ItemRef, Origin, Position, SegmentError, SegmentIndex, Status, Writer, WriterOptions,
};
use focuser_formats::urls;

pub struct Archive {
    dir: PathBuf,
    writer: Writer,
    /// Why items appended since the last sync may be gone: a write that failed since.
    failed: Option<String>,
}

impl Archive {
    /// Opens the store (recovering a torn tail left by a crash) and says what it repaired.
    pub fn open(dir: &Path, opts: WriterOptions) -> Result<Archive, SegmentError> {
        let (writer, rec) = Writer::open(dir, opts)?;
        if rec.cut_bytes > 0 || rec.index_rebuilt {
            log::warn!(
                "archive {}: recovered segment {}: cut {} bytes ({}), index rebuilt: {}",
                dir.display(),
                rec.file_id,
                rec.cut_bytes,
                rec.cut_reason.unwrap_or("-"),
                rec.index_rebuilt
            );
        }
        if let Some(bad) = &rec.left_behind {
            log::error!(
                "archive {bad}: left behind; new segment {} opened",
                rec.file_id
            );
        }
        Ok(Archive {
            dir: dir.to_path_buf(),
            writer,
            failed: None,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the next item will go.
    pub fn position(&self) -> Position {
        self.writer.position()
    }

    /// Appends an item for URL `id`; durable only after [`Archive::sync`].
    pub fn append(
        &mut self,
        status: Status,
        id: u64,
        url: &str,
        content: &[u8],
    ) -> Result<Position, SegmentError> {
        let doc_id = urls::doc_id(id);
        let put = self.writer.append_ref(&ItemRef {
            status,
            doc_id: doc_id.as_bytes(),
            url: url.as_bytes(),
            content,
            time_ms: focuser_formats::segment::now_ms(),
            origin: Origin::default(),
        });
        self.note(put)
    }

    /// Makes every item appended since the last sync durable (before the database says the
    /// pages are indexed); an error if any of them may be gone.
    pub fn sync(&mut self) -> Result<(), SegmentError> {
        let synced = self.writer.sync();
        match self.failed.take() {
            Some(why) if synced.is_ok() => Err(SegmentError::Io {
                path: self.dir.clone(),
                error: std::io::Error::other(format!(
                    "items appended since the last sync were not archived: {why}"
                )),
            }),
            _ => synced,
        }
    }

    /// Seals the active segment (SIGUSR1); `false` if it was empty and stays open.
    pub fn seal(&mut self) -> Result<bool, SegmentError> {
        let before = self.writer.position();
        let sealed = self.writer.rotate();
        self.note(sealed)?;
        Ok(self.writer.position().file_id != before.file_id)
    }

    /// Seals the active segment if it is `Segment.MaxAge` old.
    pub fn seal_if_due(&mut self) -> Result<bool, SegmentError> {
        let sealed = self.writer.rotate_if_due();
        self.note(sealed)
    }

    /// Remembers a failure until the next sync.
    fn note<T>(&mut self, r: Result<T, SegmentError>) -> Result<T, SegmentError> {
        if let Err(e) = &r {
            self.failed.get_or_insert_with(|| e.to_string());
        }
        r
    }

    /// The content of the archived copy of URL `id` at `file_id`/`item_idx`: `None` if it is
    /// not there any more (retention deleted its segment) or is not that URL's copy.
    pub fn read(&self, file_id: u64, item_idx: u32, id: u64) -> Option<Vec<u8>> {
        self.copy(file_id, item_idx, id).map(|item| item.content)
    }

    /// The archived copy of URL `id` at `file_id`/`item_idx` (an `UPDATE` item, or a `KEEP`
    /// one the compaction moved), whole.
    pub fn copy(&self, file_id: u64, item_idx: u32, id: u64) -> Option<Item> {
        let found = SegmentIndex::open(&self.dir, file_id)
            .and_then(|seg| seg.map(|s| s.read(item_idx)).transpose());
        match found {
            Ok(Some(stored))
                if matches!(stored.item.status, Status::Update | Status::Keep)
                    && stored.item.doc_id == urls::doc_id(id).as_bytes() =>
            {
                Some(stored.item)
            }
            Ok(_) => None,
            Err(e) => {
                log::warn!(
                    "archive: the copy of {} is unreadable: {e}",
                    urls::doc_id(id)
                );
                None
            }
        }
    }

    /// Appends `copy` again as a `KEEP` item (never shipped; [`super::compact`]), with its
    /// original time; durable only after [`Archive::sync`].
    pub fn keep(&mut self, copy: &Item) -> Result<Position, SegmentError> {
        let put = self.writer.append_ref(&ItemRef {
            status: Status::Keep,
            doc_id: &copy.doc_id,
            url: &copy.url,
            content: &copy.content,
            time_ms: copy.time_ms,
            origin: Origin::default(),
        });
        self.note(put)
    }

    /// Syncs and closes.
    pub fn close(self) -> Result<(), SegmentError> {
        self.writer.close()
    }
}
