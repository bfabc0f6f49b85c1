//! The pidfile: opened without truncating and without following links (see [`crate::safefile`]),
//! locked with `flock`, then written. The lock, not the file's existence, says whether the
//! daemon runs: a stale file is simply taken over.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::safefile::{self, Access, Owner, SafeFileError};

#[derive(Debug, thiserror::Error)]
pub enum PidfileError {
    #[error("already running as pid {pid} (pidfile {path} is locked)")]
    AlreadyRunning { pid: String, path: String },
    #[error("pidfile {path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("pidfile {0}")]
    Refused(SafeFileError),
}

/// A locked pidfile holding our pid; the lock lasts as long as this value.
#[derive(Debug)]
pub struct Pidfile {
    path: PathBuf,
    file: Flock<File>,
}

impl Pidfile {
    /// Takes the pidfile at `path`, which must be a regular file of `owner`'s or root's if it
    /// is there already.
    pub fn acquire(path: &Path, owner: &Owner) -> Result<Pidfile, PidfileError> {
        let io = |error| PidfileError::Io {
            path: path.display().to_string(),
            error,
        };
        let file = safefile::open_owned(path, Access::ReadWrite, owner).map_err(|e| match e {
            SafeFileError::Io { error, .. } => io(error),
            refused => PidfileError::Refused(refused),
        })?;
        let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((mut file, Errno::EWOULDBLOCK)) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim();
                return Err(PidfileError::AlreadyRunning {
                    pid: if pid.is_empty() {
                        "(unknown)".into()
                    } else {
                        pid.to_string()
                    },
                    path: path.display().to_string(),
                });
            }
            Err((_, errno)) => return Err(io(std::io::Error::from(errno))),
        };
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(Pidfile {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file at a clean exit, still holding the lock so no newcomer sees it half gone.
    pub fn remove(self) -> std::io::Result<()> {
        let result = std::fs::remove_file(&self.path);
        drop(self.file);
        result
    }
}

/// Removes the pidfile at `path` if it names this process (for forced exits from other threads).
pub(crate) fn remove_if_ours(path: &Path) {
    if let Ok(text) = std::fs::read_to_string(path) {
        if text.trim() == std::process::id().to_string() {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_and_names_the_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.pid");
        let first = Pidfile::acquire(&path, &Owner::current()).unwrap();
        let pid = std::process::id().to_string();
        assert_eq!(std::fs::read_to_string(&path).unwrap().trim(), pid);
        match Pidfile::acquire(&path, &Owner::current()) {
            Err(PidfileError::AlreadyRunning { pid: p, .. }) => assert_eq!(p, pid),
            other => panic!("expected AlreadyRunning, got {other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(&path).unwrap().trim(),
            pid,
            "left untouched"
        );
        first.remove().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn a_stale_file_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.pid");
        std::fs::write(&path, "999999999 and some junk that is longer\n").unwrap();
        let p = Pidfile::acquire(&path, &Owner::current()).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        drop(p);
    }
}
