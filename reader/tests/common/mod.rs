//! A reader rig: a temporary root with a secret, a writer's store, receivers and a sender,
//! each a real process started from its config file.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use focuser_formats::segment::{doc_hash, Cursor, Position, StoredItem};
use focuser_tests::{free_port, poll};

pub const SECRET: &str = "a-shared-secret-of-enough-length";

pub struct Rig {
    pub dir: tempfile::TempDir,
    /// This rig's own: a port freed by `free_port` may be taken by another test's daemon
    /// meanwhile, and a sender of another rig must then fail the handshake, not deliver.
    pub secret: String,
}

impl Rig {
    pub fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let unique = dir
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let secret_text = format!("{SECRET}-{unique}");
        let secret = dir.path().join("reader.secret");
        std::fs::write(&secret, &secret_text).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(dir.path().join("hosts.allow"), "127.0.0.1\n::1\n").unwrap();
        Rig {
            dir,
            secret: secret_text,
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn store(&self) -> PathBuf {
        self.root().join("segments")
    }

    /// A receiver's config; returns (config file, listen port).
    pub fn receiver_cf(&self, name: &str, extra: &str) -> (PathBuf, u16) {
        let port = free_port();
        let root = self.root().join(name);
        std::fs::create_dir_all(root.join("logs")).unwrap();
        let cf = self.root().join(format!("{name}.cf"));
        std::fs::write(
            &cf,
            format!(
                "rootdir = {root}\nlogfile = logs/reader.log\npidfile = logs/reader.pid\n\
                 debuglevel = 40\nallowdb = {allow}\nname = {name}\nsecret_file = {secret}\n\
                 Recv.Listen = 127.0.0.1:{port}\nRecv.StoreDir = received\nRecv.InboxDir = inbox\n\
                 Segment.MaxItems = 300\n{extra}\n",
                root = root.display(),
                allow = self.root().join("hosts.allow").display(),
                secret = self.root().join("reader.secret").display(),
            ),
        )
        .unwrap();
        (cf, port)
    }

    /// The sender's config over `groups` (kind, ports).
    pub fn sender_cf(&self, groups: &[(&str, &[u16])], extra: &str) -> PathBuf {
        let root = self.root().join("sender");
        std::fs::create_dir_all(root.join("logs")).unwrap();
        let mut text = format!(
            "rootdir = {root}\nlogfile = logs/reader.log\npidfile = logs/reader.pid\n\
             debuglevel = 40\nname = node1\nstore_dir = {store}\nsecret_file = {secret}\n\
             Send.RetryMin = 0.1\nSend.RetryMax = 0.5\nSend.BatchItems = 64\nSend.Timeout = 5\n",
            root = root.display(),
            store = self.store().display(),
            secret = self.root().join("reader.secret").display(),
        );
        for (group, ports) in groups {
            let list: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
            text.push_str(&format!("{group}.Addresses = {}\n", list.join(", ")));
        }
        text.push_str(extra);
        text.push('\n');
        let cf = self.root().join("sender.cf");
        std::fs::write(&cf, text).unwrap();
        cf
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.root().join(name).join("logs/reader.log")).unwrap_or_default()
    }

    /// Runs the writer to completion: items 1..=total.
    pub fn write(&self, total: u64, extra: &[&str]) {
        let st = self.writer(total, extra).wait().unwrap();
        assert!(st.success());
    }

    pub fn writer(&self, total: u64, extra: &[&str]) -> Child {
        Command::new(segwriter())
            .arg(self.store())
            .arg(total.to_string())
            .args(extra)
            .stdin(Stdio::null())
            .spawn()
            .unwrap()
    }
}

pub fn segwriter() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_reader"));
    exe.parent().unwrap().join("examples/segwriter")
}

/// A daemon in the foreground, killed when dropped.
pub struct Proc {
    pub child: Child,
    pub args: Vec<String>,
}

impl Proc {
    pub fn start(args: &[&str]) -> Proc {
        let child = Command::new(env!("CARGO_BIN_EXE_reader"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        Proc {
            child,
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn restart(&mut self) {
        self.kill9();
        let args: Vec<&str> = self.args.iter().map(|s| s.as_str()).collect();
        *self = Proc::start(&args);
    }

    /// SIGTERM and wait; returns the exit status's success.
    pub fn stop(&mut self) -> bool {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let mut status = None;
        poll(Duration::from_secs(20), || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        match status {
            Some(st) => st.success(),
            None => {
                self.kill9();
                false
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// n of each item of a store, in store order.
pub fn ns(dir: &Path) -> Vec<u64> {
    items(dir)
        .iter()
        .map(|s| {
            let url = String::from_utf8_lossy(&s.item.url).into_owned();
            url.rsplit('/').next().unwrap().parse().unwrap()
        })
        .collect()
}

pub fn items(dir: &Path) -> Vec<StoredItem> {
    if !dir.exists() {
        return Vec::new();
    }
    let mut c = Cursor::new(dir, Position::START, None);
    let mut out = Vec::new();
    while let Some(s) = c.next().unwrap() {
        out.push(s);
    }
    out
}

/// The n's of items 1..=total that receiver `k` of `count` must hold, in order.
pub fn expected(total: u64, count: u32, k: u32) -> Vec<u64> {
    (1..=total)
        .filter(|&n| {
            let mix = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (n >> 7);
            doc_hash(format!("{mix:016x}").as_bytes()) % count == k
        })
        .collect()
}

/// Figures from a receiver's store: how many items each stream holds.
pub fn per_stream(dir: &Path) -> BTreeMap<u32, usize> {
    let mut m = BTreeMap::new();
    for s in items(dir) {
        *m.entry(s.item.origin.stream).or_insert(0) += 1;
    }
    m
}
