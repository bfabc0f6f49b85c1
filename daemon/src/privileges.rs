//! Detaching from the terminal, and giving up root.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

use nix::sys::stat::{umask, Mode};
use nix::unistd::{
    chdir, chroot, dup2_stderr, dup2_stdin, dup2_stdout, fork, getegid, geteuid, getgid, getuid,
    setgid, setgroups, setsid, setuid, ForkResult, Gid, Group, Uid, User,
};

use crate::config::CommonConfig;
use crate::safefile::Owner;

#[derive(Debug, thiserror::Error)]
pub enum PrivilegeError {
    #[error("{0}")]
    Failed(String),
}

fn failed(what: &str, e: impl std::fmt::Display) -> PrivilegeError {
    PrivilegeError::Failed(format!("{what}: {e}"))
}

/// The detached daemon's line back to the command that started it: the starter waits until
/// the daemon is ready (pidfile taken, log open, privileges dropped) or has failed, and exits
/// 0 or 1 accordingly, so init scripts see real exit codes.
#[derive(Debug)]
pub struct Readiness(Option<OwnedFd>);

impl Readiness {
    /// Not detached: nobody waits.
    pub fn foreground() -> Readiness {
        Readiness(None)
    }

    pub fn ready(self) {
        if let Some(fd) = self.0 {
            let _ = File::from(fd).write_all(b"ok\n");
        }
    }

    pub fn fail(self, message: &str) {
        if let Some(fd) = self.0 {
            let _ = File::from(fd).write_all(message.as_bytes());
        }
    }
}

/// Detaches (fork, setsid, fork, umask, chdir, stdio to /dev/null) and returns in the daemon.
/// The original process waits for the daemon's readiness and exits with its verdict.
///
/// Must run before any thread exists: a forked child keeps only the forking thread.
#[allow(unsafe_code)]
pub fn daemonize(rootdir: &Path) -> Result<Readiness, PrivilegeError> {
    let (read, write) = nix::unistd::pipe().map_err(|e| failed("pipe", e))?;
    // SAFETY: called from `Runtime::start` before it creates any thread, so the child is a
    // faithful copy of a single-threaded process.
    match unsafe { fork() }.map_err(|e| failed("fork", e))? {
        ForkResult::Parent { .. } => {
            drop(write);
            let mut verdict = String::new();
            let _ = File::from(read).read_to_string(&mut verdict);
            if verdict == "ok\n" {
                std::process::exit(0);
            }
            let verdict = if verdict.is_empty() {
                "the daemon exited during start-up"
            } else {
                verdict.trim_end()
            };
            eprintln!("{verdict}");
            std::process::exit(1);
        }
        ForkResult::Child => {}
    }
    drop(read);
    setsid().map_err(|e| failed("setsid", e))?;
    // SAFETY: as above; still a single thread.
    match unsafe { fork() }.map_err(|e| failed("second fork", e))? {
        ForkResult::Parent { .. } => std::process::exit(0),
        ForkResult::Child => {}
    }
    umask(Mode::from_bits_truncate(0o027));
    chdir(rootdir).map_err(|e| failed(&format!("chdir {}", rootdir.display()), e))?;
    Ok(Readiness(Some(write)))
}

/// Points standard input, output and error at /dev/null (the daemon logs to its log file).
pub fn detach_stdio() -> Result<(), PrivilegeError> {
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(|e| failed("/dev/null", e))?;
    dup2_stdin(&null).map_err(|e| failed("dup2 stdin", e))?;
    dup2_stdout(&null).map_err(|e| failed("dup2 stdout", e))?;
    dup2_stderr(&null).map_err(|e| failed("dup2 stderr", e))?;
    Ok(())
}

/// What the process runs as after [`drop_privileges`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub chrooted: bool,
}

/// The user and group `user`/`group` name, looked up (`None` without `user`).
pub fn target(common: &CommonConfig) -> Result<Option<(Uid, Gid, String)>, PrivilegeError> {
    let Some(name) = &common.user else {
        return Ok(None);
    };
    let user = User::from_name(name)
        .map_err(|e| failed(&format!("user {name}"), e))?
        .ok_or_else(|| PrivilegeError::Failed(format!("user {name}: no such user")))?;
    let gid = match &common.group {
        Some(g) => {
            Group::from_name(g)
                .map_err(|e| failed(&format!("group {g}"), e))?
                .ok_or_else(|| PrivilegeError::Failed(format!("group {g}: no such group")))?
                .gid
        }
        None => user.gid,
    };
    Ok(Some((user.uid, gid, name.clone())))
}

/// Whom the daemon's own files (pidfile, log file) belong to: `user` if set, else whoever
/// runs it.
pub fn owner(common: &CommonConfig) -> Result<Owner, PrivilegeError> {
    Ok(match target(common)? {
        Some((uid, gid, name)) => Owner {
            uid: uid.as_raw(),
            gid: gid.as_raw(),
            name,
        },
        None => Owner::current(),
    })
}

/// What [`drop_privileges`] would refuse, found without changing anything (`--check-config`).
pub fn check(common: &CommonConfig) -> Result<(), PrivilegeError> {
    let target = target(common)?;
    let root = geteuid().is_root();
    if common.chroot && !root {
        return Err(PrivilegeError::Failed(
            "chroot = 1 needs the daemon to start as root".into(),
        ));
    }
    match target {
        Some((uid, _, name)) if !root && geteuid() != uid => Err(cannot_switch(&name)),
        _ => Ok(()),
    }
}

fn cannot_switch(name: &str) -> PrivilegeError {
    PrivilegeError::Failed(format!(
        "user = {name}, but the daemon was started as uid {} and cannot switch; start it as root or as {name}",
        geteuid()
    ))
}

/// As root with `user` set: chroot to `rootdir` if asked, then setgroups, setgid, setuid,
/// checking each and refusing to go on as root. Not as root: `user` must be who we already
/// are (nothing can be dropped), and `chroot` is refused.
pub fn drop_privileges(common: &CommonConfig) -> Result<Identity, PrivilegeError> {
    check(common)?;
    let root = geteuid().is_root();
    let target = target(common)?;
    if common.chroot {
        chroot(&common.rootdir)
            .map_err(|e| failed(&format!("chroot {}", common.rootdir.display()), e))?;
        chdir("/").map_err(|e| failed("chdir / after chroot", e))?;
    }
    // Not as root, `check` made sure we already are `user`.
    if let Some((uid, gid, name)) = target.filter(|_| root) {
        setgroups(&[gid]).map_err(|e| failed("setgroups", e))?;
        setgid(gid).map_err(|e| failed("setgid", e))?;
        setuid(uid).map_err(|e| failed("setuid", e))?;
        let dropped = getuid() == uid && geteuid() == uid && getgid() == gid && getegid() == gid;
        if !dropped || (!uid.is_root() && setuid(Uid::from_raw(0)).is_ok()) {
            return Err(PrivilegeError::Failed(format!(
                "could not drop privileges to {name}; refusing to run as root"
            )));
        }
    }
    Ok(Identity {
        uid: geteuid().as_raw(),
        gid: getegid().as_raw(),
        chrooted: common.chroot,
    })
}
