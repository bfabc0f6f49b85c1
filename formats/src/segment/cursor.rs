//! Reading a store in order while its writer appends: follow the index of each segment, move
//! on once the next segment exists (the seal is then done), skip other partitions by the
//! index's hash, report damage once and go on past it.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::reader::{Located, Partition, SegmentIndex};
use super::record::{RecordHeader, MAX_RECORD_LEN, RECORD_HEADER_LEN};
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
    /// An error met after [`Cursor::next_records`] had taken records: returned next.
    deferred: Option<SegmentError>,
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
            deferred: None,
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
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
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

    /// The next records of one segment, appended to `out` as they are stored (header and
    /// body): for a caller that ships records as they are. Runs of consecutive records are
    /// read with one `pread` each (their lengths come from the index), so no header is read
    /// on its own but the last one the index has. `decide` sees each header, its place
    /// checked; a record it skips is taken out of `out` again. Stops at the segment's end,
    /// when nothing more is durable, when `decide` says [`Take::Stop`], or once `max_read`
    /// bytes were read. Returns the records taken. A damaged record is returned as an error
    /// and gone past, as by [`Cursor::next_located`] — by the next call when records were
    /// taken before it. The records' CRCs are not checked here (the receiver checks them).
    pub fn next_records(
        &mut self,
        out: &mut Vec<u8>,
        max_read: usize,
        mut decide: impl FnMut(&RecordHeader) -> Take,
    ) -> Result<u32, SegmentError> {
        let (mut taken, mut read, mut file) = (0u32, 0usize, None);
        loop {
            let idx = match self.peek() {
                Ok(Some(idx)) => idx,
                Ok(None) => return Ok(taken),
                Err(e) if taken == 0 => return Err(e),
                Err(e) => {
                    self.deferred = Some(e);
                    return Ok(taken);
                }
            };
            // One call, one segment.
            if *file.get_or_insert(self.pos.file_id) != self.pos.file_id {
                return Ok(taken);
            }
            match self.read_run(idx, out, max_read - read.min(max_read), &mut decide) {
                Ok((n, bytes, more)) => {
                    taken += n;
                    read += bytes;
                    if !more || read >= max_read {
                        return Ok(taken);
                    }
                }
                Err(e) if taken == 0 => return Err(e),
                Err(e) => {
                    self.deferred = Some(e);
                    return Ok(taken);
                }
            }
        }
    }

    /// One run of [`Cursor::next_records`] from item `idx`: (records taken, bytes read,
    /// whether to go on). On an error the cursor is past the damaged record and `out` as it
    /// was before it.
    fn read_run(
        &mut self,
        idx: u32,
        out: &mut Vec<u8>,
        budget: usize,
        decide: &mut impl FnMut(&RecordHeader) -> Take,
    ) -> Result<(u32, usize, bool), SegmentError> {
        let Some(seg) = self.seg.as_ref() else {
            return Ok((0, 0, false));
        };
        let at = out.len();
        let mut run = run_of(seg, self.partition, idx, budget);
        // A run the file does not hold whole (an active segment cut short) is read again as
        // its first record alone, which may be whole.
        for first_alone in [false, true] {
            if first_alone {
                run = run_of(seg, self.partition, idx, 0);
            }
            let Ok((start, _, end)) = run else { break };
            out.resize(at + (end - start) as usize, 0);
            match seg.read_stored(&mut out[at..], start, idx) {
                Ok(()) => break,
                Err(e) => {
                    out.truncate(at);
                    run = Err(e);
                }
            }
        }
        let (start, last, end) = match run {
            Ok(run) => run,
            Err(e) => {
                self.pos.item_idx = idx + 1;
                return Err(e);
            }
        };
        // `p`: where item `k` is in `out`; `off`: where it is in the file.
        let (mut p, mut off, mut taken) = (at, start, 0);
        for k in idx..=last {
            let len = match seg.span(k) {
                Some((from, Some(to))) if k < last => to - from,
                _ => end - off,
            } as usize;
            let h = match checked_header(seg, k, &out[p..], len, off) {
                Ok(h) => h,
                Err(e) => {
                    out.truncate(p);
                    self.pos.item_idx = k + 1;
                    if taken == 0 {
                        return Err(e);
                    }
                    self.deferred = Some(e);
                    return Ok((taken, (end - start) as usize, false));
                }
            };
            match decide(&h) {
                Take::Read => {
                    taken += 1;
                    p += len;
                }
                Take::Skip => {
                    out.drain(p..p + len);
                }
                Take::Stop => {
                    out.truncate(p);
                    self.pos.item_idx = k;
                    return Ok((taken, (end - start) as usize, false));
                }
            }
            self.pos.item_idx = k + 1;
            off += len as u64;
        }
        Ok((taken, (end - start) as usize, true))
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

/// The run of records from item `idx`: consecutive items of the partition whose ends the index
/// gives, within `budget` bytes (at least `idx` itself): (first offset, last item, end offset).
/// The last item the index has is measured by its header.
fn run_of(
    seg: &SegmentIndex,
    partition: Option<Partition>,
    idx: u32,
    budget: usize,
) -> Result<(u64, u32, u64), SegmentError> {
    let Some((start, end)) = seg.span(idx) else {
        return Err(seg.misplaced(idx, 0, "no such item"));
    };
    let mut end = match end {
        Some(end) => end,
        None => {
            let at = seg.header(idx)?;
            at.offset + u64::from(at.header.len)
        }
    };
    if end < start + RECORD_HEADER_LEN as u64 || end - start > MAX_RECORD_LEN as u64 {
        return Err(seg.misplaced(idx, start, "record length disagrees with the index"));
    }
    let mut last = idx;
    while ((end - start) as usize) < budget && last < seg.len() {
        let next = last + 1;
        let wanted = match (partition, seg.doc_hash(next)) {
            (Some(p), Some(h)) => p.wants(h),
            _ => true,
        };
        match seg.span(next) {
            Some((from, Some(to))) if wanted && from == end && to > from => {
                last = next;
                end = to;
            }
            _ => break,
        }
    }
    Ok((start, last, end))
}

/// The header of item `k` at the start of `bytes`, `len` bytes long as the index says: its
/// place checked.
fn checked_header(
    seg: &SegmentIndex,
    k: u32,
    bytes: &[u8],
    len: usize,
    offset: u64,
) -> Result<RecordHeader, SegmentError> {
    let head = bytes
        .get(..RECORD_HEADER_LEN)
        .ok_or_else(|| seg.misplaced(k, offset, "record shorter than its header"))?;
    let h = RecordHeader::decode(head).map_err(|r| seg.misplaced(k, offset, r))?;
    if h.file_id != seg.file_id() || h.item_idx != k {
        return Err(seg.misplaced(k, offset, "record of another place"));
    }
    if h.len as usize != len || len > bytes.len() {
        return Err(seg.misplaced(k, offset, "record length disagrees with the index"));
    }
    Ok(h)
}
