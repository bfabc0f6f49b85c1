//! Driving the test daemon (`examples/testd.rs`) as an operator would: a config file in a
//! fresh rootdir, the real binary, real signals, its log and pidfile.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use focuser_tests::{kill_left, output_within, poll};
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
        let started = poll(Duration::from_secs(10), || {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
                panic!("testd exited during start-up ({status}): {err}");
            }
            self.log_text()
                .contains(&format!("started: pid {},", child.id()))
        });
        assert!(
            started,
            "testd did not start within 10 s:\n{}",
            self.log_text()
        );
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
        assert!(
            poll(timeout, || self.log_text().contains(needle)),
            "no {needle:?} in the log within {timeout:?}:\n{}",
            self.log_text()
        );
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

/// A daemon a failed test left running (its pidfile still there) is killed, not orphaned.
impl Drop for Testd {
    fn drop(&mut self) {
        kill_left(&self.pidfile, &self.config);
    }
}
