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

use focuser_schema::formats::num;
use focuser_schema::segment::crc;

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
    buf: Vec<u8>,
    /// The entry in `buf`: its numbers, and where its tag, domain and URL are.
    numbers: Option<(u64, i64, i64, u64)>,
    fields: [(usize, usize); 3],
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
            buf: Vec::with_capacity(256),
            numbers: None,
            fields: [(0, 0); 3],
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
    pub fn next_entry(&mut self) -> Result<Option<LogEntry<'_>>, LogError> {
        self.advance()?;
        Ok(self.current())
    }

    /// The entry [`Reader::advance`] read last (`None` after the trailer).
    pub fn current(&self) -> Option<LogEntry<'_>> {
        let (id, fwd_ts, last_seen, pending) = self.numbers?;
        // `advance` checked the line is UTF-8.
        let text = |(from, to): (usize, usize)| {
            std::str::from_utf8(&self.buf[from..to]).unwrap_or_default()
        };
        Some(LogEntry {
            entry: Entry {
                id,
                fwd_ts,
                tag: text(self.fields[0]),
                pending,
                last_seen,
            },
            domain: text(self.fields[1]),
            url: text(self.fields[2]),
        })
    }

    /// Reads the next entry (see [`Reader::current`]); false after a trailer that checks out.
    pub fn advance(&mut self) -> Result<bool, LogError> {
        self.numbers = None;
        if self.done {
            return Ok(false);
        }
        self.buf.clear();
        self.line += 1;
        let n = self
            .input
            .read_until(b'\n', &mut self.buf)
            .map_err(|error| LogError::Io {
                path: self.path.clone(),
                error,
            })?;
        if n == 0 || !self.buf.ends_with(b"\n") {
            return Err(self.bad("ends without its trailer"));
        }
        let Ok(line) = std::str::from_utf8(&self.buf) else {
            return Err(self.bad("not valid UTF-8"));
        };
        if let Some(trailer) = line.strip_prefix("#end ") {
            let expected = format!("entries={} crc32c={:08x}", self.count, self.crc);
            if trailer.trim_end() != expected {
                return Err(self.bad(format!(
                    "trailer `{}` does not match the entries ({expected})",
                    trailer.trim_end()
                )));
            }
            self.done = true;
            return Ok(false);
        }
        self.crc = crc::append(self.crc, line.as_bytes());
        self.count += 1;
        // id, fwd_ts, last_seen, pending, tag, domain; the URL is the rest of the line.
        let mut f = [(0usize, 0usize); 7];
        let mut from = 0;
        let body = line.len() - 1;
        for (k, field) in f.iter_mut().enumerate() {
            let to = if k == 6 {
                body
            } else {
                match memchr::memchr(b'\t', &line.as_bytes()[from..body]) {
                    Some(i) => from + i,
                    None => return Err(self.bad("expected 7 fields")),
                }
            };
            *field = (from, to);
            from = to + 1;
        }
        let s = |k: usize| &line[f[k].0..f[k].1];
        let (Ok(id), Ok(fwd_ts), Ok(last_seen), Ok(pending)) = (
            u64::from_str_radix(s(0), 16),
            s(1).parse::<i64>(),
            s(2).parse::<i64>(),
            s(3).parse::<u64>(),
        ) else {
            return Err(self.bad("bad number"));
        };
        if self.last_id.is_some_and(|last| last >= id) {
            return Err(self.bad("entries out of id order"));
        }
        self.last_id = Some(id);
        self.numbers = Some((id, fwd_ts, last_seen, pending));
        self.fields = [f[4], f[5], f[6]];
        Ok(true)
    }
}

/// Writes a current_log; entries must come in increasing id order.
pub struct Writer<W: Write> {
    out: W,
    count: u64,
    crc: u32,
    line: Vec<u8>,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W, cycle: u64) -> std::io::Result<Self> {
        writeln!(out, "{MAGIC} cycle={cycle}")?;
        Ok(Writer {
            out,
            count: 0,
            crc: 0,
            line: Vec::with_capacity(256),
        })
    }

    pub fn write(&mut self, e: &Entry, domain: &str, url: &str) -> std::io::Result<()> {
        let l = &mut self.line;
        l.clear();
        num::push_hex16(l, e.id);
        l.push(b'\t');
        num::push_i64(l, e.fwd_ts);
        l.push(b'\t');
        num::push_i64(l, e.last_seen);
        l.push(b'\t');
        num::push_u64(l, e.pending);
        for text in [e.tag, domain, url] {
            l.push(b'\t');
            l.extend_from_slice(text.as_bytes());
        }
        l.push(b'\n');
        self.crc = crc::append(self.crc, l);
        self.count += 1;
        self.out.write_all(l)
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
                    tag: "t",
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

    fn read_all(path: &Path) -> Result<Vec<(u64, String)>, LogError> {
        let mut r = Reader::open(path)?.unwrap();
        let mut out = Vec::new();
        while let Some(e) = r.next_entry()? {
            out.push((e.entry.id, format!("{e:?}")));
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
            all.iter().map(|e| e.0).collect::<Vec<_>>(),
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
