//! Items on the wire: ITEMS batches (each item with its place in the sender's store) and
//! RECORDS batches (stored records as they lie on disk), encoded and decoded in place.

use focuser_formats::segment::crc;
use focuser_formats::segment::record::{RecordHeader, RECORD_HEADER_LEN};
use focuser_formats::segment::{Item, ItemRef, Origin, Position, Status};

use super::frame::{Fields, FrameError, FrameType, Unchecked};
use super::messages::position;

/// One item on the wire, with its place in the sender's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireItem {
    pub at: Position,
    pub item: Item,
}

/// ITEMS: a batch, and how far the sender's scan got (past items of other partitions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub upto: Position,
    pub items: Vec<WireItem>,
}

/// A batch decoded in place: its items borrow the frame's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchRef<'a> {
    pub upto: Position,
    pub items: Vec<WireItemRef<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireItemRef<'a> {
    pub at: Position,
    pub item: ItemRef<'a>,
}

/// The fixed bytes of an item on the wire, before its doc id, url and content.
pub const WIRE_ITEM_FIXED: usize = 8 + 4 + 1 + 8 + 2 + 4 + 4;
/// The fixed bytes of a batch, before its items: upto and the count.
pub const BATCH_FIXED: usize = 8 + 4 + 4;

/// The fixed part of one item: place, status, time, and the three lengths.
pub fn item_fixed(
    at: Position,
    status: Status,
    time_ms: u64,
    lens: (usize, usize, usize),
) -> [u8; WIRE_ITEM_FIXED] {
    let mut b = [0u8; WIRE_ITEM_FIXED];
    b[0..8].copy_from_slice(&at.file_id.to_le_bytes());
    b[8..12].copy_from_slice(&at.item_idx.to_le_bytes());
    b[12] = status as u8;
    b[13..21].copy_from_slice(&time_ms.to_le_bytes());
    b[21..23].copy_from_slice(&(lens.0 as u16).to_le_bytes());
    b[23..27].copy_from_slice(&(lens.1 as u32).to_le_bytes());
    b[27..31].copy_from_slice(&(lens.2 as u32).to_le_bytes());
    b
}

/// The fixed part of a batch.
pub fn batch_fixed(upto: Position, count: u32) -> [u8; BATCH_FIXED] {
    let mut b = [0u8; BATCH_FIXED];
    b[0..8].copy_from_slice(&upto.file_id.to_le_bytes());
    b[8..12].copy_from_slice(&upto.item_idx.to_le_bytes());
    b[12..16].copy_from_slice(&count.to_le_bytes());
    b
}

impl Batch {
    pub fn as_ref(&self) -> BatchRef<'_> {
        BatchRef {
            upto: self.upto,
            items: self
                .items
                .iter()
                .map(|w| WireItemRef {
                    at: w.at,
                    item: w.item.as_ref(),
                })
                .collect(),
        }
    }

    pub fn encode_into(&self, out: &mut Vec<u8>) {
        self.as_ref().encode_into(out)
    }

    /// Bytes this item adds to a batch.
    pub fn wire_len(doc_id: usize, url: usize, content: usize) -> usize {
        WIRE_ITEM_FIXED + doc_id + url + content
    }

    pub fn decode(b: &[u8]) -> Result<Batch, FrameError> {
        let r = BatchRef::decode(b)?;
        Ok(Batch {
            upto: r.upto,
            items: r
                .items
                .iter()
                .map(|w| WireItem {
                    at: w.at,
                    item: w.item.to_owned(),
                })
                .collect(),
        })
    }
}

