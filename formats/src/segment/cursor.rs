//! Reading a store in order while its writer appends: follow the index of each segment, move
//! on once the next segment exists (the seal is then done), skip other partitions by the
//! index's hash, report damage once and go on past it.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::reader::{Located, Partition, SegmentIndex};
use super::record::RecordHeader;
use super::{list_segments, Position, SegmentError, StoredItem};

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
    /// The active segment whose header is bad, reported already: it is waited on quietly.
    bad_header: Option<u64>,
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
            bad_header: None,
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
                        let at = self.pos.file_id;
                        match ids.iter().find(|&&id| id > at) {
                            Some(&next) => {
                                self.pos = Position {
                                    file_id: next,
                                    item_idx: 1,
                                }
                            }
                            None if self.bad_header == Some(at) => return Ok(None),
                            None => self.bad_header = Some(at),
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
                    // Past the segment's end: its damaged tail, if any, is reported once.
                    let damage = seg.take_damage().and_then(|e| unread(e, idx));
                    self.pos = Position {
                        file_id: self.pos.file_id + 1,
                        item_idx: 1,
                    };
                    match damage {
                        Some(e) => return Err(e),
                        None => continue,
                    }
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
        self.seg.as_ref().map(|s| s.item_file())
    }
}

/// The damaged tail `e` as seen from item `from` on: the lost items before it were passed
/// already (a position saved before the damage); None if all were.
fn unread(e: SegmentError, from: u32) -> Option<SegmentError> {
    match e {
        SegmentError::DamagedTail {
            path,
            item_idx,
            offset,
            items,
            reason,
        } if from > item_idx => {
            let left = item_idx.saturating_add(items).saturating_sub(from);
            (left > 0).then_some(SegmentError::DamagedTail {
                path,
                item_idx,
                offset,
                items: left,
                reason,
            })
        }
        e => Some(e),
    }
}
