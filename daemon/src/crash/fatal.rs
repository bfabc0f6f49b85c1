//! The fatal signals' handler: SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT and SIGQUIT write a
//! line to the log, hand a report to `notify_command` (rate-limited like the others), move to
//! `core_dir` and end the process with the signal's own action, which dumps the core.
//!
//! A handler may only make async-signal-safe calls: no allocation, no lock, no formatting.
//! Everything it writes is prepared at start ([`install`]); it writes with `write(2)`, starts
//! the command with a raw `clone(2)` (glibc's `fork` runs the allocator's fork handlers,
//! which deadlock if the crash happened inside the allocator) and `execve(2)`.
#![allow(unsafe_code)]

use std::ffi::{c_int, CString};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

use nix::libc;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

use super::notify::{Settings, COMMAND_PATH};

/// The signals that end a daemon with a core file.
const FATAL: [Signal; 6] = [
    Signal::SIGSEGV,
    Signal::SIGBUS,
    Signal::SIGILL,
    Signal::SIGFPE,
    Signal::SIGABRT,
    Signal::SIGQUIT,
];
/// How long the handler waits for the report's command before dumping core anyway.
const COMMAND_WAIT_MS: u32 = 5000;

/// The log file's descriptor as the logger last opened it (standard error without a file).
static LOG_FD: AtomicI32 = AtomicI32::new(2);
static PLAN: OnceLock<Plan> = OnceLock::new();

/// The logger tells where its file is now (at start and after every reopen).
pub(crate) fn set_log_fd(fd: RawFd) {
    LOG_FD.store(fd, Ordering::Relaxed);
}

/// What the handler writes and runs, prepared at start.
struct Plan {
    /// `progname[pid] ERROR fatal signal `: the log line after its time.
    prefix: Vec<u8>,
    /// `: dumping core in DIR\n`.
    suffix: Vec<u8>,
    core_dir: CString,
    mail: Option<Mail>,
}

struct Mail {
    /// Owns the strings `argv` points into.
    _args: Vec<CString>,
    _path: CString,
    /// Addresses of the argument strings, then 0 (a C `argv`).
    argv: Vec<usize>,
    envp: [usize; 2],
    /// The message around the signal's name: head NAME body NAME tail.
    head: Vec<u8>,
    body: Vec<u8>,
    tail: Vec<u8>,
    stamp: CString,
    interval: i64,
    /// `progname[pid] ` for the handler's own lines about the report.
    who: Vec<u8>,
}

/// Prepares the plan and installs the handlers (once a process; later calls keep the first).
pub(super) fn install(settings: &Settings, core_dir: &Path) -> std::io::Result<()> {
    let nul = |s: &[u8]| CString::new(s).map_err(|e| std::io::Error::other(e.to_string()));
    let who = format!("{}[{}] ", settings.progname, std::process::id());
    let shown = core_dir.display();
    let mail = match &settings.sender {
        None => None,
        Some(s) => {
            let args = settings
                .command
                .iter()
                .map(|a| nul(a.as_bytes()))
                .collect::<Result<Vec<_>, _>>()?;
            let path = nul(COMMAND_PATH.as_bytes())?;
            let mut argv: Vec<usize> = args.iter().map(|a| a.as_ptr() as usize).collect();
            argv.push(0);
            let envp = [path.as_ptr() as usize, 0];
            Some(Mail {
                head: format!(
                    "To: {}\nSubject: focuser {} on {}: fatal signal ",
                    s.maintainer, s.progname, s.host
                )
                .into_bytes(),
                body: format!(
                    "\nAuto-Submitted: auto-generated\nContent-Type: text/plain; charset=utf-8\n\n\
                     {} (pid {}) on {} was killed by ",
                    s.progname, s.pid, s.host
                )
                .into_bytes(),
                tail: format!(".\nIts core file goes to {shown} (core_limit and the kernel's core_pattern permitting).\n{}\n", s.log).into_bytes(),
                stamp: nul(settings.stamp.as_os_str().as_bytes())?,
                interval: i64::try_from(settings.interval.as_secs()).unwrap_or(i64::MAX),
                who: who.clone().into_bytes(),
                _args: args,
                _path: path,
                argv,
                envp,
            })
        }
    };
    let plan = Plan {
        prefix: format!("{who}ERROR fatal signal ").into_bytes(),
        suffix: format!(": dumping core in {shown}\n").into_bytes(),
        core_dir: nul(core_dir.as_os_str().as_bytes())?,
        mail,
    };
    if PLAN.set(plan).is_err() {
        return Ok(());
    }
    let action = SigAction::new(
        SigHandler::Handler(on_fatal),
        // On the alternate stack (a stack overflow is a SIGSEGV); once only.
        SaFlags::SA_ONSTACK | SaFlags::SA_RESETHAND,
        SigSet::empty(),
    );
    for signal in FATAL {
        // SAFETY: the handler makes only async-signal-safe calls (see the module's comment).
        unsafe { sigaction(signal, &action) }.map_err(std::io::Error::from)?;
    }
    Ok(())
}

