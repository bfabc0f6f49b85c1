//! The inputs cut into byte ranges of whole lines (the segments the reading threads take in
//! turn), and a range read in large blocks of whole lines (no copy per line).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use super::{input_failed, MAX_LINE};

/// A byte range `[start, end)` of input `file`; `start` is 0 or just after a `\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub file: usize,
    pub start: u64,
    pub end: u64,
}

/// The size of each input: what the cycle reads of it.
pub fn sizes(inputs: &[PathBuf]) -> std::io::Result<Vec<u64>> {
    inputs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            std::fs::metadata(p)
                .map(|m| m.len())
                .map_err(|e| input_failed(i, p, e))
        })
        .collect()
}

/// Cuts the inputs (of `sizes` bytes) into `n` ranges of about equal size, each starting at the
/// start of a line (some may be empty). A range is the list of its segments, in input order.
pub fn split(inputs: &[PathBuf], sizes: &[u64], n: usize) -> std::io::Result<Vec<Vec<Segment>>> {
    if inputs.is_empty() {
        return Ok(vec![Vec::new(); n]);
    }
    let total: u64 = sizes.iter().sum();
    // Cut k falls at byte total*k/n of the concatenated inputs, moved to the next line start.
    let mut cuts: Vec<(usize, u64)> = vec![(0, 0)];
    for k in 1..n {
        let mut at = (u128::from(total) * k as u128 / n as u128) as u64;
        let mut file = 0;
        while file + 1 < sizes.len() && at >= sizes[file] {
            at -= sizes[file];
            file += 1;
        }
        let cut = (
            file,
            line_start(&inputs[file], at).map_err(|e| input_failed(file, &inputs[file], e))?,
        );
        let last = cuts[cuts.len() - 1];
        cuts.push(cut.max(last));
    }
    cuts.push((
        inputs.len().saturating_sub(1),
        sizes.last().copied().unwrap_or(0),
    ));
    Ok(cuts
        .windows(2)
        .map(|w| {
            let ((f0, s0), (f1, e1)) = (w[0], w[1]);
            (f0..=f1)
                .map(|file| Segment {
                    file,
                    start: if file == f0 { s0 } else { 0 },
                    end: if file == f1 { e1 } else { sizes[file] },
                })
                .filter(|s| s.start < s.end)
                .collect()
        })
        .collect())
}

/// The offset of the first line starting at or after `at`.
fn line_start(path: &std::path::Path, at: u64) -> std::io::Result<u64> {
    if at == 0 {
        return Ok(0);
    }
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(at - 1))?;
    let mut buf = vec![0u8; 64 << 10];
    let mut pos = at - 1;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(pos);
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok(pos + i as u64 + 1);
        }
        pos += n as u64;
    }
}

/// What reading a segment yields.
pub enum Piece<'a> {
    /// Whole lines, each ending in `\n` but perhaps the segment's last; `at` is the file
    /// offset of the first.
    Lines { text: &'a [u8], at: u64 },
    /// A line longer than the buffer, skipped; `at` is its offset.
    TooLong { at: u64 },
}

/// Large enough for any line kept (at most [`MAX_LINE`] bytes) and many more.
const BLOCK: usize = 4 << 20;

/// Reads one segment.
pub struct SegmentReader {
    file: File,
    /// File offset of the next read, and where the segment ends.
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    head: usize,
    tail: usize,
    /// Skipping the rest of an overlong line that started at this offset.
    skipping: Option<u64>,
}

impl SegmentReader {
    /// Errors (of this and [`SegmentReader::next_piece`]) are the caller's to attribute.
    pub fn open(path: &std::path::Path, seg: Segment) -> std::io::Result<Self> {
        let mut file = File::open(path)?;
        file.seek(SeekFrom::Start(seg.start))?;
        Ok(SegmentReader {
            file,
            pos: seg.start,
            end: seg.end,
            buf: vec![0u8; BLOCK],
            head: 0,
            tail: 0,
            skipping: None,
        })
    }

    /// File offset of `buf[head]`.
    fn offset(&self) -> u64 {
        self.pos - (self.tail - self.head) as u64
    }

