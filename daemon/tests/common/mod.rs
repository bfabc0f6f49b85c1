//! Driving the test daemon (`examples/testd.rs`) as an operator would: a config file in a
//! fresh rootdir, the real binary, real signals, its log and pidfile.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// target/debug/examples/testd, built by `cargo test` / `cargo nextest` with the tests.
pub fn testd_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let bin = profile_dir.join("examples/testd");
    assert!(
        bin.exists(),
        "{} is missing: build with `cargo build --examples`",
        bin.display()
    );
    bin
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A rootdir with a testd.cf in it.
pub struct Testd {
    pub dir: tempfile::TempDir,
    pub log: PathBuf,
    pub pidfile: PathBuf,
    pub config: PathBuf,
    base: String,
}

impl Testd {
    /// `extra` is appended to a config with rootdir, logfile, pidfile and a fast tick.
    pub fn new(extra: &str) -> Testd {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        let mut base = format!(
            "rootdir = {}\nlogfile = logs/testd.log\npidfile = logs/testd.pid\n",
            dir.path().display()
        );
        if !extra.contains("Work.TickMs") {
            base.push_str("Work.TickMs = 20\n");
        }
        let t = Testd {
            log: dir.path().join("logs/testd.log"),
            pidfile: dir.path().join("logs/testd.pid"),
            config: dir.path().join("testd.cf"),
            dir,
            base,
        };
        t.write_config(extra);
        t
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Rewrites the config: the base keys plus `extra`.
    pub fn write_config(&self, extra: &str) {
        std::fs::write(&self.config, format!("{}{extra}", self.base)).unwrap();
    }

    /// Replaces `from` (which must be there) by `to` in the config file.
    pub fn edit_config(&self, from: &str, to: &str) {
        let text = std::fs::read_to_string(&self.config).unwrap();
        assert!(
            text.contains(from),
            "{from:?} is not in the config:\n{text}"
        );
        std::fs::write(&self.config, text.replace(from, to)).unwrap();
    }

    /// Removes one line (a key the test wants unset) from the config.
    pub fn remove_line(&self, line: &str) {
        self.edit_config(&format!("{line}\n"), "");
    }

    pub fn append_config(&self, lines: &str) {
        let text = std::fs::read_to_string(&self.config).unwrap();
        std::fs::write(&self.config, format!("{text}{lines}")).unwrap();
    }

    pub fn command(&self) -> Command {
        let mut cmd = Command::new(testd_binary());
        cmd.arg("-c").arg(&self.config).env_remove("DATABASE_URL");
        cmd
    }

    /// Starts it in the foreground and waits until it logged that it started.
    pub fn spawn(&self) -> Child {
        let mut child = self
            .command()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = wait_for(Duration::from_secs(10), || {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
                panic!("testd exited during start-up ({status}): {err}");
            }
            self.log_text()
                .contains(&format!("started: pid {},", child.id()))
        });
        started.unwrap_or_else(|| panic!("testd did not start within 10 s:\n{}", self.log_text()));
        child
    }

    /// Runs it to its end (a start that should fail, `--check-config`, `--daemon`).
    pub fn run(&self, args: &[&str]) -> Output {
        output_within(self.command().args(args), Duration::from_secs(30))
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log holds `needle`; panics with the log when it does not in time.
    pub fn wait_log(&self, needle: &str, timeout: Duration) {
        wait_for(timeout, || self.log_text().contains(needle)).unwrap_or_else(|| {
            panic!(
                "no {needle:?} in the log within {timeout:?}:\n{}",
                self.log_text()
            )
        });
    }

    pub fn pid(&self) -> i32 {
        std::fs::read_to_string(&self.pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid()), signal).unwrap();
    }
}

/// Runs `cmd` to its end and collects its output; one still going after `timeout` is killed
/// and fails the test rather than hang it.
pub fn output_within(cmd: &mut Command, timeout: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A daemon a failed test left running (its pidfile still there) is killed, not orphaned;
/// only if it is this test's testd (a pid a test wrote by hand may belong to anyone now).
impl Drop for Testd {
    fn drop(&mut self) {
        let pid = std::fs::read_to_string(&self.pidfile)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok());
        let Some(pid) = pid.filter(|p| *p > 1 && alive(*p)) else {
            return;
        };
        let ours = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| {
                c.split(|b| *b == 0)
                    .any(|arg| arg == self.config.as_os_str().as_encoded_bytes())
            })
            .unwrap_or(false);
        if ours {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Polls `check` every 20 ms until it holds or `timeout` passes.
pub fn wait_for(timeout: Duration, mut check: impl FnMut() -> bool) -> Option<()> {
    let until = Instant::now() + timeout;
    loop {
        if check() {
            return Some(());
        }
        if Instant::now() > until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the child to exit; kills it and panics if it does not.
pub fn wait_exit(child: &mut Child, timeout: Duration) -> ExitStatus {
    let until = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the daemon did not exit within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// A plain HTTP/1.0 request; returns (status, headers, body).
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    auth: Option<&str>,
) -> (u16, String, String) {
    let stream = TcpStream::connect(addr).unwrap();
    http_on(stream, method, path, auth)
}

pub fn http_on(
    mut stream: TcpStream,
    method: &str,
    path: &str,
    auth: Option<&str>,
) -> (u16, String, String) {
    use base64::Engine;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: localhost\r\nContent-Length: 0\r\n");
    if let Some(a) = auth {
        req.push_str(&format!(
            "Authorization: Basic {}\r\n",
            base64::engine::general_purpose::STANDARD.encode(a)
        ));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}
