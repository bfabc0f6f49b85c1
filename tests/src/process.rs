//! Running the real binaries as an operator would, within deadlines: a command run to its end
//! (`--check-config`, a start that must fail), a daemon's exit, whether a process is alive, and
//! a daemon a failed test left running.

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::wait::poll;

/// Runs `cmd` to its end and collects its output; one still going after `timeout` is killed
/// and fails the test rather than hang it.
pub fn output_within(cmd: &mut Command, timeout: Duration) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    collect(child, timeout)
}

/// The same with `input` on its standard input (a filter such as `yacobot classify`).
pub fn output_with_input(cmd: &mut Command, input: &[u8], timeout: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let stdin = child.stdin.take();
    let input = input.to_vec();
    // Written from a thread: a filter writes while it reads, and both pipes are bounded.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        if let Some(mut s) = stdin {
            let _ = s.write_all(&input);
        }
    });
    let out = collect(child, timeout);
    let _ = writer.join();
    out
}

/// Drains the child's stdout and stderr while it runs, within `timeout`.
fn collect(mut child: Child, timeout: Duration) -> Output {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut text);
            }
            text
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let status = wait_exit(&mut child, timeout);
    let collect = |h: std::thread::JoinHandle<Vec<u8>>| h.join().unwrap_or_default();
    Output {
        status,
        stdout: collect(out),
        stderr: collect(err),
    }
}

/// `binary -c config [args] --check-config` (without `DATABASE_URL` from the test's
/// environment), run to its end within 30 s.
pub fn check_config(binary: impl AsRef<OsStr>, config: &Path, args: &[&str]) -> Output {
    output_within(
        Command::new(binary)
            .arg("-c")
            .arg(config)
            .args(args)
            .arg("--check-config")
            .env_remove("DATABASE_URL"),
        Duration::from_secs(30),
    )
}

/// Waits for the child to exit; kills it and fails the test if it does not within `timeout`.
pub fn wait_exit(child: &mut Child, timeout: Duration) -> ExitStatus {
    let mut status = None;
    poll(timeout, || {
        status = child
            .try_wait()
            .unwrap_or_else(|e| panic!("waiting for pid {}: {e}", child.id()));
        status.is_some()
    });
    status.unwrap_or_else(|| {
        let _ = child.kill();
        panic!("pid {} did not exit within {timeout:?}", child.id());
    })
}

/// Whether a process runs: it exists and is not a zombie (a detached daemon is reparented to
/// pid 1, which may take its time to reap it).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .map(|(_, rest)| !rest.starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Kills (SIGKILL) the daemon whose pid `pidfile` holds, if its command line names `config`:
/// a daemon a failed test left running is not orphaned, and a pid written by hand, which may
/// belong to anyone by then, is left alone. Whether one was killed.
pub fn kill_left(pidfile: &Path, config: &Path) -> bool {
    let Some(pid) = std::fs::read_to_string(pidfile)
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok())
        .filter(|p| *p > 1)
    else {
        return false;
    };
    // A zombie's command line is empty: it is not ours any more.
    let ours = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            c.split(|b| *b == 0)
                .any(|arg| arg == config.as_os_str().as_encoded_bytes())
        })
        .unwrap_or(false);
    ours && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok()
}
