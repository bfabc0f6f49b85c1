//! The node's archive: its item/index segment store (SPEC §8), which the reader ships. Every
//! downloaded page is an `UPDATE` item whose doc id is the URL id in hex; a page that is gone
//! is a `DELETE` item. A page re-indexed from the archive is read back from where its last
//! copy is (`url.archive_file`, `url.archive_item`) and written again as a new `UPDATE` item.

use std::path::{Path, PathBuf};

use focuser_schema::segment::{
    ItemRef, Origin, Position, SegmentError, SegmentIndex, Status, Writer, WriterOptions,
};
use focuser_schema::urls;

pub struct Archive {
    dir: PathBuf,
    writer: Writer,
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
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
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
        self.writer.append_ref(&ItemRef {
            status,
            doc_id: doc_id.as_bytes(),
            url: url.as_bytes(),
            content,
            time_ms: focuser_schema::segment::now_ms(),
            origin: Origin::default(),
        })
    }

    /// Makes every appended item durable (before the database says the pages are indexed).
    pub fn sync(&mut self) -> Result<(), SegmentError> {
        self.writer.sync()
    }

    /// Seals the active segment (SIGUSR1); `false` if it was empty and stays open.
    pub fn seal(&mut self) -> Result<bool, SegmentError> {
        let before = self.writer.position();
        self.writer.rotate()?;
        Ok(self.writer.position().file_id != before.file_id)
    }

    /// Seals the active segment if it is `Segment.MaxAge` old.
    pub fn seal_if_due(&mut self) -> Result<bool, SegmentError> {
        self.writer.rotate_if_due()
    }

    /// The content of the archived copy of URL `id` at `file_id`/`item_idx`: `None` if it is
    /// not there any more (retention deleted its segment) or is not that URL's `UPDATE` item.
    pub fn read(&self, file_id: u64, item_idx: u32, id: u64) -> Option<Vec<u8>> {
        let found = SegmentIndex::open(&self.dir, file_id)
            .and_then(|seg| seg.map(|s| s.read(item_idx)).transpose());
        match found {
            Ok(Some(stored))
                if stored.item.status == Status::Update
                    && stored.item.doc_id == urls::doc_id(id).as_bytes() =>
            {
                Some(stored.item.content)
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

    /// Syncs and closes.
    pub fn close(self) -> Result<(), SegmentError> {
        self.writer.close()
    }
}
