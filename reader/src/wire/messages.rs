//! The payloads of the handshake, error and file frames, typed (batches: `batch.rs`).

use focuser_formats::segment::Position;

use super::frame::{put_string, Fields, FrameError};

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

    #[test]
    fn hostile_names_are_refused() {
        for bad in ["", "../x", "a/b", "..", ".hidden", "a\0b", "x\ny"] {
            assert!(check_file_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_file_name("master1-0000000042.q").is_ok());
        assert!(check_stream_name("node 1").is_err());
        assert!(check_stream_name("master1.node3").is_ok());
    }
}
