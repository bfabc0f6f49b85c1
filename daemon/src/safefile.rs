//! Opening the files a daemon writes, often as root before it drops privileges (pidfile, log
//! file), so that a link the service user planted cannot redirect them (CWE-59).
//!
//! The file is opened relative to its directory's descriptor with `O_NOFOLLOW` (a symbolic link
//! in its place is refused, never followed, even if it is planted between two looks) and
//! `O_NONBLOCK` (a FIFO in its place cannot hang the start), then checked on the open
//! descriptor, not by name: a regular file with one link, owned by root or by the daemon's
//! user. Only then is it truncated or written. The directories above it are taken as
//! configured (`/var/run` is a link on most systems): keep them writable by root and the
//! service user only.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{fcntl, open, openat, FcntlArg, OFlag};
use nix::sys::stat::Mode;

#[derive(Debug, thiserror::Error)]
pub enum SafeFileError {
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{path} is a symbolic link: refusing to follow it (remove the link; the daemon creates the file itself)")]
    Link { path: String },
    #[error("{path} is not a regular file ({kind}): refusing it")]
    NotRegular { path: String, kind: &'static str },
    #[error("{path} has {links} hard links: refusing to write through one (remove it; the daemon creates the file itself)")]
    HardLinks { path: String, links: u64 },
    #[error("{path} is owned by uid {uid}, not by {owner} (uid {expected}) or root: refusing it")]
    Owner {
        path: String,
        uid: u32,
        owner: String,
        expected: u32,
    },
}

/// Whom a daemon's own files belong to: the user it runs as (after dropping privileges).
/// Files owned by root are accepted too (root made them before the drop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
    pub name: String,
}

impl Owner {
    /// The user this process runs as now.
    pub fn current() -> Owner {
        let uid = nix::unistd::geteuid();
        Owner {
            uid: uid.as_raw(),
            gid: nix::unistd::getegid().as_raw(),
            name: nix::unistd::User::from_uid(uid)
                .ok()
                .flatten()
                .map(|u| u.name)
                .unwrap_or_else(|| format!("uid {uid}")),
        }
    }
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read and write, created with mode 0644, never truncated by the open (a pidfile: it may
    /// belong to a running instance).
    ReadWrite,
    /// Appending, created with mode 0666 less the umask (a log file). A file this open
    /// created is given to the owner, so that the daemon can reopen it after the drop.
    Append,
}

fn io(path: &Path, error: impl Into<std::io::Error>) -> SafeFileError {
    SafeFileError::Io {
        path: path.display().to_string(),
        error: error.into(),
    }
}

/// Opens `path` as `access` says, refusing links, non-regular files and strangers' files.
pub fn open_owned(path: &Path, access: Access, owner: &Owner) -> Result<File, SafeFileError> {
    let name = path
        .file_name()
        .ok_or_else(|| io(path, std::io::Error::other("not a file name")))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = open(
        dir,
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io(dir, e))?;
    let base = OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_CLOEXEC
        | match access {
            Access::ReadWrite => OFlag::O_RDWR,
            Access::Append => OFlag::O_WRONLY | OFlag::O_APPEND,
        };
    let mode = match access {
        Access::ReadWrite => Mode::from_bits_truncate(0o644),
        Access::Append => Mode::from_bits_truncate(0o666),
    };
    let (fd, created) = open_at(&dir, name, base, mode, path)?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(|e| io(path, e))?;
    check(path, &meta, owner)?;
    // O_NONBLOCK was for the open only (a FIFO); it means nothing to a regular file, but
    // leave the descriptor as plain as any other.
    let flags = fcntl(file.as_fd(), FcntlArg::F_GETFL).map_err(|e| io(path, e))?;
    fcntl(
        file.as_fd(),
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) & !OFlag::O_NONBLOCK),
    )
    .map_err(|e| io(path, e))?;
    if created && access == Access::Append && meta.uid() != owner.uid {
        std::os::unix::fs::fchown(&file, Some(owner.uid), Some(owner.gid))
            .map_err(|e| io(path, e))?;
    }
    Ok(file)
}

