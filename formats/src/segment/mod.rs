//! Item/index segments (docs/design.md#segments): the append-only store yacobot writes, the reader
//! ships and `reader --recv` writes again. One implementation for the writer and every reader; the
//! bytes are specified in docs/formats.md.
//!
//! A store is a directory of pairs `item_<file_id>.dat` / `index_<file_id>.dat`. The highest
//! file id is the active segment; a segment is sealed once the next one exists. An index entry
//! is written only after its item is fsynced, so a reader that follows the index never sees an
//! item a crash could take back.

pub mod crc;
mod cursor;
mod lag;
mod position;
mod reader;
pub mod record;
mod recovery;
mod scan;
mod writeback;
mod writer;

use std::path::{Path, PathBuf};

pub use cursor::{Cursor, RawItem, Take};
pub use lag::{lag, Lag};
pub use position::{read_position, write_position, Position, PositionError};
pub use reader::{Located, Partition, SegmentIndex};
pub use record::{doc_hash, IndexEntry};
pub use recovery::Recovery;
pub use writer::{SyncPolicy, Writer, WriterOptions};

/// What an item tells its receivers to do with the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Status {
    Update = 1,
    Delete = 2,
    /// A copy the store's owner keeps for itself (yacobot's compaction moves a page's current
    /// copy out of a segment its retention lets go): never shipped, never a document again.
    Keep = 3,
}

impl Status {
    pub fn from_byte(b: u8) -> Option<Status> {
        match b {
            1 => Some(Status::Update),
            2 => Some(Status::Delete),
            3 => Some(Status::Keep),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Status::Update => "UPDATE",
            Status::Delete => "DELETE",
            Status::Keep => "KEEP",
        }
    }

    /// A status a receiver group may ask for: `KEEP` is not one (never shipped).
    pub fn parse(s: &str) -> Option<Status> {
        match s.trim().to_ascii_uppercase().as_str() {
            "UPDATE" => Some(Status::Update),
            "DELETE" => Some(Status::Delete),
            _ => None,
        }
    }
}

/// Where a received item came from: the sender stream (a receiver-local number) and the
/// item's place in the sender's store. All zero for an item written first-hand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Origin {
    pub stream: u32,
    pub file_id: u64,
    pub item_idx: u32,
}

/// One document or feed item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub status: Status,
    pub doc_id: Vec<u8>,
    pub url: Vec<u8>,
    pub content: Vec<u8>,
    /// Milliseconds since the epoch when it was first written.
    pub time_ms: u64,
    pub origin: Origin,
}

/// An item's fields borrowed from wherever they are (a received frame, a caller's buffers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemRef<'a> {
    pub status: Status,
    pub doc_id: &'a [u8],
    pub url: &'a [u8],
    pub content: &'a [u8],
    pub time_ms: u64,
    pub origin: Origin,
}

impl Item {
    pub fn as_ref(&self) -> ItemRef<'_> {
        ItemRef {
            status: self.status,
            doc_id: &self.doc_id,
            url: &self.url,
            content: &self.content,
            time_ms: self.time_ms,
            origin: self.origin,
        }
    }
}

impl ItemRef<'_> {
    pub fn to_owned(&self) -> Item {
        Item {
            status: self.status,
            doc_id: self.doc_id.to_vec(),
            url: self.url.to_vec(),
            content: self.content.to_vec(),
            time_ms: self.time_ms,
            origin: self.origin,
        }
    }
}

/// An item read back, with its place in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredItem {
    pub file_id: u64,
    pub item_idx: u32,
    pub doc_hash: u32,
    pub item: Item,
}

#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    /// (`error` is not the error's `source()`: it is in the message already, and a chain
    /// printed whole would say it twice.)
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {reason}", path.display())]
    BadHeader { path: PathBuf, reason: &'static str },
    #[error("{}: item {item_idx} at offset {offset}: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        item_idx: u32,
        offset: u64,
        reason: &'static str,
    },
    /// A sealed item file that ends in damage (cut short, or garbage after its last good
    /// record): what its index or a scan found there cannot be read.
    #[error("{}: damaged from offset {offset} (item {item_idx} on): {reason}; {items} items skipped", path.display())]
    DamagedTail {
        path: PathBuf,
        item_idx: u32,
        offset: u64,
        /// Items lost: those the index knew of past the damage, at least the one torn.
        items: u32,
        reason: &'static str,
    },
    #[error("item too large: doc id {doc_id}, url {url}, content {content} bytes")]
    TooLarge {
        doc_id: usize,
        url: usize,
        content: usize,
    },
}

impl SegmentError {
    /// Damage to a store's files (a record or header that does not check, a torn tail):
    /// reported, counted and passed over by readers, unlike a failure to read them at all.
    pub fn is_damage(&self) -> bool {
        self.items_skipped() > 0
    }

    /// How many items a reader passes over for this damage (a segment whose header is bad
    /// counts as one: what it held is unknown).
    pub fn items_skipped(&self) -> u64 {
        match self {
            SegmentError::Corrupt { .. } | SegmentError::BadHeader { .. } => 1,
            SegmentError::DamagedTail { items, .. } => u64::from(*items).max(1),
            _ => 0,
        }
    }

    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SegmentError + '_ {
        move |error| SegmentError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}

pub fn item_path(dir: &Path, file_id: u64) -> PathBuf {
    dir.join(format!("item_{file_id:010}.dat"))
}

pub fn index_path(dir: &Path, file_id: u64) -> PathBuf {
    dir.join(format!("index_{file_id:010}.dat"))
}

/// The file ids of the item files in `dir`, ascending. Other names are ignored.
pub fn list_segments(dir: &Path) -> Result<Vec<u64>, SegmentError> {
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(SegmentError::io(dir))? {
        let entry = entry.map_err(SegmentError::io(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(id) = name
            .strip_prefix("item_")
            .and_then(|r| r.strip_suffix(".dat"))
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u64>().ok())
        {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// Bytes taken by the store's segment files.
pub fn store_bytes(dir: &Path) -> Result<u64, SegmentError> {
    let mut total = 0;
    for id in list_segments(dir)? {
        for p in [item_path(dir, id), index_path(dir, id)] {
            total += std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        }
    }
    Ok(total)
}

/// Deletes a sealed segment: index first, so a reader never finds an index without items.
pub fn delete_segment(dir: &Path, file_id: u64) -> Result<(), SegmentError> {
    for p in [index_path(dir, file_id), item_path(dir, file_id)] {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(SegmentError::io(&p)(e)),
        }
    }
    crate::fsutil::sync_dir(dir).map_err(SegmentError::io(dir))
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
