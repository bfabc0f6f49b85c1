//! `streams.state`, the receiver store's checkpoint of its sender streams (docs/formats.md):
//! each stream's number and last item held, as of store position `covers`; and reading the
//! store back to find what it holds of each stream.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use focuser_formats::fsutil;
use focuser_formats::segment::{crc, Cursor, Position};

use super::store::StoreError;

pub const STREAMS_FILE: &str = "streams.state";
const MAGIC: &str = "#focuser-streams 1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    pub number: u32,
    /// The last item applied; (0, 0): none.
    pub last: Position,
}

/// The checkpoint in `path`: (covers, streams). No file: an empty store's.
pub fn read(path: &Path) -> Result<(Position, BTreeMap<String, Stream>), StoreError> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Position::START, BTreeMap::new()))
        }
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let bad = |line: usize, reason: &str| StoreError::BadStreams {
        path: path.to_path_buf(),
        line,
        reason: reason.to_string(),
    };
    let text = String::from_utf8(text).map_err(|_| bad(1, "not UTF-8"))?;
    let body_end = text
        .rfind("#end crc=")
        .ok_or_else(|| bad(0, "no #end line"))?;
    let crc_text = text[body_end + 9..].trim_end();
    let crc = u32::from_str_radix(crc_text, 16).map_err(|_| bad(0, "bad CRC field"))?;
    if crc::crc32c(&text.as_bytes()[..body_end]) != crc {
        return Err(bad(0, "CRC mismatch"));
    }
    let mut lines = text[..body_end].lines();
    let head = lines.next().ok_or_else(|| bad(1, "empty"))?;
    let covers = head
        .strip_prefix(MAGIC)
        .and_then(|r| r.trim().strip_prefix("covers="))
        .and_then(Position::parse)
        .ok_or_else(|| bad(1, "bad header"))?;
    let mut streams = BTreeMap::new();
    for (i, line) in lines.enumerate() {
        let mut f = line.split('\t');
        let (Some(n), Some(name), Some(last), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad(i + 2, "expected number, name and last position"));
        };
        let number = n.parse().map_err(|_| bad(i + 2, "bad stream number"))?;
        let last = Position::parse(last).ok_or_else(|| bad(i + 2, "bad position"))?;
        streams.insert(name.to_string(), Stream { number, last });
    }
    Ok((covers, streams))
}

/// Writes the checkpoint to `path`, atomically.
pub fn write(
    path: &Path,
    covers: Position,
    streams: &BTreeMap<String, Stream>,
) -> std::io::Result<()> {
    let mut text = format!("{MAGIC} covers={covers}\n");
    for (name, s) in streams {
        text.push_str(&format!("{}\t{name}\t{}\n", s.number, s.last));
    }
    let crc = crc::crc32c(text.as_bytes());
    text.push_str(&format!("#end crc={crc:08x}\n"));
    fsutil::write_atomically(path, |w| w.write_all(text.as_bytes()))
}

/// What the store holds of each stream from a position on.
#[derive(Debug, Default)]
pub struct Held {
    /// The last item of each stream number found.
    pub last: BTreeMap<u32, Position>,
    /// Above every stream number found.
    pub next_number: u32,
}

/// Reads the store in `dir` from `from` to its end. A damaged record is logged and passed
/// over: it cannot be unseen, and the ones around it still count.
pub fn held(dir: &Path, from: Position) -> Result<Held, StoreError> {
    let mut cursor = Cursor::new(dir, from, None);
    let mut held = Held::default();
    loop {
        let before = cursor.position();
        let stored = match cursor.next() {
            Ok(Some(s)) => s,
            Ok(None) => break,
            Err(e) if e.is_damage() => {
                log::error!("{e}");
                if cursor.position() == before {
                    break;
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let o = stored.item.origin;
        if o.stream == 0 {
            continue;
        }
        held.next_number = held.next_number.max(o.stream + 1);
        let at = Position {
            file_id: o.file_id,
            item_idx: o.item_idx,
        };
        let last = held.last.entry(o.stream).or_default();
        *last = (*last).max(at);
    }
    Ok(held)
}