    /// Moves what is left to the front and reads more; false at the segment's end.
    fn refill(&mut self) -> std::io::Result<bool> {
        if self.pos >= self.end {
            return Ok(false);
        }
        self.buf.copy_within(self.head..self.tail, 0);
        self.tail -= self.head;
        self.head = 0;
        let room = (self.buf.len() - self.tail).min((self.end - self.pos) as usize);
        let n = loop {
            match self.file.read(&mut self.buf[self.tail..self.tail + room]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        if n == 0 {
            self.end = self.pos; // the file shrank: what was read is all there is
            return Ok(false);
        }
        self.tail += n;
        self.pos += n as u64;
        Ok(true)
    }

    pub fn next_piece(&mut self) -> std::io::Result<Option<Piece<'_>>> {
        loop {
            if let Some(at) = self.skipping {
                match memchr::memchr(b'\n', &self.buf[self.head..self.tail]) {
                    Some(i) => {
                        self.head += i + 1;
                        self.skipping = None;
                        return Ok(Some(Piece::TooLong { at }));
                    }
                    None => {
                        self.head = self.tail;
                        if !self.refill()? {
                            self.skipping = None;
                            return Ok(Some(Piece::TooLong { at }));
                        }
                        continue;
                    }
                }
            }
            if let Some(i) = memchr::memrchr(b'\n', &self.buf[self.head..self.tail]) {
                let (at, from) = (self.offset(), self.head);
                self.head += i + 1;
                return Ok(Some(Piece::Lines {
                    text: &self.buf[from..self.head],
                    at,
                }));
            }
            if self.tail - self.head > MAX_LINE {
                self.skipping = Some(self.offset());
                continue;
            }
            if !self.refill()? {
                if self.head == self.tail {
                    return Ok(None);
                }
                let (at, from) = (self.offset(), self.head);
                self.head = self.tail;
                return Ok(Some(Piece::Lines {
                    text: &self.buf[from..self.tail],
                    at,
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of the inputs, as (file, offset, text or None for too long), via `n` ranges.
    fn read_all(inputs: &[PathBuf], n: usize) -> Vec<(usize, u64, Option<Vec<u8>>)> {
        let mut out = Vec::new();
        for range in split(inputs, &sizes(inputs).unwrap(), n).unwrap() {
            for seg in range {
                let mut r = SegmentReader::open(&inputs[seg.file], seg).unwrap();
                while let Some(p) = r.next_piece().unwrap() {
                    match p {
                        Piece::TooLong { at } => out.push((seg.file, at, None)),
                        Piece::Lines { text, at } => {
                            let mut off = at;
                            let text = text.strip_suffix(b"\n").unwrap_or(text);
                            for l in text.split(|&b| b == b'\n') {
                                // A line over MAX_LINE may come whole or skipped.
                                let kept = (l.len() <= MAX_LINE).then(|| l.to_vec());
                                out.push((seg.file, off, kept));
                                off += l.len() as u64 + 1;
                            }
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn any_number_of_ranges_reads_every_line_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let long = "z".repeat(MAX_LINE + 1);
        let huge = "y".repeat(BLOCK + 10);
        let contents = [
            format!("h\na\nbb\n{long}\nccc\n"),
            String::new(),
            "\n\nno newline at the end".to_string(),
            format!("h\n{huge}\nd\n{huge}"),
            "x\n".to_string(),
        ];
        let inputs: Vec<PathBuf> = contents
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let p = dir.path().join(format!("{i}.log"));
                std::fs::write(&p, c).unwrap();
                p
            })
            .collect();
        let one = read_all(&inputs, 1);
        let lines: Vec<Option<usize>> = one.iter().map(|l| l.2.as_ref().map(Vec::len)).collect();
        assert_eq!(
            lines,
            [
                Some(1),
                Some(1),
                Some(2),
                None,
                Some(3),
                Some(0),
                Some(0),
                Some(21),
                Some(1),
                None,
                Some(1),
                None,
                Some(1)
            ]
        );
        for n in 2..12 {
            assert_eq!(read_all(&inputs, n), one, "{n} ranges");
        }
        assert_eq!(split(&[], &[], 2).unwrap(), [vec![], vec![]]);
    }
}