impl<'a> BatchRef<'a> {
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&batch_fixed(self.upto, self.items.len() as u32));
        for w in &self.items {
            let i = &w.item;
            let lens = (i.doc_id.len(), i.url.len(), i.content.len());
            out.extend_from_slice(&item_fixed(w.at, i.status, i.time_ms, lens));
            out.extend_from_slice(i.doc_id);
            out.extend_from_slice(i.url);
            out.extend_from_slice(i.content);
        }
    }

    pub fn decode(b: &'a [u8]) -> Result<BatchRef<'a>, FrameError> {
        let mut f = Fields::new(b, "ITEMS");
        let bad = |reason| FrameError::BadPayload {
            what: "ITEMS",
            reason,
        };
        let upto = position(&mut f)?;
        let count = f.u32()? as usize;
        let mut items: Vec<WireItemRef<'a>> =
            Vec::with_capacity(count.min(b.len() / WIRE_ITEM_FIXED));
        for _ in 0..count {
            let at = position(&mut f)?;
            // KEEP stays in its owner's store: never on the wire.
            let status = Status::from_byte(f.u8()?)
                .filter(|s| *s != Status::Keep)
                .ok_or(bad("unknown status"))?;
            let time_ms = f.u64()?;
            let d = f.u16()? as usize;
            let u = f.u32()? as usize;
            let c = f.u32()? as usize;
            let doc_id = f.bytes(d)?;
            let url = f.bytes(u)?;
            let content = f.bytes(c)?;
            if at.item_idx == 0 || items.last().is_some_and(|p| p.at >= at) {
                return Err(bad("item positions not increasing"));
            }
            items.push(WireItemRef {
                at,
                item: ItemRef {
                    status,
                    doc_id,
                    url,
                    content,
                    time_ms,
                    origin: Origin::default(),
                },
            });
        }
        f.end()?;
        if items.last().is_some_and(|w| w.at >= upto) {
            return Err(bad("an item at or past the batch's end"));
        }
        Ok(BatchRef { upto, items })
    }
}

impl<'a> BatchRef<'a> {
    /// Decodes the payload of a frame read with [`read_frame_unchecked`], checking its CRC in
    /// the same single pass over the bytes: each item's body (doc id ‖ url ‖ content) gets its
    /// own CRC, put in `body_crcs` for the store's records, and the frame's is combined from
    /// the pieces. A frame whose CRC fails is `BadCrc` however its payload decodes.
    ///
    /// [`read_frame_unchecked`]: super::frame::read_frame_unchecked
    pub fn decode_checked(
        b: &'a [u8],
        head: Unchecked,
        body_crcs: &mut Vec<u32>,
    ) -> Result<BatchRef<'a>, FrameError> {
        body_crcs.clear();
        if head.kind == FrameType::Records as u8 {
            return Self::decode_records_checked(b, head, body_crcs);
        }
        if head.kind != FrameType::Items as u8 {
            head.check(b)?;
            return Err(FrameError::BadPayload {
                what: "stream",
                reason: "only ITEMS and RECORDS frames are expected after the handshake",
            });
        }
        let batch = match BatchRef::decode(b) {
            Ok(batch) => batch,
            Err(e) => {
                head.check(b)?;
                return Err(e);
            }
        };
        let mut crc = crc::append(crc::crc32c(&[head.kind]), &b[..BATCH_FIXED]);
        let mut at = BATCH_FIXED;
        for w in &batch.items {
            let i = &w.item;
            let n = i.doc_id.len() + i.url.len() + i.content.len();
            let body_at = at + WIRE_ITEM_FIXED;
            crc = crc::append(crc, &b[at..body_at]);
            let body = crc::crc32c(&b[body_at..body_at + n]);
            crc = focuser_formats::segment::crc::combine(crc, body, n as u64);
            body_crcs.push(body);
            at = body_at + n;
        }
        // `decode` checked that the items end where the payload does.
        if crc != head.crc {
            body_crcs.clear();
            return Err(FrameError::BadCrc);
        }
        Ok(batch)
    }
}

/// The fixed bytes of a RECORDS frame before its records: upto and the count, as for ITEMS.
pub const RECORDS_FIXED: usize = BATCH_FIXED;

