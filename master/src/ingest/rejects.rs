//! Reject files: `<line> \t <reason> \t <the line, cut at 1 KiB>` for each rejected line of
//! one input. Each reading thread notes its rejects in a scratch file, with line numbers
//! counted from the start of its range; once every thread is done, the reject file of each
//! input is written from them in line order.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use focuser_schema::formats::reflog::Reject;

use crate::scratch;

/// How much of a rejected line its reject file keeps.
const REJECT_EXCERPT: usize = 1024;

/// One thread's rejects: (input, line in its range) and the rest of the reject line.
pub struct RejectLog {
    path: PathBuf,
    out: Option<BufWriter<File>>,
}

impl RejectLog {
    pub fn new(path: PathBuf) -> Self {
        RejectLog { path, out: None }
    }

    pub fn add(
        &mut self,
        file: usize,
        line: u64,
        why: &Reject,
        text: &[u8],
    ) -> std::io::Result<()> {
        if self.out.is_none() {
            self.out = Some(BufWriter::new(File::create(&self.path)?));
        }
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        let cut = &text[..text.len().min(REJECT_EXCERPT)];
        let excerpt = String::from_utf8_lossy(cut).replace(['\n', '\r'], " ");
        let more = if text.len() > REJECT_EXCERPT {
            format!(" [... {} bytes]", text.len())
        } else {
            String::new()
        };
        let rest = format!("{why}\t{excerpt}{more}");
        scratch::write(out, [file as u64, line], &[rest.as_bytes()])
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

/// Writes the reject file of every input with rejects, from the threads' scratch files (in
/// thread order, which is input order). `bases[t][f]`: lines of input `f` before thread `t`'s
/// range. Returns (temporary path, final path) of each file written, flushed and fsynced.
pub fn assemble(
    logs: &[Option<PathBuf>],
    bases: &[Vec<u64>],
    names: &[PathBuf],
) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
    let mut readers = Vec::new();
    for (t, log) in logs.iter().enumerate() {
        if let Some(p) = log {
            readers.push((t, BufReader::new(File::open(p)?)));
        }
    }
    let mut out: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut current: Option<(usize, BufWriter<File>)> = None;
    for (t, r) in &mut readers {
        while let Some(([file, line], [rest])) = scratch::read::<2, 1>(r)? {
            let file = file as usize;
            if current.as_ref().map(|c| c.0) != Some(file) {
                if let Some((_, w)) = current.take() {
                    close(w)?;
                }
                let (tmp, first) = names_for(names, file, &mut out);
                if let Some(dir) = tmp.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                // An input split between threads is written in turns.
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(!first)
                    .truncate(first)
                    .open(&tmp)?;
                current = Some((file, BufWriter::new(f)));
            }
            if let Some((_, w)) = current.as_mut() {
                let n = bases[*t].get(file).copied().unwrap_or(0) + line;
                writeln!(w, "{n}\t{rest}")?;
            }
        }
    }
    if let Some((_, w)) = current.take() {
        close(w)?;
    }
    for p in logs.iter().flatten() {
        std::fs::remove_file(p)?;
    }
    Ok(out)
}

/// The temporary path of input `file`'s reject file (`names[file]` is the final one), and
/// whether this is the first time: it is then noted in `out`.
fn names_for(names: &[PathBuf], file: usize, out: &mut Vec<(PathBuf, PathBuf)>) -> (PathBuf, bool) {
    let final_path = names[file].clone();
    let tmp = focuser_schema::fsutil::temp_path(&final_path);
    let first = !out.iter().any(|(_, f)| *f == final_path);
    if first {
        out.push((tmp.clone(), final_path));
    }
    (tmp, first)
}

fn close(w: BufWriter<File>) -> std::io::Result<()> {
    let f = w.into_inner().map_err(|e| e.into_error())?;
    f.sync_all()
}

/// The reject file of `input`, in `rejects_dir`.
pub fn reject_path(rejects_dir: &Path, input: &Path) -> PathBuf {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    rejects_dir.join(format!("{name}.rej"))
}
