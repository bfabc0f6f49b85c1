//! Queue files: the master's output for one node and one cycle, the loader's input.
//!
//! ```text
//! #focuser-queue 1 master=<name> cycle=<seq> node=<id> time=<YYYYMMDDhhmmss>
//! <id> \t <url> \t <domain> \t <YYYYMMDDhhmmss> \t <hits> \t <updatetag> \t <new 0|1>
//! ...
//! #end records=<n>
//! ```
//!
//! `id` is the decimal URL id; times are UTC. A file without its trailer, or whose count does
//! not match, is incomplete and must not be applied.

use std::io::{BufRead, Write};

use crate::{num, stamp};

pub const MAGIC: &str = "#focuser-queue 1";

/// The header's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueHeader {
    pub master: String,
    pub cycle: u64,
    pub node: u32,
    /// The cycle's clock (seconds since the epoch).
    pub time: i64,
}

/// One forwarded URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRecord {
    pub id: u64,
    pub url: String,
    pub domain: String,
    /// The URL's latest hit in the cycle (seconds since the epoch).
    pub timestamp: i64,
    pub hits: u64,
    pub updatetag: String,
    /// Not in the master's current_log before this cycle.
    pub new: bool,
}

/// Writes a queue file: header, records, trailer.
pub struct QueueWriter<W: Write> {
    out: W,
    records: u64,
    line: Vec<u8>,
    format: RecordFormat,
}

impl<W: Write> QueueWriter<W> {
    pub fn new(mut out: W, header: &QueueHeader) -> std::io::Result<Self> {
        writeln!(
            out,
            "{MAGIC} master={} cycle={} node={} time={}",
            header.master,
            header.cycle,
            header.node,
            stamp::format(header.time)
        )?;
        Ok(QueueWriter {
            out,
            records: 0,
            line: Vec::with_capacity(256),
            format: RecordFormat::default(),
        })
    }

    pub fn write(&mut self, r: &QueueRecord) -> std::io::Result<()> {
        self.write_fields(
            r.id,
            &r.url,
            &r.domain,
            r.timestamp,
            r.hits,
            &r.updatetag,
            r.new,
        )
    }

    /// [`QueueWriter::write`] from borrowed fields.
    #[allow(clippy::too_many_arguments)]
    pub fn write_fields(
        &mut self,
        id: u64,
        url: &str,
        domain: &str,
        timestamp: i64,
        hits: u64,
        updatetag: &str,
        new: bool,
    ) -> std::io::Result<()> {
        self.line.clear();
        self.format.push(
            &mut self.line,
            id,
            url,
            domain,
            timestamp,
            hits,
            updatetag,
            new,
        );
        self.records += 1;
        self.out.write_all(&self.line)
    }

    /// A record line made by [`RecordFormat::push`] (one line, its `\n` included).
    pub fn write_formatted(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.records += 1;
        self.out.write_all(line)
    }

    /// Writes the trailer; returns the writer and the record count.
    pub fn finish(mut self) -> std::io::Result<(W, u64)> {
        writeln!(self.out, "#end records={}", self.records)?;
        Ok((self.out, self.records))
    }
}

/// Formats record lines. The date of the last timestamp is kept: a cycle's records fall on a
/// day or two, and working out a date from seconds is most of the cost of a line.
#[derive(Debug, Default)]
pub struct RecordFormat {
    day: Option<(i64, [u8; 8])>,
}