extern "C" fn on_fatal(sig: c_int) {
    if let Some(plan) = PLAN.get() {
        let name = signal_name(sig);
        let fd = LOG_FD.load(Ordering::Relaxed);
        log_line(fd, &[&plan.prefix, name, &plan.suffix]);
        if let Some(mail) = &plan.mail {
            mail.send(fd, name);
        }
        // SAFETY: chdir(2) is async-signal-safe; the string lives in the static plan.
        unsafe { libc::chdir(plan.core_dir.as_ptr()) };
    }
    // SA_RESETHAND restored the default action; raised again (blocked until the handler
    // returns), it ends the process with a core, whether the signal was a fault or sent.
    // SAFETY: raise(3) is async-signal-safe.
    unsafe { libc::raise(sig) };
}

impl Mail {
    fn send(&self, log: RawFd, name: &[u8]) {
        let now = now();
        // SAFETY: stat, open and close are async-signal-safe; `st` is plain data.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(self.stamp.as_ptr(), &mut st) == 0 && now.0 - st.st_mtime < self.interval
            {
                log_line(
                    log,
                    &[
                        &self.who,
                        b"WARN  report not sent: the last one was less than notify_interval ago\n",
                    ],
                );
                return;
            }
            let fd = libc::open(
                self.stamp.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600,
            );
            if fd >= 0 {
                libc::close(fd);
            }
        }
        let mut pipe = [0 as c_int; 2];
        // SAFETY: pipe2, clone, dup2, execve, _exit, write, close and waitpid are
        // async-signal-safe; the child only execs (or exits), using the static plan's strings.
        unsafe {
            if libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return;
            }
            let pid = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0);
            if pid == 0 {
                libc::dup2(pipe[0], 0);
                libc::execve(
                    self.argv[0] as *const libc::c_char,
                    self.argv.as_ptr() as *const *const libc::c_char,
                    self.envp.as_ptr() as *const *const libc::c_char,
                );
                libc::_exit(127);
            }
            libc::close(pipe[0]);
            if pid > 0 {
                for part in [&self.head[..], name, &self.body, name, &self.tail] {
                    write_all(pipe[1], part);
                }
            }
            libc::close(pipe[1]);
            if pid > 0 {
                let status = wait(pid as libc::pid_t);
                let line: &[u8] = match status {
                    Some(0) => b"INFO  report sent\n",
                    Some(_) => b"ERROR cannot send the report: notify_command failed\n",
                    None => b"ERROR cannot send the report: notify_command still running\n",
                };
                log_line(log, &[&self.who, line]);
            }
        }
    }
}

/// The child's wait status, waiting at most `COMMAND_WAIT_MS`.
fn wait(pid: libc::pid_t) -> Option<c_int> {
    let nap = libc::timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    };
    for _ in 0..COMMAND_WAIT_MS / 20 {
        let mut status: c_int = 0;
        // SAFETY: waitpid and nanosleep are async-signal-safe.
        unsafe {
            match libc::waitpid(pid, &mut status, libc::WNOHANG) {
                0 => {
                    libc::nanosleep(&nap, std::ptr::null_mut());
                }
                p if p == pid => return Some(status),
                _ => return Some(-1),
            }
        }
    }
    None
}

/// A log line: the time as the logger writes it, then `parts`.
fn log_line(fd: RawFd, parts: &[&[u8]]) {
    let (secs, millis) = now();
    write_all(fd, &stamp(secs, millis));
    write_all(fd, b" ");
    for p in parts {
        write_all(fd, p);
    }
}

fn write_all(fd: RawFd, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: write(2) is async-signal-safe; `bytes` is valid for its length.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Seconds and milliseconds since the epoch (clock_gettime is async-signal-safe).
fn now() -> (i64, u32) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    (ts.tv_sec, (ts.tv_nsec / 1_000_000) as u32)
}

/// `YYYY-MM-DD HH:MM:SS.mmm` (UTC), as the logger's lines start, without formatting machinery.
fn stamp(secs: i64, millis: u32) -> [u8; 23] {
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = focuser_formats::stamp::civil_from_days(days);
    let mut out = *b"0000-00-00 00:00:00.000";
    let mut put = |at: usize, width: usize, mut v: i64| {
        for i in (0..width).rev() {
            out[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, y);
    put(5, 2, m);
    put(8, 2, d);
    put(11, 2, rest / 3600);
    put(14, 2, rest / 60 % 60);
    put(17, 2, rest % 60);
    put(20, 3, i64::from(millis));
    out
}

fn signal_name(sig: c_int) -> &'static [u8] {
    match sig {
        libc::SIGSEGV => b"SIGSEGV",
        libc::SIGBUS => b"SIGBUS",
        libc::SIGILL => b"SIGILL",
        libc::SIGFPE => b"SIGFPE",
        libc::SIGABRT => b"SIGABRT",
        libc::SIGQUIT => b"SIGQUIT",
        _ => b"(another signal)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handlers_time_is_the_loggers() {
        for secs in [
            0_i64,
            951_782_400,
            1_795_000_000,
            4_102_444_799,
            1_709_164_800,
        ] {
            let want = chrono::DateTime::from_timestamp(secs, 0)
                .unwrap()
                .format("%Y-%m-%d %H:%M:%S.042")
                .to_string();
            assert_eq!(std::str::from_utf8(&stamp(secs, 42)).unwrap(), want);
        }
    }
}