/// Creates `name` in `dir` (O_EXCL) or opens the file already there; tells which.
fn open_at(
    dir: &std::os::fd::OwnedFd,
    name: &OsStr,
    base: OFlag,
    mode: Mode,
    path: &Path,
) -> Result<(std::os::fd::OwnedFd, bool), SafeFileError> {
    // A file removed between the two opens is simply created on the next round.
    for _ in 0..3 {
        match openat(dir, name, base | OFlag::O_CREAT | OFlag::O_EXCL, mode) {
            Ok(fd) => return Ok((fd, true)),
            Err(Errno::EEXIST) => {}
            Err(e) => return Err(io(path, e)),
        }
        match openat(dir, name, base, Mode::empty()) {
            Ok(fd) => return Ok((fd, false)),
            Err(Errno::ELOOP) => {
                return Err(SafeFileError::Link {
                    path: path.display().to_string(),
                })
            }
            Err(Errno::ENOENT) => continue,
            // A FIFO without a reader (O_NONBLOCK), or a socket.
            Err(Errno::ENXIO) => {
                return Err(SafeFileError::NotRegular {
                    path: path.display().to_string(),
                    kind: "a FIFO, socket or device",
                })
            }
            Err(e) => return Err(io(path, e)),
        }
    }
    Err(io(path, std::io::Error::other("keeps disappearing")))
}

/// The rules a daemon's own file must meet, on its metadata (of the open descriptor, or
/// `lstat`'s for [`check_path`]).
fn check(path: &Path, meta: &Metadata, owner: &Owner) -> Result<(), SafeFileError> {
    let shown = || path.display().to_string();
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(SafeFileError::Link { path: shown() });
    }
    if !kind.is_file() {
        return Err(SafeFileError::NotRegular {
            path: shown(),
            kind: if kind.is_dir() {
                "a directory"
            } else {
                "a FIFO, socket or device"
            },
        });
    }
    if meta.nlink() > 1 {
        return Err(SafeFileError::HardLinks {
            path: shown(),
            links: meta.nlink(),
        });
    }
    if meta.uid() != 0 && meta.uid() != owner.uid {
        return Err(SafeFileError::Owner {
            path: shown(),
            uid: meta.uid(),
            owner: owner.name.clone(),
            expected: owner.uid,
        });
    }
    Ok(())
}

/// What [`open_owned`] would refuse, found without opening anything (`--check-config`): the
/// directory must exist, and a file already there must meet the same rules.
pub fn check_path(path: &Path, owner: &Owner) -> Result<(), SafeFileError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => check(path, &meta, owner),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let bad = |why: &dyn std::fmt::Display| {
                io(
                    path,
                    std::io::Error::other(format!("its directory {}: {why}", dir.display())),
                )
            };
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => Ok(()),
                Ok(_) => Err(bad(&"not a directory")),
                Err(e) => Err(bad(&e)),
            }
        }
        Err(e) => Err(io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_a_fifo_and_a_hard_link_are_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let me = Owner::current();
        let target = dir.path().join("target");
        std::fs::write(&target, "precious\n").unwrap();
        let link = dir.path().join("x.pid");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for access in [Access::ReadWrite, Access::Append] {
            let e = open_owned(&link, access, &me).unwrap_err();
            assert!(matches!(e, SafeFileError::Link { .. }), "{e}");
        }
        assert!(matches!(
            check_path(&link, &me),
            Err(SafeFileError::Link { .. })
        ));

        let fifo = dir.path().join("fifo.log");
        nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o600)).unwrap();
        let e = open_owned(&fifo, Access::Append, &me).unwrap_err();
        assert!(matches!(e, SafeFileError::NotRegular { .. }), "{e}");

        let hard = dir.path().join("hard.log");
        std::fs::hard_link(&target, &hard).unwrap();
        let e = open_owned(&hard, Access::Append, &me).unwrap_err();
        assert!(
            matches!(e, SafeFileError::HardLinks { links: 2, .. }),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");

        let fresh = dir.path().join("new.log");
        check_path(&fresh, &me).unwrap();
        open_owned(&fresh, Access::Append, &me).unwrap();
        assert!(fresh.is_file());
        let e = check_path(&dir.path().join("no/such.log"), &me).unwrap_err();
        assert!(e.to_string().contains("no/such"), "{e}");
    }
}
