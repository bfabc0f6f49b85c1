//! The receiver's store: its own segments, and per sender stream the last item applied, so a
//! resent item is acknowledged and not stored twice.
//!
//! Every received record carries its origin (stream number, sender's file id and item index).
//! `streams.state` maps stream numbers to names and is a checkpoint: the last item of each
//! stream as of store position `covers`. On open, the records after `covers` are read back to
//! bring it up to date, so the checkpoint may lag the store without losing anything.
//!
//! A stream's position moves only over items the writer holds durable. When a write or sync
//! fails (a full disk), the writer forgets what was not durable; so does this store, and every
//! stream that had items among them is told at its next sync, so that none of them is
//! acknowledged: the senders send them again. The failure is logged as one episode.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use focuser_daemon::episode::Episode;
use focuser_formats::segment::{
    list_segments, ItemRef, Origin, Position, Recovery, SegmentError, Writer, WriterOptions,
};

use super::streams::{self, Stream, STREAMS_FILE};
use crate::wire::{BatchRef, WireItemRef};

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
    #[error("items of {stream} were lost when a write failed; its sender is to send them again")]
    Discarded { stream: String },
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
    /// Each item appended and not yet taken into its stream's position.
    unsynced: Vec<Unsynced>,
    /// Streams some of whose items were forgotten after a failure in another stream's call:
    /// their next sync fails, so that nothing of theirs is acknowledged.
    lost: BTreeSet<u32>,
    /// Writes and syncs that fail, logged once while they go on.
    failing: Episode,
}

/// An item appended: where the writer put it, and its stream's number and position.
#[derive(Debug, Clone, Copy)]
struct Unsynced {
    put: Position,
    number: u32,
    at: Position,
}

impl RecvStore {
    pub fn open(dir: &Path, opts: WriterOptions) -> Result<(RecvStore, Recovery), StoreError> {
        let (writer, recovery) = Writer::open(dir, opts)?;
        let (covers, mut streams) = streams::read(&dir.join(STREAMS_FILE))?;
        let end = writer.position();
        // The checkpoint is brought up to date with what was stored after it. A store that
        // ends before it (cut short since: restored from a copy, truncated) is read whole and
        // the checkpoint is made to say what it holds, not more.
        let cut_short = covers > end;
        let held = streams::held(dir, if cut_short { Position::START } else { covers })?;
        if cut_short {
            log::warn!(
                "{}: {STREAMS_FILE} covers {covers} but the store ends at {end}: \
                 it was cut short since; stream positions go back to what it holds",
                dir.display()
            );
            // Without its first segments, the store cannot tell about streams it lacks.
            let whole = list_segments(dir)?.first().is_none_or(|&f| f <= 1);
            clamp(&mut streams, &held.last, whole);
        } else {
            for s in streams.values_mut() {
                if let Some(&at) = held.last.get(&s.number) {
                    s.last = s.last.max(at);
                }
            }
        }
        let named: BTreeSet<u32> = streams.values().map(|s| s.number).collect();
        let unnamed: Vec<String> = held
            .last
            .keys()
            .filter(|n| !named.contains(n))
            .map(|n| n.to_string())
            .collect();
        if !unnamed.is_empty() {
            log::warn!(
                "{}: {STREAMS_FILE} does not name streams {} whose items the store holds \
                 (was it removed?); items those senders resend will be stored again",
                dir.display(),
                unnamed.join(", ")
            );
        }
        let next_number = named.last().map_or(0, |n| n + 1).max(held.next_number);
        let mut store = RecvStore {
            dir: dir.to_path_buf(),
            writer,
            streams,
            next_number: next_number.max(1),
            last_checkpoint: Instant::now(),
            pending: BTreeMap::new(),
            unsynced: Vec::new(),
            lost: BTreeSet::new(),
            failing: Episode::new(format!("receiver store {}", dir.display())),
        };
        store.checkpoint()?;
        Ok((store, recovery))
    }

    /// The last item of `stream` this store holds.
    pub fn last(&self, stream: &str) -> Position {
        self.streams.get(stream).map(|s| s.last).unwrap_or_default()
    }

    /// Where `stream` stands, for a sender that connects: it sends again from there, so
    /// items of its lost after a failure are no longer in the way.
    pub fn resume(&mut self, stream: &str) -> Position {
        if let Some(s) = self.streams.get(stream) {
            self.lost.remove(&s.number);
        }
        self.last(stream)
    }

    /// Stores the items of `batch` not already held, makes them durable, and only then
    /// returns: the caller acknowledges after this.
    pub fn apply(&mut self, stream: &str, batch: &BatchRef<'_>) -> Result<Applied, StoreError> {
        let applied = self.append(stream, batch)?;
        self.sync(stream)?;
        Ok(applied)
    }

