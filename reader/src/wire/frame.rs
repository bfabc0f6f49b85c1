//! Frames on the wire (docs/formats.md, "Wire protocol"): `len u32 | crc32c u32 | type u8 |
//! payload`, little-endian; `len` counts the type byte and the payload, the CRC covers them.

use std::io::{Read, Write};

use focuser_formats::segment::crc;

pub const FRAME_HEADER_LEN: usize = 9;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameType {
    Hello = 1,
    Challenge = 2,
    Auth = 3,
    Welcome = 4,
    Items = 5,
    Ack = 6,
    Error = 7,
    FileBegin = 8,
    FileData = 9,
    FileEnd = 10,
    FileAck = 11,
    Records = 12,
}

impl FrameType {
    pub fn from_byte(b: u8) -> Option<FrameType> {
        use FrameType::*;
        Some(match b {
            1 => Hello,
            2 => Challenge,
            3 => Auth,
            4 => Welcome,
            5 => Items,
            6 => Ack,
            7 => Error,
            8 => FileBegin,
            9 => FileData,
            10 => FileEnd,
            11 => FileAck,
            12 => Records,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: FrameType,
    pub payload: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("connection closed")]
    Closed,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("frame of {len} bytes exceeds the maximum of {max}")]
    TooLarge { len: u64, max: usize },
    #[error("frame CRC mismatch")]
    BadCrc,
    #[error(
        "record {file_id}:{item_idx} fails its CRC (damaged on the sender's disk or on the way)"
    )]
    BadRecord { file_id: u64, item_idx: u32 },
    #[error("empty frame")]
    Empty,
    #[error("unknown frame type {0}")]
    UnknownType(u8),
    #[error("bad {what} payload: {reason}")]
    BadPayload {
        what: &'static str,
        reason: &'static str,
    },
}

/// Appends one frame to `out`.
pub fn encode_frame(kind: FrameType, payload: &[u8], out: &mut Vec<u8>) {
    let len = payload.len() as u32 + 1;
    let crc = crc::append(crc::crc32c(&[kind as u8]), payload);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    out.push(kind as u8);
    out.extend_from_slice(payload);
}

/// Decodes the first frame in `buf`: Ok(None) if `buf` does not hold all of it yet, else the
/// frame and the bytes it took. A length over `max` fails before anything is buffered.
pub fn decode_frame(buf: &[u8], max: usize) -> Result<Option<(Frame, usize)>, FrameError> {
    if buf.len() < 8 {
        return Ok(None);
    }
    let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    check_len(len, max)?;
    if buf.len() < 8 + len {
        return Ok(None);
    }
    let crc = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let body = &buf[8..8 + len];
    if crc::crc32c(body) != crc {
        return Err(FrameError::BadCrc);
    }
    let kind = FrameType::from_byte(body[0]).ok_or(FrameError::UnknownType(body[0]))?;
    Ok(Some((
        Frame {
            kind,
            payload: body[1..].to_vec(),
        },
        8 + len,
    )))
}

fn check_len(len: usize, max: usize) -> Result<(), FrameError> {
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > max {
        return Err(FrameError::TooLarge {
            len: len as u64,
            max,
        });
    }
    Ok(())
}

/// Reads one frame from a stream; nothing beyond `max` bytes is ever allocated.
pub fn read_frame(r: &mut impl Read, max: usize) -> Result<Frame, FrameError> {
    let mut payload = Vec::new();
    let kind = read_frame_into(r, max, &mut payload)?;
    Ok(Frame { kind, payload })
}

/// [`read_frame`] into the caller's buffer, which keeps its memory from frame to frame (a
/// fresh multi-megabyte buffer a frame costs page faults and zeroing).
pub fn read_frame_into(
    r: &mut impl Read,
    max: usize,
    payload: &mut Vec<u8>,
) -> Result<FrameType, FrameError> {
    read_frame_unchecked(r, max, payload)?.check(payload)
}

/// A frame's type byte and CRC as read, before the CRC is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unchecked {
    pub kind: u8,
    pub crc: u32,
}

impl Unchecked {
    /// Checks the CRC over the whole payload, then the type.
    pub fn check(&self, payload: &[u8]) -> Result<FrameType, FrameError> {
        if crc::append(crc::crc32c(&[self.kind]), payload) != self.crc {
            return Err(FrameError::BadCrc);
        }
        FrameType::from_byte(self.kind).ok_or(FrameError::UnknownType(self.kind))
    }
}

/// Reads one frame into `payload` without checking its CRC: for a caller that checks it in
/// its own pass over the payload ([`crate::wire::BatchRef::decode_checked`]), or with
/// [`Unchecked::check`]. Nothing of it may be used before that.
pub fn read_frame_unchecked(
    r: &mut impl Read,
    max: usize,
    payload: &mut Vec<u8>,
) -> Result<Unchecked, FrameError> {
    let mut head = [0u8; FRAME_HEADER_LEN];
    match r.read_exact(&mut head[..8]) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    check_len(len, max)?;
    r.read_exact(&mut head[8..9])?;
    // Sized up front (at most `max`) and read with `read_exact`: a buffered reader then
    // hands large payloads straight from the socket into `payload`, with no copy of its own,
    // and a reused buffer is not zeroed again.
    payload.resize(len - 1, 0);
    r.read_exact(payload)?;
    Ok(Unchecked {
        kind: head[8],
        crc: u32::from_le_bytes([head[4], head[5], head[6], head[7]]),
    })
}

