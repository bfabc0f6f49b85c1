//! Position files: where a sender (or any reader) is in a store, written atomically.
//!
//! 24 bytes: magic `FCSRPOS1`, file_id u64, item_idx u32 (the next item to read),
//! CRC-32C of the first 20 bytes u32, little-endian.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::crc;
use crate::fsutil;

const MAGIC: &[u8; 8] = b"FCSRPOS1";
pub const POSITION_LEN: usize = 24;

/// The next item to read: item `item_idx` (from 1) of segment `file_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    pub file_id: u64,
    pub item_idx: u32,
}

impl Position {
    /// Before the oldest segment, whichever that is.
    pub const START: Position = Position {
        file_id: 0,
        item_idx: 1,
    };

    /// `FILE:ITEM`, as `Display` writes it; `None` for anything else or out of range.
    pub fn parse(s: &str) -> Option<Position> {
        let (f, i) = s.split_once(':')?;
        Some(Position {
            file_id: f.parse().ok()?,
            item_idx: i.parse().ok()?,
        })
    }

    pub fn encode(&self) -> [u8; POSITION_LEN] {
        let mut b = [0u8; POSITION_LEN];
        b[0..8].copy_from_slice(MAGIC);
        b[8..16].copy_from_slice(&self.file_id.to_le_bytes());
        b[16..20].copy_from_slice(&self.item_idx.to_le_bytes());
        let crc = crc::crc32c(&b[0..20]);
        b[20..24].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<Position, &'static str> {
        if b.is_empty() {
            return Err("empty");
        }
        if b.len() != POSITION_LEN {
            return Err("wrong length");
        }
        if &b[0..8] != MAGIC {
            return Err("bad magic");
        }
        let mut crc = [0u8; 4];
        crc.copy_from_slice(&b[20..24]);
        if crc::crc32c(&b[0..20]) != u32::from_le_bytes(crc) {
            return Err("CRC mismatch");
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&b[8..16]);
        let mut idx = [0u8; 4];
        idx.copy_from_slice(&b[16..20]);
        Ok(Position {
            file_id: u64::from_le_bytes(id),
            item_idx: u32::from_le_bytes(idx),
        })
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file_id, self.item_idx)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PositionError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: bad position file ({reason})", path.display())]
    Bad { path: PathBuf, reason: &'static str },
}

/// The position stored in `path`; Ok(None) if there is no such file.
pub fn read_position(path: &Path) -> Result<Option<Position>, PositionError> {
    match std::fs::read(path) {
        Ok(b) => Position::decode(&b)
            .map(Some)
            .map_err(|reason| PositionError::Bad {
                path: path.to_path_buf(),
                reason,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PositionError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Writes `pos` to `path` atomically and durably.
pub fn write_position(path: &Path, pos: Position) -> Result<(), PositionError> {
    fsutil::write_atomically(path, |w| w.write_all(&pos.encode())).map_err(|source| {
        PositionError::Io {
            path: path.to_path_buf(),
            source,
        }
    })
}
