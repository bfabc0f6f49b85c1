//! The payloads of each frame type, typed.

use focuser_formats::segment::crc;
use focuser_formats::segment::record::{RecordHeader, RECORD_HEADER_LEN};
use focuser_formats::segment::{Item, ItemRef, Origin, Position, Status};

use super::frame::{put_string, Fields, FrameError, FrameType, Unchecked};

pub const MAGIC: &[u8; 8] = b"FOCUSER\0";
pub const PROTOCOL_VERSION: u16 = 1;
pub const NONCE_LEN: usize = 32;
pub const MAC_LEN: usize = 32;

/// What a connection carries after the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    Items = 1,
    Files = 2,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub mode: Mode,
    pub stream: String,
    pub nonce: [u8; NONCE_LEN],
}

impl Hello {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        out.push(self.mode as u8);
        put_string(&mut out, &self.stream);
        out.extend_from_slice(&self.nonce);
        out
    }

    pub fn decode(b: &[u8]) -> Result<Hello, FrameError> {
        let mut f = Fields::new(b, "HELLO");
        let bad = |reason| FrameError::BadPayload {
            what: "HELLO",
            reason,
        };
        if f.bytes(8)? != MAGIC {
            return Err(bad("bad magic"));
        }
        if f.u16()? != PROTOCOL_VERSION {
            return Err(bad("unsupported protocol version"));
        }
        let mode = match f.u8()? {
            1 => Mode::Items,
            2 => Mode::Files,
            _ => return Err(bad("unknown mode")),
        };
        let stream = f.string()?;
        let nonce = nonce(&mut f)?;
        f.end()?;
        Ok(Hello {
            mode,
            stream,
            nonce,
        })
    }
}

pub fn nonce(f: &mut Fields<'_>) -> Result<[u8; NONCE_LEN], FrameError> {
    let mut n = [0u8; NONCE_LEN];
    n.copy_from_slice(f.bytes(NONCE_LEN)?);
    Ok(n)
}

/// WELCOME: the receiver's proof that it knows the secret too, and where the stream stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Welcome {
    pub mac: [u8; MAC_LEN],
    /// The last item of this stream the receiver holds ((0, 0): none).
    pub last: Position,
}

impl Welcome {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.mac.to_vec();
        put_position(&mut out, self.last);
        out
    }

    pub fn decode(b: &[u8]) -> Result<Welcome, FrameError> {
        let mut f = Fields::new(b, "WELCOME");
        let mac = nonce(&mut f)?;
        let last = position(&mut f)?;
        f.end()?;
        Ok(Welcome { mac, last })
    }
}

pub fn put_position(out: &mut Vec<u8>, p: Position) {
    out.extend_from_slice(&p.file_id.to_le_bytes());
    out.extend_from_slice(&p.item_idx.to_le_bytes());
}

pub fn position(f: &mut Fields<'_>) -> Result<Position, FrameError> {
    Ok(Position {
        file_id: f.u64()?,
        item_idx: f.u32()?,
    })
}

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
            let status = Status::from_byte(f.u8()?).ok_or(bad("unknown status"))?;
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

/// ERROR: a code and a message a person can read; the connection closes after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorMsg {
    pub code: u16,
    pub message: String,
}

pub mod code {
    pub const PROTOCOL: u16 = 1;
    pub const NOT_ALLOWED: u16 = 2;
    pub const AUTH: u16 = 3;
    pub const BAD_NAME: u16 = 4;
    pub const BAD_FILE: u16 = 5;
    pub const STORE: u16 = 6;
    pub const BUSY: u16 = 7;
}

impl ErrorMsg {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.code.to_le_bytes().to_vec();
        put_string(&mut out, &self.message);
        out
    }

    pub fn decode(b: &[u8]) -> Result<ErrorMsg, FrameError> {
        let mut f = Fields::new(b, "ERROR");
        let code = f.u16()?;
        let message = f.string()?;
        Ok(ErrorMsg { code, message })
    }
}

/// FILE_BEGIN: a whole file follows in FILE_DATA frames, then FILE_END with its CRC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBegin {
    pub name: String,
    pub size: u64,
}

impl FileBegin {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_string(&mut out, &self.name);
        out.extend_from_slice(&self.size.to_le_bytes());
        out
    }

    pub fn decode(b: &[u8]) -> Result<FileBegin, FrameError> {
        let mut f = Fields::new(b, "FILE_BEGIN");
        let name = f.string()?;
        let size = f.u64()?;
        f.end()?;
        Ok(FileBegin { name, size })
    }
}

