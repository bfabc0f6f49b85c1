//! A sender's next batch, built straight from the store in one of two forms (docs/formats.md,
//! "Wire protocol"):
//!
//! - ITEMS: each item read and its record's CRC checked here (a damaged record is skipped,
//!   logged and counted), its body copied into the frame;
//! - RECORDS: the records as they lie in the item file, read in runs (one `pread` for each
//!   run of consecutive records, no header read on its own) straight into the frame and not
//!   checked here: the frame's CRC is combined from the records' stored CRCs, and the
//!   receiver checks each record's. (`sendfile(2)` of the runs was slower on the machines
//!   measured: bench/README.md, bench-segments.) A sender falls back to ITEMS over
//!   the stretch of a session that failed, so a record damaged on this disk is found and
//!   skipped here instead of failing every session.

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::Ordering;

use focuser_formats::segment::record::RecordHeader;
use focuser_formats::segment::{crc, Cursor, Position, SegmentError, Status, Take};

use super::session::{fail, SessionError};
use super::{SenderState, Settings};
use crate::wire::batch::{batch_fixed, item_fixed, BATCH_FIXED, RECORDS_FIXED, WIRE_ITEM_FIXED};
use crate::wire::frame::{begin_frame, finish_frame_followed_by, FRAME_HEADER_LEN};
use crate::wire::{Batch, FrameType};

pub(super) struct Batcher {
    pub cursor: Cursor,
    /// The frame being built.
    out: Vec<u8>,
}

/// A batch built: where it ends, its items, and its bytes on the wire.
pub(super) struct Built {
    pub upto: Position,
    pub count: u32,
    pub bytes: u64,
}

impl Batcher {
    pub fn new(cursor: Cursor) -> Batcher {
        Batcher {
            cursor,
            out: Vec::new(),
        }
    }

    /// Starts a frame of `kind` with `fixed` bytes to fill in later; returns where it starts.
    fn begin(&mut self, kind: FrameType, fixed: usize) -> usize {
        self.out.clear();
        let start = begin_frame(kind, &mut self.out);
        self.out.resize(self.out.len() + fixed, 0);
        start
    }

    /// The next ITEMS frame: each item's body is read into the frame, where it is sent from.
    pub fn items(&mut self, st: &SenderState, settings: &Settings) -> Result<Built, SessionError> {
        self.items_picked(st, settings, &|_| Take::Read)
    }

    /// Like [`Batcher::items`], of the items `pick` takes (a resend's live items).
    pub fn items_picked(
        &mut self,
        st: &SenderState,
        settings: &Settings,
        pick: &dyn Fn(&RecordHeader) -> Take,
    ) -> Result<Built, SessionError> {
        let mut fill = Fill::new(st, settings);
        fill.pick = Some(pick);
        let start = self.begin(FrameType::Items, BATCH_FIXED);
        let frame = &mut self.out;
        // The CRC of the items part of the payload, from each item's fixed part and the body
        // CRC its record check computed: the bodies are not gone over a second time.
        let mut items_crc = 0u32;
        while fill.room() {
            let item_start = frame.len();
            frame.extend_from_slice(&[0u8; WIRE_ITEM_FIXED]);
            let got = self.cursor.next_raw(frame, |h| {
                let len = Batch::wire_len(
                    h.doc_id_len as usize,
                    h.url_len as usize,
                    h.content_len as usize,
                );
                fill.take(h, len)
            });
            skipped(st, &mut self.cursor, fill.oversized.take());
            match got {
                Ok(Some(raw)) => {
                    let h = raw.header;
                    let at = Position {
                        file_id: raw.file_id,
                        item_idx: raw.item_idx,
                    };
                    let lens = (
                        h.doc_id_len as usize,
                        h.url_len as usize,
                        h.content_len as usize,
                    );
                    let fixed = item_fixed(at, h.status, h.time_ms, lens);
                    frame[item_start..item_start + WIRE_ITEM_FIXED].copy_from_slice(&fixed);
                    let body_len = (frame.len() - item_start - WIRE_ITEM_FIXED) as u64;
                    let item_crc = crc::combine(crc::crc32c(&fixed), raw.body_crc, body_len);
                    items_crc =
                        crc::combine(items_crc, item_crc, WIRE_ITEM_FIXED as u64 + body_len);
                    fill.count += 1;
                }
                Ok(None) => {
                    frame.truncate(item_start);
                    break;
                }
                Err(e) => {
                    frame.truncate(item_start);
                    damaged(st, e)?;
                }
            }
        }
        let upto = self.cursor.position();
        let fixed_at = start + FRAME_HEADER_LEN;
        frame[fixed_at..fixed_at + BATCH_FIXED].copy_from_slice(&batch_fixed(upto, fill.count));
        let items_len = (frame.len() - fixed_at - BATCH_FIXED) as u64;
        let head_crc = crc::crc32c(&frame[start + 8..fixed_at + BATCH_FIXED]);
        finish_frame_followed_by(
            frame,
            start,
            crc::combine(head_crc, items_crc, items_len),
            0,
        );
        Ok(Built {
            upto,
            count: fill.count,
            bytes: frame.len() as u64,
        })
    }

