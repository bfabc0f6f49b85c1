//! An inbox directory: the queue files ready in it, a file held open while it is loaded, and
//! where files go once done with.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use focuser_formats::fsutil;

/// The queue files ready in `dir`, in name order. Names starting with `.` are being written
/// (published by rename later) and are left alone, as are directories (`bad/`, `done/`). A
/// name that is not UTF-8 is listed too: it is not a queue file's, and the loader sets it
/// aside in `bad/` once, instead of warning about it at every pass.
pub fn ready(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().as_bytes().starts_with(b".") || !entry.file_type()?.is_file() {
            continue;
        }
        files.push(entry.path());
    }
    files.sort();
    Ok(files)
}

/// A queue file held open while it is loaded: it is checked and applied through this one
/// descriptor, so a file renamed over its name meanwhile is neither applied nor recorded in
/// its place, and one written in place meanwhile is noticed.
pub struct Held {
    pub file: File,
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

impl Held {
    pub fn open(path: &Path) -> std::io::Result<Held> {
        let file = File::open(path)?;
        let m = file.metadata()?;
        Ok(Held {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            file,
        })
    }

    /// Has the file been written to (its size or modification time) since it was opened?
    pub fn changed(&self) -> std::io::Result<bool> {
        let m = self.file.metadata()?;
        Ok(m.len() != self.len || (m.mtime(), m.mtime_nsec()) != self.mtime)
    }

    /// Does `path` still name this file (not another one renamed over it)?
    pub fn named(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == (self.dev, self.ino))
    }
}

/// Moves `file` into `dir/sub/` (created if need be), durably.
pub fn move_into(file: &Path, sub: &str) -> std::io::Result<PathBuf> {
    let (dir, name) = parts(file)?;
    let target_dir = dir.join(sub);
    std::fs::create_dir_all(&target_dir)?;
    let target = target_dir.join(name);
    fsutil::publish(file, &target)?;
    Ok(target)
}

/// Longest name a file gets in `bad/` before its suffixes (`.2`, `.why`, a temporary's), so
/// that every name derived from it fits a directory entry (255 bytes).
const MAX_BAD_NAME: usize = 200;

/// Moves a bad file to `bad/`, with why beside it (`bad/<name>.why`, written first). A file
/// of a name already there is kept beside it as `<name>.2`, `<name>.3` …, each with its own
/// `.why`. A name that is not UTF-8 (bytes that are not become U+FFFD) or is very long is
/// changed to one that is; the `.why` then gives the whole name.
pub fn reject(file: &Path, why: &str) -> std::io::Result<PathBuf> {
    let (dir, name) = parts(file)?;
    let bad = dir.join("bad");
    std::fs::create_dir_all(&bad)?;
    let lossy = name.to_string_lossy();
    let mut end = lossy.len().min(MAX_BAD_NAME);
    while !lossy.is_char_boundary(end) {
        end -= 1;
    }
    let base = OsStr::new(&lossy[..end]);
    let target = free_name(&bad, base)?;
    fsutil::write_atomically(&bad.join(with_suffix(&target, ".why")), |w| {
        writeln!(w, "{why}")?;
        if base != name {
            writeln!(w, "file name: {name:?}")?;
        }
        Ok(())
    })?;
    let to = bad.join(target);
    fsutil::publish(file, &to)?;
    Ok(to)
}

/// `base`, or `base.N` for the least N ≥ 2 such that neither it nor its `.why` is in `bad`.
fn free_name(bad: &Path, base: &OsStr) -> std::io::Result<OsString> {
    let taken = |name: &OsStr| -> std::io::Result<bool> {
        Ok(bad.join(name).try_exists()? || bad.join(with_suffix(name, ".why")).try_exists()?)
    };
    if !taken(base)? {
        return Ok(base.to_os_string());
    }
    let mut n: u64 = 2;
    loop {
        let name = with_suffix(base, &format!(".{n}"));
        if !taken(&name)? {
            return Ok(name);
        }
        n += 1;
    }
}

fn with_suffix(name: &OsStr, suffix: &str) -> OsString {
    let mut name = name.to_os_string();
    name.push(suffix);
    name
}

/// Deletes an applied file, durably.
pub fn remove(file: &Path) -> std::io::Result<()> {
    let (dir, _) = parts(file)?;
    std::fs::remove_file(file)?;
    fsutil::sync_dir(dir)
}

fn parts(file: &Path) -> std::io::Result<(&Path, &std::ffi::OsStr)> {
    match (file.parent(), file.file_name()) {
        (Some(dir), Some(name)) => Ok((dir, name)),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: not a file in a directory", file.display()),
        )),
    }
}