impl RecordFormat {
    /// Appends one record line, `\n` included.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        l: &mut Vec<u8>,
        id: u64,
        url: &str,
        domain: &str,
        timestamp: i64,
        hits: u64,
        updatetag: &str,
        new: bool,
    ) {
        num::push_u64(l, id);
        for text in [url, domain] {
            l.push(b'\t');
            l.extend_from_slice(text.as_bytes());
        }
        l.push(b'\t');
        let day = timestamp.div_euclid(86400);
        let date = match self.day {
            Some((d, date)) if d == day => date,
            _ => {
                let mut date = [0u8; 8];
                date.copy_from_slice(&stamp::digits(timestamp)[..8]);
                self.day = Some((day, date));
                date
            }
        };
        l.extend_from_slice(&date);
        let secs = timestamp.rem_euclid(86400);
        for part in [secs / 3600, secs / 60 % 60, secs % 60] {
            l.extend_from_slice(&[b'0' + (part / 10) as u8, b'0' + (part % 10) as u8]);
        }
        l.push(b'\t');
        num::push_u64(l, hits);
        l.push(b'\t');
        l.extend_from_slice(updatetag.as_bytes());
        l.extend_from_slice(if new { b"\t1\n" } else { b"\t0\n" });
    }
}

/// Why a queue file cannot be applied: the line and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct QueueError {
    pub line: u64,
    pub message: String,
}

fn bad(line: u64, message: impl Into<String>) -> QueueError {
    QueueError {
        line,
        message: message.into(),
    }
}

fn header_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

/// Reads a whole queue file, checking header, every record and the trailer.
pub fn read(input: impl BufRead) -> Result<(QueueHeader, Vec<QueueRecord>), QueueError> {
    let mut reader = QueueReader::new(input)?;
    let mut records = Vec::new();
    while let Some(r) = reader.next_record()? {
        records.push(r);
    }
    Ok((reader.header, records))
}

/// Reads a queue file one record at a time, so that a file of any size is read in bounded
/// memory. [`QueueReader::next_record`] returns `None` only once the trailer has been checked;
/// any damage is an error naming its line.
pub struct QueueReader<R> {
    lines: std::io::Split<R>,
    pub header: QueueHeader,
    /// Lines read so far (the header is line 1).
    line: u64,
    records: u64,
    done: bool,
}

impl<R: BufRead> QueueReader<R> {
    /// Reads and checks the header.
    pub fn new(input: R) -> Result<Self, QueueError> {
        let mut lines = input.split(b'\n');
        let first = next_line(&mut lines, 1)?.ok_or_else(|| bad(1, "empty file"))?;
        let header = parse_header(&first)?;
        Ok(QueueReader {
            lines,
            header,
            line: 1,
            records: 0,
            done: false,
        })
    }

    /// The number of the line read last.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The next record; `None` after a trailer that matches the records read.
    pub fn next_record(&mut self) -> Result<Option<QueueRecord>, QueueError> {
        if self.done {
            return Ok(None);
        }
        self.line += 1;
        let n = self.line;
        let Some(line) = next_line(&mut self.lines, n)? else {
            return Err(bad(
                n,
                "missing trailer `#end records=N`: the file is incomplete",
            ));
        };
        if let Some(count) = line.strip_prefix("#end records=") {
            let count: u64 = count.parse().map_err(|_| bad(n, "bad trailer"))?;
            if count != self.records {
                return Err(bad(
                    n,
                    format!(
                        "trailer says {count} records, the file holds {}",
                        self.records
                    ),
                ));
            }
            if let Some(extra) = next_line(&mut self.lines, n + 1)? {
                if !extra.is_empty() || next_line(&mut self.lines, n + 2)?.is_some() {
                    return Err(bad(n + 1, "data after the trailer"));
                }
            }
            self.done = true;
            return Ok(None);
        }
        let record = parse_record(&line).map_err(|m| bad(n, m))?;
        self.records += 1;
        Ok(Some(record))
    }
}

fn next_line<R: BufRead>(
    lines: &mut std::io::Split<R>,
    n: u64,
) -> Result<Option<String>, QueueError> {
    match lines.next() {
        None => Ok(None),
        Some(Err(e)) => Err(bad(n, format!("read error: {e}"))),
        Some(Ok(bytes)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| bad(n, "not valid UTF-8")),
    }
}