    /// The next RECORDS frame: the records of one item file as they are stored, read in
    /// runs (one `pread` for each run of consecutive records) straight into the frame.
    pub fn records(
        &mut self,
        st: &SenderState,
        settings: &Settings,
    ) -> Result<Built, SessionError> {
        let mut fill = Fill::new(st, settings);
        let start = self.begin(FrameType::Records, RECORDS_FIXED);
        let frame = &mut self.out;
        let records_at = frame.len();
        let mut file_id = None;
        // The CRC of the records part of the payload, combined from their stored CRCs.
        let mut records_crc = 0u32;
        while fill.room() {
            let budget = fill.max_bytes.saturating_sub(fill.bytes).max(1);
            let got = self.cursor.next_records(frame, budget, |h| {
                // One batch, one file: the cursor lets go of a file it has left.
                if !fill.room() || *file_id.get_or_insert(h.file_id) != h.file_id {
                    return Take::Stop;
                }
                let len = h.len as usize;
                let take = fill.take(h, len);
                if take == Take::Read {
                    // The record as stored: its length and CRC, then what the CRC covers.
                    let mut first = [0u8; 8];
                    first[..4].copy_from_slice(&h.len.to_le_bytes());
                    first[4..].copy_from_slice(&h.crc.to_le_bytes());
                    let record_crc = crc::combine(crc::crc32c(&first), h.crc, len as u64 - 8);
                    records_crc = crc::combine(records_crc, record_crc, len as u64);
                    fill.count += 1;
                }
                take
            });
            skipped(st, &mut self.cursor, fill.oversized.take());
            match got {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => damaged(st, e)?,
            }
        }
        let records_len = (frame.len() - records_at) as u64;
        let upto = self.cursor.position();
        let fixed_at = start + FRAME_HEADER_LEN;
        frame[fixed_at..fixed_at + RECORDS_FIXED].copy_from_slice(&batch_fixed(upto, fill.count));
        let head_crc = crc::crc32c(&frame[start + 8..records_at]);
        let frame_crc = crc::combine(head_crc, records_crc, records_len);
        finish_frame_followed_by(frame, start, frame_crc, 0);
        Ok(Built {
            upto,
            count: fill.count,
            bytes: frame.len() as u64,
        })
    }

    /// Sends the batch built last.
    pub fn send(&mut self, s: &mut TcpStream) -> Result<(), SessionError> {
        s.write_all(&self.out)
            .map_err(|e| fail(format!("send: {e}")))
    }
}

/// What goes into one batch: the group's statuses, items that fit a frame, up to
/// `Send.BatchItems` items and `Send.BatchBytes` bytes (at least one item).
struct Fill<'a> {
    statuses: &'a [Status],
    max_item: usize,
    max_items: usize,
    max_bytes: usize,
    count: u32,
    bytes: usize,
    /// An item passed over for being larger than a frame: (file_id, item_idx, bytes).
    oversized: Option<(u64, u32, usize)>,
    /// Decides first, when set: a resend takes only the live items before its snapshot.
    pick: Option<&'a dyn Fn(&RecordHeader) -> Take>,
}

impl<'a> Fill<'a> {
    fn new(st: &'a SenderState, settings: &Settings) -> Fill<'a> {
        Fill {
            statuses: &st.spec.statuses,
            max_item: settings
                .max_frame
                .saturating_sub(FRAME_HEADER_LEN + BATCH_FIXED),
            max_items: settings.send.batch_items,
            max_bytes: settings.send.batch_bytes,
            count: 0,
            bytes: 0,
            oversized: None,
            pick: None,
        }
    }

    fn room(&self) -> bool {
        (self.count as usize) < self.max_items
    }

    /// Whether the item with header `h`, `len` bytes in the frame, goes into the batch.
    fn take(&mut self, h: &RecordHeader, len: usize) -> Take {
        match self.pick.map(|pick| pick(h)) {
            Some(Take::Read) | None => {}
            Some(other) => return other,
        }
        if !self.statuses.contains(&h.status) {
            Take::Skip
        } else if len > self.max_item {
            self.oversized = Some((h.file_id, h.item_idx, len));
            Take::Skip
        } else if self.count > 0 && self.bytes + len > self.max_bytes {
            Take::Stop
        } else {
            self.bytes += len;
            Take::Read
        }
    }
}

/// Logs what the cursor passed over: an item too large for a frame, deleted segments.
fn skipped(st: &SenderState, cursor: &mut Cursor, oversized: Option<(u64, u32, usize)>) {
    if let Some((file_id, item_idx, len)) = oversized {
        log::error!(
            "sender {} {}: item {file_id}:{item_idx} ({len} bytes) exceeds MaxFrame; skipped",
            st.spec.group,
            st.spec.address
        );
        st.corrupt_items.fetch_add(1, Ordering::Relaxed);
    }
    if let Some((from, to)) = cursor.take_gap() {
        log::error!(
            "sender {} {}: segments {from}..{to} were deleted before they were sent",
            st.spec.group,
            st.spec.address
        );
    }
}

/// A damaged item, or a segment's damaged tail, is skipped (logged once, its items counted);
/// any other store error ends the session.
fn damaged(st: &SenderState, e: SegmentError) -> Result<(), SessionError> {
    match e {
        e if e.is_damage() => {
            log::error!("sender {} {}: skipping {e}", st.spec.group, st.spec.address);
            st.corrupt_items
                .fetch_add(e.items_skipped(), Ordering::Relaxed);
            Ok(())
        }
        e => Err(fail(format!("reading the store: {e}"))),
    }
}

#[cfg(test)]
mod truncation;