/// A name received for a file is only ever a plain name: no separator, no `..`, no NUL, not
/// hidden (temporary names start with a dot), not empty, at most 255 bytes.
pub fn check_file_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 255 {
        return Err("empty or longer than 255 bytes");
    }
    if name.contains('/') || name.contains('\\') {
        return Err("contains a path separator");
    }
    if name.contains('\0') {
        return Err("contains a NUL");
    }
    if name.starts_with('.') {
        return Err("starts with a dot");
    }
    if name.chars().any(char::is_control) {
        return Err("contains a control character");
    }
    Ok(())
}

/// Stream names become directory names on the receiver: letters, digits, `.`, `_`, `-`.
pub fn check_stream_name(name: &str) -> Result<(), &'static str> {
    check_file_name(name)?;
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err("only letters, digits, '.', '_' and '-' are allowed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(n: u8) -> Item {
        Item {
            status: Status::Update,
            doc_id: vec![b'd', n],
            url: b"http://x/".to_vec(),
            content: vec![n; n as usize],
            time_ms: 5,
            origin: Origin::default(),
        }
    }

    #[test]
    fn batches_round_trip_and_every_truncation_fails() {
        let b = Batch {
            upto: Position {
                file_id: 3,
                item_idx: 9,
            },
            items: vec![
                WireItem {
                    at: Position {
                        file_id: 3,
                        item_idx: 2,
                    },
                    item: item(4),
                },
                WireItem {
                    at: Position {
                        file_id: 3,
                        item_idx: 8,
                    },
                    item: item(9),
                },
            ],
        };
        let mut out = Vec::new();
        b.encode_into(&mut out);
        assert_eq!(Batch::decode(&out).unwrap(), b);
        for cut in 0..out.len() {
            assert!(Batch::decode(&out[..cut]).is_err(), "cut {cut}");
        }
        let mut backwards = b.clone();
        backwards.items.swap(0, 1);
        let mut out = Vec::new();
        backwards.encode_into(&mut out);
        assert!(Batch::decode(&out).is_err());
    }

    #[test]
    fn a_checked_decode_gives_body_crcs_and_catches_every_flipped_bit() {
        use crate::wire::frame::{encode_frame, read_frame_unchecked};
        let b = Batch {
            upto: Position {
                file_id: 3,
                item_idx: 9,
            },
            items: (1..4)
                .map(|n| WireItem {
                    at: Position {
                        file_id: 3,
                        item_idx: n,
                    },
                    item: item(n as u8 * 5),
                })
                .collect(),
        };
        let mut payload = Vec::new();
        b.encode_into(&mut payload);
        let mut frame = Vec::new();
        encode_frame(FrameType::Items, &payload, &mut frame);
        let (mut got, mut crcs) = (Vec::new(), Vec::new());
        let head = read_frame_unchecked(&mut &frame[..], 1 << 20, &mut got).unwrap();
        let back = BatchRef::decode_checked(&got, head, &mut crcs).unwrap();
        assert_eq!(back, b.as_ref());
        let want: Vec<u32> = b
            .items
            .iter()
            .map(|w| crc::crc32c(&[&w.item.doc_id[..], &w.item.url, &w.item.content].concat()))
            .collect();
        assert_eq!(crcs, want);
        for i in 4..frame.len() {
            let mut bad = frame.clone();
            bad[i] ^= 0x10;
            let Ok(head) = read_frame_unchecked(&mut &bad[..], 1 << 20, &mut got) else {
                continue; // a length no longer matching the bytes
            };
            assert!(
                BatchRef::decode_checked(&got, head, &mut crcs).is_err(),
                "byte {i}"
            );
        }
    }

    #[test]
    fn hostile_names_are_refused() {
        for bad in ["", "../x", "a/b", "..", ".hidden", "a\0b", "x\ny"] {
            assert!(check_file_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_file_name("master1-0000000042.q").is_ok());
        assert!(check_stream_name("node 1").is_err());
        assert!(check_stream_name("master1.node3").is_ok());
    }

    /// A RECORDS frame as a sender builds it: `(header, payload)`, the CRC worked out before
    /// `damage` is applied to the payload (as a record damaged on the sender's disk).
    fn records_frame(
        items: &[(u32, Item)],
        damage: impl FnOnce(&mut Vec<u8>),
    ) -> (Unchecked, Vec<u8>) {
        let upto = Position {
            file_id: 3,
            item_idx: 100,
        };
        let mut payload = batch_fixed(upto, items.len() as u32).to_vec();
        for (idx, it) in items {
            focuser_formats::segment::record::encode_record(&it.as_ref(), 3, *idx, &mut payload);
        }
        let head = Unchecked {
            kind: FrameType::Records as u8,
            crc: crc::append(crc::crc32c(&[FrameType::Records as u8]), &payload),
        };
        damage(&mut payload);
        (head, payload)
    }

    #[test]
    fn records_decode_to_the_stored_items_with_their_body_crcs() {
        let items: Vec<(u32, Item)> = vec![(1, item(3)), (2, item(0)), (7, item(200))];
        let (head, payload) = records_frame(&items, |_| {});
        let mut crcs = vec![9];
        let b = BatchRef::decode_checked(&payload, head, &mut crcs).unwrap();
        assert_eq!(
            b.upto,
            Position {
                file_id: 3,
                item_idx: 100
            }
        );
        assert_eq!(b.items.len(), 3);
        for ((w, (idx, it)), c) in b.items.iter().zip(&items).zip(&crcs) {
            assert_eq!(
                w.at,
                Position {
                    file_id: 3,
                    item_idx: *idx
                }
            );
            assert_eq!(w.item, it.as_ref());
            assert_eq!(
                *c,
                crc::crc32c(&[&it.doc_id[..], &it.url, &it.content].concat())
            );
        }
    }

    #[test]
    fn a_damaged_record_body_is_named_and_nothing_is_taken() {
        let items: Vec<(u32, Item)> = vec![(1, item(3)), (2, item(50)), (3, item(4))];
        // The second record's content: 16 fixed + 59 + 56 header + 2 + 9 + 10 bytes in.
        let at = BATCH_FIXED + RECORD_HEADER_LEN + 2 + 9 + 3 + RECORD_HEADER_LEN + 2 + 9 + 10;
        let (head, payload) = records_frame(&items, |p| p[at] ^= 0x40);
        let mut crcs = Vec::new();
        let e = BatchRef::decode_checked(&payload, head, &mut crcs).unwrap_err();
        assert!(
            matches!(
                e,
                FrameError::BadRecord {
                    file_id: 3,
                    item_idx: 2
                }
            ),
            "{e}"
        );
        assert!(crcs.is_empty());
        // A record's length or CRC field damaged: the frame's CRC fails.
        let (head, payload) = records_frame(&items, |p| p[BATCH_FIXED + 5] ^= 1);
        assert!(matches!(
            BatchRef::decode_checked(&payload, head, &mut crcs),
            Err(FrameError::BadCrc)
        ));
    }

    #[test]
    fn malformed_records_payloads_are_refused() {
        let bad = |items: &[(u32, Item)], damage: fn(&mut Vec<u8>)| {
            let (head, payload) = records_frame(items, |_| {});
            let mut damaged = payload.clone();
            damage(&mut damaged);
            // Sent with a CRC over the damaged bytes: the decoding itself must refuse it.
            let head = Unchecked {
                kind: head.kind,
                crc: crc::append(crc::crc32c(&[head.kind]), &damaged),
            };
            BatchRef::decode_checked(&damaged, head, &mut Vec::new()).unwrap_err()
        };
        let two = [(1, item(3)), (2, item(4))];
        let reason = |e: FrameError| e.to_string();
        assert!(reason(bad(&two, |p| p.push(0))).contains("bytes after the last record"));
        assert!(reason(bad(&two, |p| p.truncate(p.len() - 1))).contains("past the payload"));
        let back = [(2, item(3)), (1, item(4))];
        assert!(reason(bad(&back, |_| {})).contains("not increasing"));
        // One record more than there are.
        assert!(reason(bad(&two, |p| p[12] = 3)).contains("short record header"));
        let past = [(1, item(3)), (100, item(4))];
        assert!(reason(bad(&past, |_| {})).contains("at or past the batch's end"));
    }

    #[test]
    fn every_flipped_bit_of_a_records_frame_is_refused() {
        let items: Vec<(u32, Item)> = vec![(1, item(3)), (4, item(9))];
        let (head, good) = records_frame(&items, |_| {});
        for bit in 0..good.len() * 8 {
            let mut p = good.clone();
            p[bit / 8] ^= 1 << (bit % 8);
            let mut crcs = Vec::new();
            assert!(
                BatchRef::decode_checked(&p, head, &mut crcs).is_err(),
                "bit {bit} flipped went through"
            );
            assert!(crcs.is_empty());
        }
    }
}