/// Starts a frame in `out` whose payload the caller appends; [`finish_frame`] completes it.
pub fn begin_frame(kind: FrameType, out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0u8; 8]);
    out.push(kind as u8);
    start
}

/// Fills in the length and CRC of the frame started at `start`.
pub fn finish_frame(out: &mut [u8], start: usize) {
    let crc = crc::crc32c(&out[start + 8..]);
    finish_frame_with_crc(out, start, crc);
}

/// Fills in the length and CRC of a frame started at `start` whose payload goes on for
/// `tail` bytes the caller sends from elsewhere (`sendfile`); `crc` covers all of it.
pub fn finish_frame_followed_by(out: &mut [u8], start: usize, crc: u32, tail: u64) {
    let len = (out.len() - start - 8) as u64 + tail;
    out[start..start + 4].copy_from_slice(&(len as u32).to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// [`finish_frame`] with the CRC (of the type byte and the payload) worked out by the caller.
pub fn finish_frame_with_crc(out: &mut [u8], start: usize, crc: u32) {
    finish_frame_followed_by(out, start, crc, 0);
}

pub fn write_frame(w: &mut impl Write, kind: FrameType, payload: &[u8]) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(payload.len() + FRAME_HEADER_LEN);
    encode_frame(kind, payload, &mut out);
    w.write_all(&out)?;
    w.flush()
}

/// Reads payload fields in order; every getter fails cleanly on a short payload.
pub struct Fields<'a> {
    b: &'a [u8],
    what: &'static str,
}

impl<'a> Fields<'a> {
    pub fn new(b: &'a [u8], what: &'static str) -> Self {
        Fields { b, what }
    }

    fn bad(&self, reason: &'static str) -> FrameError {
        FrameError::BadPayload {
            what: self.what,
            reason,
        }
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        if self.b.len() < n {
            return Err(self.bad("too short"));
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }

    pub fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, FrameError> {
        let b = self.bytes(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self) -> Result<u32, FrameError> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, FrameError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.bytes(8)?);
        Ok(u64::from_le_bytes(a))
    }

    /// A u16-length-prefixed UTF-8 string.
    pub fn string(&mut self) -> Result<String, FrameError> {
        let n = self.u16()? as usize;
        let b = self.bytes(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.bad("string is not UTF-8"))
    }

    pub fn end(&self) -> Result<(), FrameError> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(self.bad("trailing bytes"))
        }
    }

    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.b)
    }
}

pub fn put_string(out: &mut Vec<u8>, s: &str) {
    let b = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
    out.extend_from_slice(&(b.len() as u16).to_le_bytes());
    out.extend_from_slice(b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_whole_and_in_pieces() {
        let mut b = Vec::new();
        encode_frame(FrameType::Ack, b"12345678abcd", &mut b);
        encode_frame(FrameType::Error, b"", &mut b);
        for cut in 0..b.len() {
            match decode_frame(&b[..cut], 1024).unwrap() {
                None => assert!(cut < 21),
                Some((f, used)) => {
                    assert_eq!((f.kind, used), (FrameType::Ack, 21));
                    assert_eq!(f.payload, b"12345678abcd");
                }
            }
        }
        let mut r = &b[..];
        assert_eq!(read_frame(&mut r, 1024).unwrap().kind, FrameType::Ack);
        assert_eq!(read_frame(&mut r, 1024).unwrap().kind, FrameType::Error);
        assert!(matches!(read_frame(&mut r, 1024), Err(FrameError::Closed)));
    }

    #[test]
    fn oversized_corrupt_and_unknown_frames_are_refused() {
        let mut b = Vec::new();
        encode_frame(FrameType::Items, &[7u8; 100], &mut b);
        assert!(matches!(
            decode_frame(&b, 50),
            Err(FrameError::TooLarge { len: 101, .. })
        ));
        // The length alone is enough to refuse: no need to wait for 4 GB to arrive.
        assert!(matches!(
            decode_frame(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0], 1 << 20),
            Err(FrameError::TooLarge { .. })
        ));
        let mut bad = b.clone();
        bad[20] ^= 1;
        assert!(matches!(decode_frame(&bad, 1024), Err(FrameError::BadCrc)));
        let mut unknown = Vec::new();
        encode_frame(FrameType::Ack, b"", &mut unknown);
        unknown[8] = 99;
        let crc = crc::crc32c(&unknown[8..]);
        unknown[4..8].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            decode_frame(&unknown, 1024),
            Err(FrameError::UnknownType(99))
        ));
        assert!(matches!(
            decode_frame(&[0, 0, 0, 0, 0, 0, 0, 0], 1024),
            Err(FrameError::Empty)
        ));
    }
}
