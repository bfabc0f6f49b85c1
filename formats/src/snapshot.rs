//! Resend snapshots (docs/formats.md "Resend snapshots"): a reader rebuilding a receiver of a
//! store whose old segments are gone asks the store's owner for the live set, with a file
//! `<name>.ask` in the store's snapshot folder; the owner writes the live items as segments
//! into `<name>.tmp/`, with a manifest `snapshot.txt`, and renames that folder `<name>/`:
//! a snapshot folder is whole or absent.

use std::path::{Path, PathBuf};

use crate::segment::Position;

/// What an ask file's name ends with.
pub const ASK_SUFFIX: &str = ".ask";
/// The manifest in a snapshot folder.
pub const MANIFEST: &str = "snapshot.txt";
/// An ask file or a manifest is a few short lines: anything longer is refused unread.
pub const MAX_FILE_BYTES: u64 = 1024;
/// The longest snapshot name.
pub const MAX_NAME: usize = 200;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotFileError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {reason}", .path.display())]
    Refused { path: PathBuf, reason: String },
    #[error("{}: line {line}: {reason}", .path.display())]
    Bad {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

/// A snapshot's name: 1 to [`MAX_NAME`] bytes of `A-Z a-z 0-9 . _ -`, not starting with a dot
/// (it names a folder of the owner's).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The reader's request: who the snapshot is for (the owner only logs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The resend's stream.
    pub stream: String,
    /// `GROUP ADDRESS`.
    pub receiver: String,
}

impl Ask {
    pub fn encode(&self) -> String {
        format!("stream = {}\nreceiver = {}\n", self.stream, self.receiver)
    }

    pub fn read(path: &Path) -> Result<Ask, SnapshotFileError> {
        Ask::parse(path, &read_small(path)?)
    }

    /// An ask file's text (`path` names it in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Ask, SnapshotFileError> {
        let mut v = fields(path, text, &["stream", "receiver"])?;
        Ok(Ask {
            receiver: v.pop().unwrap_or_default(),
            stream: v.pop().unwrap_or_default(),
        })
    }
}

/// What the owner says of a snapshot it published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Manifest {
    /// Items in the snapshot's segments.
    pub items: u64,
    /// Where the owner's store stood when it began reading its live set: every change after
    /// it is in the store from there on.
    pub position: Position,
}

impl Manifest {
    pub fn encode(&self) -> String {
        format!("items = {}\nposition = {}\n", self.items, self.position)
    }

    pub fn read(path: &Path) -> Result<Manifest, SnapshotFileError> {
        Manifest::parse(path, &read_small(path)?)
    }

    /// A manifest's text (`path` names it in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Manifest, SnapshotFileError> {
        let v = fields(path, text, &["items", "position"])?;
        let line_of = |key: &str| {
            text.lines()
                .position(|l| l.trim_start().starts_with(key))
                .map_or(0, |n| n + 1)
        };
        let bad = |key: &str, reason: &str| SnapshotFileError::Bad {
            path: path.into(),
            line: line_of(key),
            reason: reason.into(),
        };
        Ok(Manifest {
            items: v[0]
                .parse()
                .map_err(|_| bad("items", "items: not a number from 0 to 2^64-1"))?,
            position: Position::parse(&v[1])
                .ok_or_else(|| bad("position", "position: not FILE:ITEM in range"))?,
        })
    }
}

/// A regular file of at most [`MAX_FILE_BYTES`] bytes of UTF-8.
fn read_small(path: &Path) -> Result<String, SnapshotFileError> {
    let refused = |reason: &str| SnapshotFileError::Refused {
        path: path.into(),
        reason: reason.into(),
    };
    let io = |source| SnapshotFileError::Io {
        path: path.into(),
        source,
    };
    let meta = std::fs::symlink_metadata(path).map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(refused("not a regular file"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(refused(&format!("longer than {MAX_FILE_BYTES} bytes")));
    }
    let bytes = std::fs::read(path).map_err(io)?;
    String::from_utf8(bytes).map_err(|_| refused("not UTF-8"))
}

/// The values of `keys`, in that order: every line `key = value` (blank lines and `#`
/// comments aside), each key once, no other key.
fn fields(path: &Path, text: &str, keys: &[&str]) -> Result<Vec<String>, SnapshotFileError> {
    let bad = |line: usize, reason: String| SnapshotFileError::Bad {
        path: path.into(),
        line,
        reason,
    };
    let mut values: Vec<Option<String>> = vec![None; keys.len()];
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(bad(i + 1, "expected `key = value`".into()));
        };
        let key = key.trim();
        let Some(k) = keys.iter().position(|&k| k == key) else {
            return Err(bad(i + 1, format!("unknown key {key:?}")));
        };
        if values[k].replace(value.trim().to_string()).is_some() {
            return Err(bad(i + 1, format!("{key} given twice")));
        }
    }
    keys.iter()
        .zip(values)
        .map(|(k, v)| v.ok_or_else(|| bad(0, format!("no {k}"))))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_are_plain_file_names() {
        for ok in ["r1.Index.0.0.resend17", "a", "A-b_c.9"] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in [
            "",
            ".hidden",
            "a/b",
            "..",
            "a b",
            "é",
            &"x".repeat(MAX_NAME + 1),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn files_round_trip_and_bad_ones_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let m = Manifest {
            items: 12,
            position: Position {
                file_id: 3,
                item_idx: 4,
            },
        };
        std::fs::write(&p, m.encode()).unwrap();
        assert_eq!(Manifest::read(&p).unwrap(), m);
        let a = Ask {
            stream: "r.Index.0.resend5".into(),
            receiver: "Index.0 127.0.0.1:9".into(),
        };
        std::fs::write(&p, a.encode()).unwrap();
        assert_eq!(Ask::read(&p).unwrap(), a);
        for (text, want) in [
            ("items = 1\n", "line 0: no position"),
            ("items = -1\nposition = 1:1\n", "line 1: items"),
            ("items = 1\nposition = 1:99999999999\n", "line 2: position"),
            ("items = 1\nitems = 2\n", "line 2: items given twice"),
            ("garbage\n", "line 1: expected"),
            (
                "items = 1\nposition = 1:1\nrows = 5\n",
                "line 3: unknown key",
            ),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = Manifest::read(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        std::fs::write(&p, "x".repeat(2000)).unwrap();
        let e = Manifest::read(&p).unwrap_err().to_string();
        assert!(e.contains("longer than 1024 bytes"), "{e}");
        std::fs::write(&p, b"items = \xff\n").unwrap();
        let e = Ask::read(&p).unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
        let e = Ask::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