impl<'a> BatchRef<'a> {
    /// Decodes a RECORDS payload (`upto`, count, then stored records exactly as they lie in
    /// the sender's item file: docs/formats.md), checking in one pass over the bytes each
    /// record's own CRC, then the frame's (which the sender combined from the records' stored
    /// CRCs, so it covers their headers and the bodies are covered by those). The sender
    /// ships records it has not read (`sendfile`): a record damaged on its disk or on the way
    /// fails as [`FrameError::BadRecord`], and nothing of the frame is stored.
    pub fn decode_records_checked(
        b: &'a [u8],
        head: Unchecked,
        body_crcs: &mut Vec<u32>,
    ) -> Result<BatchRef<'a>, FrameError> {
        body_crcs.clear();
        let result = Self::records(b, head, body_crcs);
        if result.is_err() {
            body_crcs.clear();
        }
        result
    }

    fn records(
        b: &'a [u8],
        head: Unchecked,
        body_crcs: &mut Vec<u32>,
    ) -> Result<BatchRef<'a>, FrameError> {
        let bad = |reason| FrameError::BadPayload {
            what: "RECORDS",
            reason,
        };
        // A payload that does not decode is a bad frame if its CRC says so.
        let undecodable = |e: FrameError| head.check(b).err().unwrap_or(e);
        let mut f = Fields::new(b, "RECORDS");
        let upto = position(&mut f).map_err(undecodable)?;
        let count = f.u32().map_err(undecodable)? as usize;
        let mut items: Vec<WireItemRef<'a>> =
            Vec::with_capacity(count.min(b.len() / RECORD_HEADER_LEN));
        let mut crc = crc::append(crc::crc32c(&[head.kind]), &b[..RECORDS_FIXED]);
        let mut at = RECORDS_FIXED;
        let mut damaged = None;
        for _ in 0..count {
            let rest = &b[at..];
            let h = RecordHeader::decode(rest).map_err(|r| undecodable(bad(r)))?;
            let len = h.len as usize;
            let rec = rest
                .get(..len)
                .ok_or_else(|| undecodable(bad("a record runs past the payload")))?;
            let place = Position {
                file_id: h.file_id,
                item_idx: h.item_idx,
            };
            if items.last().is_some_and(|p| p.at >= place) {
                return Err(undecodable(bad("record positions not increasing")));
            }
            let body = &rec[RECORD_HEADER_LEN..];
            let body_crc = crc::crc32c(body);
            let rest_crc = crc::combine(
                crc::crc32c(&rec[8..RECORD_HEADER_LEN]),
                body_crc,
                body.len() as u64,
            );
            if rest_crc != h.crc && damaged.is_none() {
                damaged = Some(place);
            }
            // The frame's CRC goes on from the record's stored CRC, as the sender worked it
            // out without reading the body: the bodies are covered by their records' CRCs.
            crc = crc::combine(crc::append(crc, &rec[..8]), h.crc, (len - 8) as u64);
            let d = h.doc_id_len as usize;
            let u = d + h.url_len as usize;
            items.push(WireItemRef {
                at: place,
                item: ItemRef {
                    status: h.status,
                    doc_id: &body[..d],
                    url: &body[d..u],
                    content: &body[u..],
                    time_ms: h.time_ms,
                    origin: Origin::default(),
                },
            });
            body_crcs.push(body_crc);
            at += len;
        }
        if at != b.len() {
            return Err(undecodable(bad("bytes after the last record")));
        }
        if crc != head.crc {
            return Err(FrameError::BadCrc);
        }
        if let Some(p) = damaged {
            return Err(FrameError::BadRecord {
                file_id: p.file_id,
                item_idx: p.item_idx,
            });
        }
        if items.last().is_some_and(|w| w.at >= upto) {
            return Err(bad("an item at or past the batch's end"));
        }
        Ok(BatchRef { upto, items })
    }
}

#[cfg(test)]
mod tests;
