//! Reject files: `<line> \t <reason> \t <the line, cut at 1 KiB, escaped>` for each rejected
//! line of one input, named after it ([`reject_path`]).
//!
//! A line is rejected by the thread that read it (its fields), or by the thread that keeps its
//! URL (the URL): each thread notes its rejects in one scratch file per thread that read the
//! lines, by segment of the inputs and line number counted from the segment's start. A thread
//! reads its segments in input order, so each file is in input order. Once every thread is
//! done, the reject file of each input is written from all of them, merged in input order.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use focuser_formats::reflog::{self, Reject};

use super::MAX_LINE;
use crate::{names, scratch};

/// How much of a rejected line its reject file keeps.
const REJECT_EXCERPT: usize = 1024;

/// Rejects of the lines one thread read: (segment, line in it) and the rest of the reject
/// line.
pub struct RejectLog {
    path: PathBuf,
    out: Option<BufWriter<File>>,
}

impl RejectLog {
    pub fn new(path: PathBuf) -> Self {
        RejectLog { path, out: None }
    }

    pub fn add(&mut self, seg: usize, line: u64, why: &Reject, text: &[u8]) -> std::io::Result<()> {
        if self.out.is_none() {
            self.out = Some(BufWriter::new(File::create(&self.path)?));
        }
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        // A `\r` that ends the line is its line ending, as the parser takes it.
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let excerpt = reflog::escape(&text[..text.len().min(REJECT_EXCERPT)]);
        let more = if text.len() > REJECT_EXCERPT {
            format!(" [... {} bytes]", text.len())
        } else {
            String::new()
        };
        let rest = format!("{why}\t{excerpt}{more}");
        scratch::write(out, [seg as u64, line], &[rest.as_bytes()])
    }

    /// The scratch file, if anything was rejected.
    pub fn finish(self) -> std::io::Result<Option<PathBuf>> {
        match self.out {
            None => Ok(None),
            Some(mut out) => {
                out.flush()?;
                Ok(Some(self.path))
            }
        }
    }
}

/// The line that starts at byte `offset` of `input`, without its `\n` (lines longer than
/// [`MAX_LINE`] were rejected before they got this far: at most that much is read).
pub fn line_at(input: &mut File, offset: u64) -> std::io::Result<Vec<u8>> {
    input.seek(SeekFrom::Start(offset))?;
    let mut line = Vec::new();
    let mut block = [0u8; 4096];
    while line.len() <= MAX_LINE {
        let n = match input.read(&mut block) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(end) = memchr::memchr(b'\n', &block[..n]) {
            line.extend_from_slice(&block[..end]);
            return Ok(line);
        }
        line.extend_from_slice(&block[..n]);
    }
    Ok(line)
}

/// Writes the reject file of every input with rejects from the scratch files `logs` (each in
/// input order). `seg_file[s]`: the input segment `s` is of; `seg_base[s]`: the lines of that
/// input before it. Returns (temporary path, final path) of each file written, flushed and
/// fsynced.
pub fn assemble(
    logs: &[PathBuf],
    seg_file: &[usize],
    seg_base: &[u64],
    names: &[PathBuf],
) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
    let mut readers = Vec::new();
    for p in logs {
        readers.push(BufReader::new(File::open(p)?));
    }
    // Each reader's next entry; the smallest (segment, line) goes next.
    let mut heads = Vec::new();
    for r in &mut readers {
        heads.push(scratch::read::<2, 1>(r)?);
    }
    let mut out: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut current: Option<(usize, BufWriter<File>)> = None;
    loop {
        let next = heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.as_ref().map(|([seg, line], _)| ((*seg, *line), i)))
            .min();
        let Some((_, i)) = next else {
            break;
        };
        let Some(([seg, line], [rest])) = heads[i].take() else {
            break;
        };
        heads[i] = scratch::read::<2, 1>(&mut readers[i])?;
        let (Some(&file), Some(&base)) = (seg_file.get(seg as usize), seg_base.get(seg as usize))
        else {
            return Err(std::io::Error::other("a reject of an unknown segment"));
        };
        if current.as_ref().map(|c| c.0) != Some(file) {
            if let Some((_, w)) = current.take() {
                close(w)?;
            }
            // Segments are in input order: an input's rejects come together, once.
            let final_path = names[file].clone();
            let tmp = focuser_formats::fsutil::temp_path(&final_path);
            if let Some(dir) = tmp.parent() {
                std::fs::create_dir_all(dir)?;
            }
            current = Some((file, BufWriter::new(File::create(&tmp)?)));
            out.push((tmp, final_path));
        }
        if let Some((_, w)) = current.as_mut() {
            writeln!(w, "{}\t{rest}", base + line)?;
        }
    }
    if let Some((_, w)) = current.take() {
        close(w)?;
    }
    for p in logs {
        std::fs::remove_file(p)?;
    }
    Ok(out)
}

fn close(w: BufWriter<File>) -> std::io::Result<()> {
    let f = w.into_inner().map_err(|e| e.into_error())?;
    f.sync_all()
}

/// The reject file of `input`, in `rejects_dir`: `<input's name>.rej`, fitted
/// ([`names::fitted`]).
pub fn reject_path(rejects_dir: &Path, input: &Path) -> PathBuf {
    rejects_dir.join(names::fitted(&names::file_name(input), ".rej"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_found_again_by_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in.log");
        let long = "x".repeat(10_000);
        std::fs::write(&p, format!("head\nab\r\n{long}\nlast")).unwrap();
        let mut f = File::open(&p).unwrap();
        assert_eq!(line_at(&mut f, 0).unwrap(), b"head");
        assert_eq!(line_at(&mut f, 5).unwrap(), b"ab\r");
        assert_eq!(line_at(&mut f, 9).unwrap(), long.as_bytes());
        assert_eq!(line_at(&mut f, 10_010).unwrap(), b"last");
        assert_eq!(line_at(&mut f, 99_999).unwrap(), b"");
    }
}
