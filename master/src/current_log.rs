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

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use crate::filter::Entry;

pub const MAGIC: &str = "#focuser-current-log 1";

/// An entry with the URL and domain that travel with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    pub entry: Entry,
    pub domain: String,
    pub url: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{path}:{line}: {message}")]
    Bad {
        path: String,
        line: u64,
        message: String,
    },
}

/// Streams a current_log in id order, checking order, count and checksum as it goes.
pub struct Reader {
    path: String,
    input: BufReader<File>,
    line: u64,
    count: u64,
    crc: u32,
    last_id: Option<u64>,
    done: bool,
    pub cycle: u64,
    buf: String,
}

impl Reader {
    /// Opens `path`; a missing file is an empty log at cycle 0.
    pub fn open(path: &Path) -> Result<Option<Reader>, LogError> {
        let name = path.display().to_string();
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(LogError::Io { path: name, error }),
        };
        let mut input = BufReader::with_capacity(1 << 20, file);
        let mut first = String::new();
        input.read_line(&mut first).map_err(|error| LogError::Io {
            path: name.clone(),
            error,
        })?;
        let bad = |message: &str| LogError::Bad {
            path: name.clone(),
            line: 1,
            message: message.into(),
        };
        let rest = first
            .trim_end()
            .strip_prefix(MAGIC)
            .ok_or_else(|| bad("not a current_log"))?;
        let cycle = rest
            .trim()
            .strip_prefix("cycle=")
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| bad("header lacks cycle="))?;
        Ok(Some(Reader {
            path: name,
            input,
            line: 1,
            count: 0,
            crc: 0,
            last_id: None,
            done: false,
            cycle,
            buf: String::new(),
        }))
    }

    fn bad(&self, message: impl Into<String>) -> LogError {
        LogError::Bad {
            path: self.path.clone(),
            line: self.line,
            message: message.into(),
        }
    }

    /// The next entry, or `None` after a trailer that checks out.
    pub fn next_entry(&mut self) -> Result<Option<LogEntry>, LogError> {
        if self.done {
            return Ok(None);
        }
        self.buf.clear();
        self.line += 1;
        let n = self
            .input
            .read_line(&mut self.buf)
            .map_err(|error| LogError::Io {
                path: self.path.clone(),
                error,
            })?;
        if n == 0 || !self.buf.ends_with('\n') {
            return Err(self.bad("ends without its trailer"));
        }
        if let Some(trailer) = self.buf.strip_prefix("#end ") {
            let expected = format!("entries={} crc32c={:08x}", self.count, self.crc);
            if trailer.trim_end() != expected {
                return Err(self.bad(format!(
                    "trailer `{}` does not match the entries ({expected})",
                    trailer.trim_end()
                )));
            }
            self.done = true;
            return Ok(None);
        }
        self.crc = crc32c::crc32c_append(self.crc, self.buf.as_bytes());
        self.count += 1;
        let f: Vec<&str> = self.buf.trim_end_matches('\n').splitn(7, '\t').collect();
        if f.len() != 7 {
            return Err(self.bad("expected 7 fields"));
        }
        let num = |s: &str| s.parse::<i64>().ok();
        let (Ok(id), Some(fwd_ts), Some(last_seen), Ok(pending)) = (
            u64::from_str_radix(f[0], 16),
            num(f[1]),
            num(f[2]),
            f[3].parse::<u64>(),
        ) else {
            return Err(self.bad("bad number"));
        };
        if self.last_id.is_some_and(|last| last >= id) {
            return Err(self.bad("entries out of id order"));
        }
        self.last_id = Some(id);
        Ok(Some(LogEntry {
            entry: Entry {
                id,
                fwd_ts,
                tag: f[4].to_string(),
                pending,
                last_seen,
            },
            domain: f[5].to_string(),
            url: f[6].to_string(),
        }))
    }
}

/// Writes a current_log; entries must come in increasing id order.
pub struct Writer<W: Write> {
    out: W,
    count: u64,
    crc: u32,
    line: String,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W, cycle: u64) -> std::io::Result<Self> {
        writeln!(out, "{MAGIC} cycle={cycle}")?;
        Ok(Writer {
            out,
            count: 0,
            crc: 0,
            line: String::with_capacity(256),
        })
    }

    pub fn write(&mut self, e: &Entry, domain: &str, url: &str) -> std::io::Result<()> {
        use std::fmt::Write as _;
        self.line.clear();
        let _ = writeln!(
            self.line,
            "{:016x}\t{}\t{}\t{}\t{}\t{}\t{}",
            e.id, e.fwd_ts, e.last_seen, e.pending, e.tag, domain, url
        );
        self.crc = crc32c::crc32c_append(self.crc, self.line.as_bytes());
        self.count += 1;
        self.out.write_all(self.line.as_bytes())
    }

    pub fn finish(mut self) -> std::io::Result<(W, u64)> {
        writeln!(
            self.out,
            "#end entries={} crc32c={:08x}",
            self.count, self.crc
        )?;
        Ok((self.out, self.count))
    }
}

/// A writer into a file (the caller publishes it).
pub type FileWriter = Writer<BufWriter<File>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn write_log(path: &Path, ids: &[u64]) {
        let file = BufWriter::new(File::create(path).unwrap());
        let mut w = Writer::new(file, 4).unwrap();
        for &id in ids {
            w.write(
                &Entry {
                    id,
                    fwd_ts: 10,
                    tag: "t".into(),
                    pending: 2,
                    last_seen: 20,
                },
                "a.ru",
                "http://a.ru/",
            )
            .unwrap();
        }
        let (mut f, n) = w.finish().unwrap();
        f.flush().unwrap();
        assert_eq!(n, ids.len() as u64);
    }

    fn read_all(path: &Path) -> Result<Vec<LogEntry>, LogError> {
        let mut r = Reader::open(path)?.unwrap();
        let mut out = Vec::new();
        while let Some(e) = r.next_entry()? {
            out.push(e);
        }
        Ok(out)
    }

    #[test]
    fn round_trip_and_damage_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("current_log");
        assert!(Reader::open(&p).unwrap().is_none());
        write_log(&p, &[1, 5, u64::MAX]);
        let all = read_all(&p).unwrap();
        assert_eq!(
            all.iter().map(|e| e.entry.id).collect::<Vec<_>>(),
            [1, 5, u64::MAX]
        );
        assert_eq!(Reader::open(&p).unwrap().unwrap().cycle, 4);

        let good = std::fs::read_to_string(&p).unwrap();
        for (damaged, message) in [
            (good.replace("\t2\tt\t", "\t3\tt\t"), "does not match"),
            (
                good.lines()
                    .take(3)
                    .map(|l| format!("{l}\n"))
                    .collect::<String>(),
                "without its trailer",
            ),
            (
                good.replacen("0000000000000005", "0000000000000000", 1),
                "out of id order",
            ),
            (good.replace(MAGIC, "#other"), "not a current_log"),
        ] {
            std::fs::write(&p, damaged).unwrap();
            let e = read_all(&p).unwrap_err().to_string();
            assert!(e.contains(message), "{e}");
        }
    }
}
