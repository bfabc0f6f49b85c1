//! Reading a current_log: whole, or split in two at a byte for two threads.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use focuser_formats::segment::crc;

use super::{LogEntry, LogError, Place, MAGIC};
use crate::filter::Entry;

/// Which entries a reader reads, and who checks the trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    /// Every entry; the reader checks the trailer.
    Whole,
    /// The entries before byte `end`, every id below `below` (the lower half of a split).
    Lower { end: u64, below: u64 },
    /// The entries from the reader's start, every id at least `from`, and the trailer, kept
    /// for [`check_split`] (the upper half).
    Upper { from: u64 },
}

/// Streams a current_log in id order, checking order, count and checksum as it goes. Lines
/// are read in place in a block of the file; the checksum is taken over whole runs of lines
/// as the block moves on.
pub struct Reader {
    path: String,
    input: Block,
    span: Span,
    /// Lines read, header included (line numbers are known from the start of the file only).
    line: u64,
    /// The byte the next line starts at.
    pos: u64,
    count: u64,
    crc: u32,
    /// The bytes of the entry lines read, for [`crc::combine`].
    bytes: u64,
    last_id: Option<u64>,
    done: bool,
    /// The upper half's trailer, checked by [`check_split`].
    trailer: Option<String>,
    pub cycle: u64,
    /// The line read last, checked to be UTF-8 once, and its entry: numbers, and where its
    /// tag, domain and URL are in it.
    text: String,
    numbers: Option<(u64, i64, i64, u64)>,
    fields: [(usize, usize); 3],
}

/// Bytes of a current_log read at a time (a line longer than that makes the block grow), and
/// the longest line read.
const READ_BLOCK: usize = 1 << 20;
pub(super) const MAX_LINE_BYTES: usize = 8 << 20;

/// A window on a file, read a block at a time, whose lines are handed out in place. The
/// bytes from `sum` to `head` are whole lines handed out and not yet checksummed: they are
/// checksummed before they leave the block.
struct Block {
    file: File,
    buf: Vec<u8>,
    /// Where the next line starts, and the end of the bytes read.
    head: usize,
    tail: usize,
    sum: usize,
    eof: bool,
}

impl Block {
    fn new(file: File) -> Block {
        Block {
            file,
            buf: vec![0; READ_BLOCK],
            head: 0,
            tail: 0,
            sum: 0,
            eof: false,
        }
    }

    /// The next line (without its `\n`) as a range of `buf`, `Ok(None)` when the file ends
    /// first (a last line without its `\n` included). `crc` takes the lines leaving the block.
    fn next_line(&mut self, crc: &mut u32) -> std::io::Result<Option<(usize, usize)>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.head..self.tail]) {
                let line = (self.head, self.head + i);
                self.head += i + 1;
                return Ok(Some(line));
            }
            if self.eof {
                return Ok(None);
            }
            // Lines handed out leave the block: checksummed, then the rest moves to the front.
            *crc = crc::append(*crc, &self.buf[self.sum..self.head]);
            self.buf.copy_within(self.head..self.tail, 0);
            self.tail -= self.head;
            self.head = 0;
            self.sum = 0;
            if self.tail == self.buf.len() {
                // No entry is this long (a reflog line is at most 1 MiB): damage, not to be
                // read whole into memory.
                if self.buf.len() >= MAX_LINE_BYTES {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("a line longer than {MAX_LINE_BYTES} bytes"),
                    ));
                }
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = loop {
                match self.file.read(&mut self.buf[self.tail..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            };
            self.eof = n == 0;
            self.tail += n;
        }
    }

    /// Checksums the lines handed out before `end` (which is then where checksumming resumes).
    fn sum_to(&mut self, end: usize, crc: &mut u32) {
        *crc = crc::append(*crc, &self.buf[self.sum..end]);
        self.sum = end;
    }
}