fn parse_header(first: &str) -> Result<QueueHeader, QueueError> {
    if !first.starts_with(MAGIC) {
        return Err(bad(1, format!("not a queue file (expected `{MAGIC}`)")));
    }
    let field =
        |key: &str| header_field(first, key).ok_or_else(|| bad(1, format!("header lacks {key}=")));
    Ok(QueueHeader {
        master: field("master")?.to_string(),
        cycle: field("cycle")?.parse().map_err(|_| bad(1, "bad cycle="))?,
        node: field("node")?.parse().map_err(|_| bad(1, "bad node="))?,
        time: stamp::parse(field("time")?.as_bytes(), 0).ok_or_else(|| bad(1, "bad time="))?,
    })
}

fn parse_record(line: &str) -> Result<QueueRecord, String> {
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() != 7 {
        return Err(format!(
            "expected 7 tab-separated fields, found {}",
            f.len()
        ));
    }
    Ok(QueueRecord {
        id: f[0].parse().map_err(|_| "bad id")?,
        url: f[1].to_string(),
        domain: f[2].to_string(),
        timestamp: stamp::parse(f[3].as_bytes(), 0).ok_or("bad timestamp")?,
        hits: f[4].parse().map_err(|_| "bad hits")?,
        updatetag: f[5].to_string(),
        new: match f[6] {
            "0" => false,
            "1" => true,
            _ => return Err("new is not 0 or 1".into()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let header = QueueHeader {
            master: "m1".into(),
            cycle: 7,
            node: 2,
            time: 1311797321,
        };
        let mut w = QueueWriter::new(Vec::new(), &header).unwrap();
        w.write(&QueueRecord {
            id: u64::MAX,
            url: "http://a.ru/x?y=1".into(),
            domain: "a.ru".into(),
            timestamp: 1311797321,
            hits: 5,
            updatetag: "".into(),
            new: true,
        })
        .unwrap();
        w.finish().unwrap().0
    }

    #[test]
    fn a_kept_date_gives_the_same_lines_as_a_fresh_one() {
        let mut kept = RecordFormat::default();
        let times = [
            1311797321, 1311797322, 1311811199, 1311811200, 0, -1, -86401, 4102444799, 1311797321,
        ];
        for ts in times {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            kept.push(&mut a, 3, "http://a.ru/", "a.ru", ts, 2, "t", false);
            RecordFormat::default().push(&mut b, 3, "http://a.ru/", "a.ru", ts, 2, "t", false);
            assert_eq!(a, b, "{ts}");
            let text = String::from_utf8(a).unwrap();
            assert_eq!(
                text,
                format!("3\thttp://a.ru/\ta.ru\t{}\t2\tt\t0\n", stamp::format(ts))
            );
        }
    }

    #[test]
    fn round_trip() {
        let bytes = sample();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(
            text,
            "#focuser-queue 1 master=m1 cycle=7 node=2 time=20110727200841\n\
             18446744073709551615\thttp://a.ru/x?y=1\ta.ru\t20110727200841\t5\t\t1\n#end records=1\n"
        );
        let (h, r) = read(&bytes[..]).unwrap();
        assert_eq!(
            (h.master.as_str(), h.cycle, h.node, r.len(), r[0].new),
            ("m1", 7, 2, 1, true)
        );
    }

    #[test]
    fn incomplete_or_damaged_files_are_refused_with_the_line() {
        let good = String::from_utf8(sample()).unwrap();
        let cases = [
            (good.replace("#end records=1\n", ""), 3, "missing trailer"),
            (
                good.replace("#end records=1", "#end records=2"),
                3,
                "trailer says 2",
            ),
            (
                good.replace("\t1\n#end", "\t7\n#end"),
                2,
                "new is not 0 or 1",
            ),
            (good.replace("\ta.ru\t", "\t"), 2, "expected 7"),
            (
                good.replace("#focuser-queue 1", "#something else"),
                1,
                "not a queue file",
            ),
            (format!("{good}junk\n"), 4, "data after the trailer"),
            (String::new(), 1, "empty file"),
        ];
        for (text, line, message) in cases {
            let e = read(text.as_bytes()).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.contains(message), "{text:?}: {e}");
        }
    }
}