    /// [`RecvStore::apply`] without the sync: several batches can share one, through
    /// [`RecvStore::sync`], before any of them is acknowledged. On error nothing of the batch
    /// may be acknowledged.
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
        if self.lost.contains(&number) {
            // Stored after items that were lost, these would move the stream past them.
            return Err(StoreError::Discarded {
                stream: stream.to_string(),
            });
        }
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
            let put = match body_crcs.and_then(|c| c.get(k)) {
                Some(&c) => self.writer.append_with_body_crc(&item, c),
                None => self.writer.append_ref(&item),
            };
            let put = put.map_err(|e| self.failed(e, Some(number)))?;
            self.unsynced.push(Unsynced {
                put,
                number,
                at: *at,
            });
            applied.stored += 1;
            applied.bytes += (item.doc_id.len() + item.url.len() + item.content.len()) as u64;
            last = *at;
        }
        self.pending.insert(stream.to_string(), last);
        Ok(applied)
    }

    /// Makes everything appended durable; what `stream` appended may then be acknowledged,
    /// unless this fails. Once some of a stream's items were lost, its appends and syncs fail
    /// until a sender resumes it ([`RecvStore::resume`]).
    pub fn sync(&mut self, stream: &str) -> Result<(), StoreError> {
        let number = self.streams.get(stream).map(|s| s.number);
        self.sync_writer(number)?;
        if number.is_some_and(|n| self.lost.contains(&n)) {
            return Err(StoreError::Discarded {
                stream: stream.to_string(),
            });
        }
        if self.last_checkpoint.elapsed().as_secs() >= CHECKPOINT_EVERY_S {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Syncs the writer for stream `number` (None: for no stream in particular) and takes
    /// what is durable into the streams' positions.
    fn sync_writer(&mut self, number: Option<u32>) -> Result<(), StoreError> {
        if let Err(e) = self.writer.sync() {
            return Err(self.failed(e, number));
        }
        if self.settle() > 0 {
            self.failing
                .resolved(&"storing again (nothing acknowledged was lost)");
        }
        Ok(())
    }

    /// Takes the items the writer holds durable into their streams' positions and forgets
    /// the others (after a failure the writer forgot them too). Returns how many were taken;
    /// the streams of those forgotten are in `forgot`.
    fn settle_into(&mut self, forgot: &mut BTreeSet<u32>) -> usize {
        let durable = self.writer.durable();
        let mut last: BTreeMap<u32, Position> = BTreeMap::new();
        let mut taken = 0;
        for u in self.unsynced.drain(..) {
            if u.put < durable {
                let l = last.entry(u.number).or_default();
                *l = (*l).max(u.at);
                taken += 1;
            } else {
                forgot.insert(u.number);
            }
        }
        for s in self.streams.values_mut() {
            if let Some(&at) = last.get(&s.number) {
                s.last = s.last.max(at);
            }
        }
        // Nothing is left unsynced: resent items are checked against the streams' positions.
        self.pending.clear();
        taken
    }

    fn settle(&mut self) -> usize {
        let mut forgot = BTreeSet::new();
        let taken = self.settle_into(&mut forgot);
        self.lost.extend(forgot);
        taken
    }

    /// After the writer failed in a call for stream `number`: what it forgot is forgotten
    /// here too, the other streams that lost items are marked, and the episode goes on.
    fn failed(&mut self, e: SegmentError, number: Option<u32>) -> StoreError {
        let appended = self.unsynced.len();
        let mut forgot = BTreeSet::new();
        let taken = self.settle_into(&mut forgot);
        if let Some(n) = number {
            forgot.remove(&n);
        }
        self.lost.extend(forgot);
        match appended - taken {
            0 => self.failing.occurred(log::Level::Error, &e),
            n => self.failing.occurred(
                log::Level::Error,
                &format_args!(
                    "{e}; {n} items not stored: not acknowledged, their senders send them again"
                ),
            ),
        };
        e.into()
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
        self.sync_writer(None)?;
        let covers = self.writer.position();
        let path = self.dir.join(STREAMS_FILE);
        if let Err(source) = streams::write(&path, covers, &self.streams) {
            let e = StoreError::Io { path, source };
            self.failing.occurred(log::Level::Error, &e);
            return Err(e);
        }
        self.last_checkpoint = Instant::now();
        Ok(())
    }

    /// The main loop's: syncs what waited `Segment.SyncMs`, seals a segment `Segment.MaxAge` old.
    pub fn sync_if_due(&mut self) -> Result<(), StoreError> {
        let done = self
            .writer
            .sync_if_due()
            .and_then(|_| self.writer.rotate_if_due());
        done.map_err(|e| self.failed(e, None))?;
        Ok(())
    }

    pub fn rotate(&mut self) -> Result<(), StoreError> {
        self.writer.rotate().map_err(|e| self.failed(e, None))
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

/// Sets each stream's position to the last item the store holds of it (a store cut short
/// holds less than its checkpoint said). A stream the store holds nothing of had nothing
/// stored if the store is `whole`; otherwise its items may have been in the segments gone.
fn clamp(streams: &mut BTreeMap<String, Stream>, held: &BTreeMap<u32, Position>, whole: bool) {
    for (name, s) in streams.iter_mut() {
        let now = match held.get(&s.number) {
            Some(&at) => at,
            None if whole => Position::default(),
            None => s.last,
        };
        if now < s.last {
            log::warn!(
                "stream {name}: at {} by the checkpoint, the store holds it up to {now}: \
                 its sender sends the rest again",
                s.last
            );
        }
        s.last = now;
    }
}