/// The header's cycle, and the byte the first entry starts at.
fn read_header(path: &str, input: &mut Block) -> Result<(u64, u64), LogError> {
    let mut ignored = 0;
    let line = input
        .next_line(&mut ignored)
        .map_err(|error| LogError::Io {
            path: path.to_string(),
            error,
        })?;
    let bad = |message: &str| LogError::Bad {
        path: path.to_string(),
        place: Place::Line(1),
        message: message.into(),
    };
    // The header is not an entry: its bytes are not checksummed.
    input.sum = input.head;
    let first = match line {
        Some((from, to)) => String::from_utf8_lossy(&input.buf[from..to]).into_owned(),
        None => String::from_utf8_lossy(&input.buf[..input.tail]).into_owned(),
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
    Ok((cycle, input.head as u64))
}

fn open_file(path: &Path) -> Result<Option<(String, File)>, LogError> {
    let name = path.display().to_string();
    match File::open(path) {
        Ok(f) => Ok(Some((name, f))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(LogError::Io { path: name, error }),
    }
}

impl Reader {
    fn new(path: String, input: Block, cycle: u64, pos: u64, span: Span) -> Reader {
        Reader {
            path,
            input,
            span,
            line: 1,
            pos,
            count: 0,
            crc: 0,
            bytes: 0,
            last_id: None,
            done: false,
            trailer: None,
            cycle,
            text: String::with_capacity(256),
            numbers: None,
            fields: [(0, 0); 3],
        }
    }

    /// Opens `path`; a missing file is an empty log at cycle 0.
    pub fn open(path: &Path) -> Result<Option<Reader>, LogError> {
        let Some((name, file)) = open_file(path)? else {
            return Ok(None);
        };
        let mut input = Block::new(file);
        let (cycle, start) = read_header(&name, &mut input)?;
        Ok(Some(Reader::new(name, input, cycle, start, Span::Whole)))
    }

    /// Opens `path` as two readers to be read at the same time: the entries with ids below
    /// `at`, and the rest. The boundary is found by a binary search over the file; each half
    /// checks that its ids are on its side of `at` and in order, and [`check_split`] checks the
    /// trailer against both once they are read. A missing file is `None`, as for `open`.
    pub fn open_split(path: &Path, at: u64) -> Result<Option<(Reader, Reader)>, LogError> {
        let Some((name, file)) = open_file(path)? else {
            return Ok(None);
        };
        let io = |error| LogError::Io {
            path: name.clone(),
            error,
        };
        // Opened again: a clone would share the file offset.
        let mut upper_file = File::open(path).map_err(io)?;
        let mut input = Block::new(file);
        let (cycle, start) = read_header(&name, &mut input)?;
        let boundary = boundary(&upper_file, start, at).map_err(io)?;
        upper_file.seek(SeekFrom::Start(boundary)).map_err(io)?;
        let upper_input = Block::new(upper_file);
        let lower = Reader::new(
            name.clone(),
            input,
            cycle,
            start,
            Span::Lower {
                end: boundary,
                below: at,
            },
        );
        let upper = Reader::new(name, upper_input, cycle, boundary, Span::Upper { from: at });
        Ok(Some((lower, upper)))
    }

    fn bad(&self, message: impl Into<String>) -> LogError {
        let place = match self.span {
            Span::Upper { .. } => Place::Byte(self.pos),
            _ => Place::Line(self.line),
        };
        LogError::Bad {
            path: self.path.clone(),
            place,
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
        let text = |(from, to): (usize, usize)| &self.text[from..to];
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

    /// Reads the next entry (see [`Reader::current`]); false at the end: after a trailer that
    /// checks out, or at the end of a split reader's half.
    pub fn advance(&mut self) -> Result<bool, LogError> {
        self.numbers = None;
        if self.done {
            return Ok(false);
        }
        if let Span::Lower { end, .. } = self.span {
            if self.pos >= end {
                // Every entry of the half is checksummed.
                let mut crc = self.crc;
                let head = self.input.head;
                self.input.sum_to(head, &mut crc);
                self.crc = crc;
                self.done = true;
                return Ok(false);
            }
        }
        self.line += 1;
        let io = |error| LogError::Io {
            path: self.path.clone(),
            error,
        };
        let mut crc = self.crc;
        let next = self.input.next_line(&mut crc).map_err(io);
        self.crc = crc;
        let Some((from, to)) = next? else {
            return Err(self.bad("ends without its trailer"));
        };
        let n = to - from + 1;
        let Ok(line) = std::str::from_utf8(&self.input.buf[from..to]) else {
            return Err(self.bad("not valid UTF-8"));
        };
        if let Some(trailer) = line.strip_prefix("#end ") {
            let trailer = trailer.trim_end().to_string();
            // The entries before the trailer are all checksummed; the trailer is not.
            let mut crc = self.crc;
            self.input.sum_to(from, &mut crc);
            self.crc = crc;
            match self.span {
                Span::Whole => check_trailer(&trailer, self.count, self.crc)
                    .map_err(|message| self.bad(message))?,
                Span::Lower { .. } => return Err(self.bad("trailer before the end of its half")),
                Span::Upper { .. } => self.trailer = Some(trailer),
            }
            self.done = true;
            return Ok(false);
        }
        self.count += 1;
        self.bytes += n as u64;
        // id, fwd_ts, last_seen, pending, tag, domain; the URL is the rest of the line.
        let mut f = [(0usize, 0usize); 7];
        let mut at = 0;
        let body = line.len();
        for (k, field) in f.iter_mut().enumerate() {
            let end = if k == 6 {
                body
            } else {
                match memchr::memchr(b'\t', &line.as_bytes()[at..body]) {
                    Some(i) => at + i,
                    None => return Err(self.bad("expected 7 fields")),
                }
            };
            *field = (at, end);
            at = end + 1;
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
        let outside = match self.span {
            Span::Whole => false,
            Span::Lower { below, .. } => id >= below,
            Span::Upper { from } => id < from,
        };
        if outside || self.last_id.is_some_and(|last| last >= id) {
            return Err(self.bad("entries out of id order"));
        }
        self.pos += n as u64;
        self.last_id = Some(id);
        self.numbers = Some((id, fwd_ts, last_seen, pending));
        self.fields = [f[4], f[5], f[6]];
        self.text.clear();
        self.text.push_str(line);
        Ok(true)
    }
}

/// Checks the trailer of a split read against the entries of both halves, once both are at
/// their end.
pub fn check_split(lower: &Reader, upper: &Reader) -> Result<(), LogError> {
    let (Span::Lower { .. }, Span::Upper { .. }, true, true) =
        (lower.span, upper.span, lower.done, upper.done)
    else {
        return Err(upper.bad("the halves of a split read are not both at their end"));
    };
    let trailer = upper.trailer.as_deref().unwrap_or_default();
    let crc = crc::combine(lower.crc, upper.crc, upper.bytes);
    check_trailer(trailer, lower.count + upper.count, crc).map_err(|message| upper.bad(message))
}

fn check_trailer(trailer: &str, count: u64, crc: u32) -> Result<(), String> {
    let expected = format!("entries={count} crc32c={crc:08x}");
    if trailer != expected {
        return Err(format!(
            "trailer `{trailer}` does not match the entries ({expected})"
        ));
    }
    Ok(())
}

/// The byte where the first entry with an id of at least `at` starts (or the trailer, if no
/// entry has one), in a file whose entries start at `start`: a binary search over byte
/// offsets, each probe reading the id of the first line that starts at or after it.
fn boundary(file: &File, start: u64, at: u64) -> std::io::Result<u64> {
    let mut input = BufReader::with_capacity(8 << 10, file);
    let len = file.metadata()?.len();
    // The first line starting at or after `off`, and whether its id is at least `at`
    // (the trailer, and any line that is not an entry, count as "at least").
    let mut probe = |off: u64| -> std::io::Result<(u64, bool)> {
        let mut line = Vec::new();
        let line_start = if off <= start {
            input.seek(SeekFrom::Start(start))?;
            start
        } else {
            input.seek(SeekFrom::Start(off - 1))?;
            let skipped = input.read_until(b'\n', &mut line)?;
            line.clear();
            off - 1 + skipped as u64
        };
        let mut id = Vec::with_capacity(16);
        (&mut input).take(16).read_to_end(&mut id)?;
        let id = std::str::from_utf8(&id)
            .ok()
            .filter(|h| h.len() == 16)
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        Ok((line_start, id.is_none_or(|id| id >= at)))
    };
    let (mut lo, mut hi) = (start, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if probe(mid)?.1 {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(probe(lo)?.0.min(len))
}
