//! An inbox directory: the queue files ready in it, and where they go once done with.

use std::io::Write;
use std::path::{Path, PathBuf};

use focuser_schema::fsutil;

/// The queue files ready in `dir`, in name order. Names starting with `.` are being written
/// (published by rename later) and are left alone, as are directories (`bad/`, `done/`).
pub fn ready(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            log::warn!(
                "{}: {:?}: not a UTF-8 file name; left alone",
                dir.display(),
                entry.file_name()
            );
            continue;
        };
        if name.starts_with('.') || !entry.file_type()?.is_file() {
            continue;
        }
        files.push(entry.path());
    }
    files.sort();
    Ok(files)
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

/// Moves a bad file to `bad/`, with why beside it (`bad/<name>.why`, written first).
pub fn reject(file: &Path, why: &str) -> std::io::Result<PathBuf> {
    let (dir, name) = parts(file)?;
    let bad = dir.join("bad");
    std::fs::create_dir_all(&bad)?;
    let mut why_name = name.to_os_string();
    why_name.push(".why");
    fsutil::write_atomically(&bad.join(why_name), |w| writeln!(w, "{why}"))?;
    move_into(file, "bad")
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
