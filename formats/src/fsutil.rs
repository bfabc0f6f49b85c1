//! Publishing files that another process reads: temporary name, fsync, rename, fsync the
//! directory. A reader sees the old file or the whole new one, and after the rename returns
//! the new one survives a crash.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// `dir/.name.tmp`: the temporary name a file is written under before it is published.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

/// Writes `path` atomically with what `fill` writes, and makes it durable.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let tmp = temp_path(path);
    write_synced(&tmp, fill)?;
    publish(&tmp, path)
}

/// Writes and fsyncs `path` (under its final name: the caller publishes or discards it).
pub fn write_synced(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    fill(&mut w)?;
    w.flush()?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

/// Renames `from` to `to` and fsyncs the directory of `to` (and of `from`, if another).
pub fn publish(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::rename(from, to)?;
    sync_dir(parent(to))?;
    if parent(from) != parent(to) {
        sync_dir(parent(from))?;
    }
    Ok(())
}

pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

fn parent(p: &Path) -> &Path {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Removes the file at `path`; one that is not there is no error.
pub fn remove_if_exists(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_published_file_replaces_the_old_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state");
        write_atomically(&p, |w| w.write_all(b"one")).unwrap();
        write_atomically(&p, |w| w.write_all(b"two")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert!(!temp_path(&p).exists());
        assert_eq!(temp_path(&p), dir.path().join(".state.tmp"));
    }
}
