//! current_log: every URL seen within the retention window, sorted by id (docs/formats.md).
//!
//! ```text
//! #focuser-current-log 1 cycle=<seq>
//! <id: 16 hex digits> \t <fwd_ts> \t <last_seen> \t <pending> \t <updatetag> \t <domain> \t <url>
//! #end entries=<n> crc32c=<8 hex digits over every entry line, newlines included>
//! ```
//!
//! It is replaced whole each cycle (temporary name, fsync, rename), so a reader sees the
//! file of one cycle or the next; the trailer still guards against a damaged disk.

mod read;
mod write;

pub use read::{check_split, Reader};
pub use write::{Entries, FileWriter, Writer};

use crate::filter::Entry;

pub const MAGIC: &str = "#focuser-current-log 1";

/// An entry with the URL and domain that travel with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogEntry<'a> {
    pub entry: Entry<'a>,
    pub domain: &'a str,
    pub url: &'a str,
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{path}:{place}: {message}")]
    Bad {
        path: String,
        place: Place,
        message: String,
    },
}

/// Where in a current_log a fault is: its line, or, for the upper half of a split read (whose
/// line numbers are not known), the byte its line starts at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Line(u64),
    Byte(u64),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Line(n) => write!(f, "{n}"),
            Place::Byte(b) => write!(f, "byte {b}"),
        }
    }
}

#[cfg(test)]
mod tests;
