//! The receiver's store: its own segments, and per sender stream the last item applied, so a
//! resent item is acknowledged and not stored twice.
//!
//! Every received record carries its origin (stream number, sender's file id and item index).
//! `streams.state` maps stream numbers to names and is a checkpoint: the last item of each
//! stream as of store position `covers`. On open, the records after `covers` are read back to
//! bring it up to date, so the checkpoint may lag the store without losing anything.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use focuser_schema::fsutil;
use focuser_schema::segment::crc;
use focuser_schema::segment::{
    Cursor, ItemRef, Origin, Position, Recovery, SegmentError, Writer, WriterOptions,
};

use crate::wire::{BatchRef, WireItemRef};

const STREAMS_FILE: &str = "streams.state";
const MAGIC: &str = "#focuser-streams 1";
/// Checkpoints are written at least this often while items arrive.
const CHECKPOINT_EVERY_S: u64 = 5;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Segment(#[from] SegmentError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: line {line}: {reason}; restore it, or remove it to accept resent items twice", path.display())]
    BadStreams {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stream {
    number: u32,
    /// The last item applied; (0, 0): none.
    last: Position,
}

/// What applying one batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    pub stored: u64,
    pub duplicates: u64,
    pub bytes: u64,
}

pub struct RecvStore {
    dir: PathBuf,
    writer: Writer,
    streams: BTreeMap<String, Stream>,
    /// Above every stream number in the registry or in the store.
    next_number: u32,
    last_checkpoint: Instant,
    /// Each stream's last item appended and not yet known to be durable: what resent items
    /// are checked against meanwhile.
    pending: BTreeMap<String, Position>,
}

impl RecvStore {
    pub fn open(dir: &Path, opts: WriterOptions) -> Result<(RecvStore, Recovery), StoreError> {
        let (writer, recovery) = Writer::open(dir, opts)?;
        let path = dir.join(STREAMS_FILE);
        let (covers, mut streams) = read_streams(&path)?;
        // Bring the checkpoint up to date with what was stored after it.
        let by_number: BTreeMap<u32, String> = streams
            .iter()
            .map(|(name, s)| (s.number, name.clone()))
            .collect();
        let mut cursor = Cursor::new(dir, covers, None);
        let mut next_number = streams.values().map(|s| s.number).max().unwrap_or(0) + 1;
        let mut unknown = 0u64;
        loop {
            let before = cursor.position();
            let stored = match cursor.next() {
                Ok(Some(s)) => s,
                Ok(None) => break,
                // A damaged record cannot be unseen; the ones around it still count.
                Err(e @ (SegmentError::Corrupt { .. } | SegmentError::BadHeader { .. })) => {
                    log::error!("{e}");
                    if cursor.position() == before {
                        break;
                    }
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let o = stored.item.origin;
            if o.stream == 0 {
                continue;
            }
            next_number = next_number.max(o.stream + 1);
            let Some(name) = by_number.get(&o.stream) else {
                unknown += 1;
                continue;
            };
            if let Some(s) = streams.get_mut(name) {
                let at = Position {
                    file_id: o.file_id,
                    item_idx: o.item_idx,
                };
                s.last = s.last.max(at);
            }
        }
        if unknown > 0 {
            log::warn!(
                "{}: {unknown} stored items of streams it does not name (was it removed?); \
                 items those senders resend will be stored again",
                path.display()
            );
        }
        let mut store = RecvStore {
            dir: dir.to_path_buf(),
            writer,
            streams,
            next_number,
            last_checkpoint: Instant::now(),
            pending: BTreeMap::new(),
        };
        store.checkpoint()?;
        Ok((store, recovery))
    }

    /// The last item of `stream` this store holds.
    pub fn last(&self, stream: &str) -> Position {
        self.streams.get(stream).map(|s| s.last).unwrap_or_default()
    }

    /// Stores the items of `batch` not already held, makes them durable, and only then
    /// returns: the caller acknowledges after this.
    pub fn apply(&mut self, stream: &str, batch: &BatchRef<'_>) -> Result<Applied, StoreError> {
        let applied = self.append(stream, batch)?;
        self.sync()?;
        Ok(applied)
    }

    /// [`RecvStore::apply`] without the sync: several batches can share one, through
    /// [`RecvStore::sync`], before any of them is acknowledged.
    pub fn append(&mut self, stream: &str, batch: &BatchRef<'_>) -> Result<Applied, StoreError> {
        self.append_with(stream, batch, None)
    }

    /// [`RecvStore::append`] with each item's body CRC, from checking the frame
    /// ([`BatchRef::decode_checked`]): the records' CRCs are combined from them.
    pub fn append_with_crcs(
        &mut self,
        stream: &str,
        batch: &BatchRef<'_>,
        body_crcs: &[u32],
    ) -> Result<Applied, StoreError> {
        self.append_with(stream, batch, Some(body_crcs))
    }

    fn append_with(
        &mut self,
        stream: &str,
        batch: &BatchRef<'_>,
        body_crcs: Option<&[u32]>,
    ) -> Result<Applied, StoreError> {
        let number = self.register(stream)?;
        let mut last = match self.pending.get(stream) {
            Some(p) => *p,
            None => self.last(stream),
        };
        let mut applied = Applied::default();
        for (k, WireItemRef { at, item }) in batch.items.iter().enumerate() {
            if *at <= last {
                applied.duplicates += 1;
                continue;
            }
            let item = ItemRef {
                origin: Origin {
                    stream: number,
                    file_id: at.file_id,
                    item_idx: at.item_idx,
                },
                ..*item
            };
            match body_crcs.and_then(|c| c.get(k)) {
                Some(&c) => self.writer.append_with_body_crc(&item, c)?,
                None => self.writer.append_ref(&item)?,
            };
            applied.stored += 1;
            applied.bytes += (item.doc_id.len() + item.url.len() + item.content.len()) as u64;
            last = *at;
        }
        self.pending.insert(stream.to_string(), last);
        Ok(applied)
    }

    /// Makes everything appended durable; what it covers may then be acknowledged.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        self.writer.sync()?;
        self.commit_pending();
        if self.last_checkpoint.elapsed().as_secs() >= CHECKPOINT_EVERY_S {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// After a sync of the writer: the pending positions are durable.
    fn commit_pending(&mut self) {
        for (name, last) in std::mem::take(&mut self.pending) {
            if let Some(s) = self.streams.get_mut(&name) {
                s.last = last;
            }
        }
    }

    /// A new stream's number is durable before any of its items is written.
    fn register(&mut self, stream: &str) -> Result<u32, StoreError> {
        if let Some(s) = self.streams.get(stream) {
            return Ok(s.number);
        }
        let number = self.next_number;
        self.next_number += 1;
        self.streams.insert(
            stream.to_string(),
            Stream {
                number,
                last: Position::default(),
            },
        );
        self.checkpoint()?;
        Ok(number)
    }

    /// Writes `streams.state` as of now (everything appended is synced first).
    pub fn checkpoint(&mut self) -> Result<(), StoreError> {
        self.writer.sync()?;
        self.commit_pending();
        let covers = self.writer.position();
        let path = self.dir.join(STREAMS_FILE);
        let mut text = format!("{MAGIC} covers={covers}\n");
        for (name, s) in &self.streams {
            text.push_str(&format!("{}\t{name}\t{}\n", s.number, s.last));
        }
        let crc = crc::crc32c(text.as_bytes());
        text.push_str(&format!("#end crc={crc:08x}\n"));
        fsutil::write_atomically(&path, |w| w.write_all(text.as_bytes())).map_err(|source| {
            StoreError::Io {
                path: path.clone(),
                source,
            }
        })?;
        self.last_checkpoint = Instant::now();
        Ok(())
    }

    pub fn sync_if_due(&mut self) -> Result<(), StoreError> {
        self.writer.sync_if_due()?;
        self.writer.rotate_if_due()?;
        Ok(())
    }

    pub fn rotate(&mut self) -> Result<(), StoreError> {
        Ok(self.writer.rotate()?)
    }

    pub fn streams(&self) -> Vec<(String, Position)> {
        self.streams
            .iter()
            .map(|(n, s)| (n.clone(), s.last))
            .collect()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn parse_position(s: &str) -> Option<Position> {
    let (f, i) = s.split_once(':')?;
    Some(Position {
        file_id: f.parse().ok()?,
        item_idx: i.parse().ok()?,
    })
}

/// The checkpoint in `path`: (covers, streams). No file: an empty store's.
fn read_streams(path: &Path) -> Result<(Position, BTreeMap<String, Stream>), StoreError> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Position::START, BTreeMap::new()))
        }
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let bad = |line: usize, reason: &str| StoreError::BadStreams {
        path: path.to_path_buf(),
        line,
        reason: reason.to_string(),
    };
    let text = String::from_utf8(text).map_err(|_| bad(1, "not UTF-8"))?;
    let body_end = text
        .rfind("#end crc=")
        .ok_or_else(|| bad(0, "no #end line"))?;
    let crc_text = text[body_end + 9..].trim_end();
    let crc = u32::from_str_radix(crc_text, 16).map_err(|_| bad(0, "bad CRC field"))?;
    if crc::crc32c(&text.as_bytes()[..body_end]) != crc {
        return Err(bad(0, "CRC mismatch"));
    }
    let mut lines = text[..body_end].lines();
    let head = lines.next().ok_or_else(|| bad(1, "empty"))?;
    let covers = head
        .strip_prefix(MAGIC)
        .and_then(|r| r.trim().strip_prefix("covers="))
        .and_then(parse_position)
        .ok_or_else(|| bad(1, "bad header"))?;
    let mut streams = BTreeMap::new();
    for (i, line) in lines.enumerate() {
        let mut f = line.split('\t');
        let (Some(n), Some(name), Some(last), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad(i + 2, "expected number, name and last position"));
        };
        let number = n.parse().map_err(|_| bad(i + 2, "bad stream number"))?;
        let last = parse_position(last).ok_or_else(|| bad(i + 2, "bad position"))?;
        streams.insert(name.to_string(), Stream { number, last });
    }
    Ok((covers, streams))
}
