//! A real reader (sender or `--recv` receiver) next to yacobot, from the daemons' binaries.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A reader (sender or receiver) in the foreground.
pub struct Reader {
    pub child: Child,
    config: PathBuf,
}

impl Reader {
    pub fn start(config: &Path, args: &[&str]) -> Reader {
        let bin = focuser_tests::pipeline::built_binaries()
            .unwrap()
            .join("reader");
        let child = Command::new(bin)
            .arg("-c")
            .arg(config)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Reader {
            child,
            config: config.to_path_buf(),
        }
    }

    pub fn kill9_and_restart(&mut self, args: &[&str]) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        *self = Reader::start(&self.config.clone(), args);
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A receiver group of one (`reader --recv`, named `receiver`, its store under
/// `ROOT/receiver/received`) and a sender (`sender`) of the store `ROOT/store` to it, with
/// their secret and `hosts.allow`; `send_keys` are the sender's own keys (retention, statuses).
pub fn pair(
    root: &Path,
    receiver: &str,
    sender: &str,
    store: &str,
    send_keys: &str,
) -> (Reader, Reader) {
    use std::os::unix::fs::PermissionsExt;
    let secret = root.join("reader.secret");
    std::fs::write(&secret, format!("a-secret-for-{receiver}-and-{sender}")).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(root.join("hosts.allow"), "127.0.0.1\n").unwrap();
    let port = focuser_tests::free_port();
    for d in [receiver, "sender"] {
        std::fs::create_dir_all(root.join(d).join("logs")).unwrap();
    }
    std::fs::create_dir_all(root.join(store)).unwrap();
    let recv = root.join(format!("{receiver}.cf"));
    std::fs::write(
        &recv,
        format!(
            "rootdir = {r}/{receiver}\nlogfile = logs/reader.log\npidfile = logs/reader.pid\n\
             allowdb = {r}/hosts.allow\nname = {receiver}\nsecret_file = {s}\n\
             Recv.Listen = 127.0.0.1:{port}\nRecv.StoreDir = received\nRecv.InboxDir = inbox\n",
            r = root.display(),
            s = secret.display()
        ),
    )
    .unwrap();
    let send = root.join("sender.cf");
    std::fs::write(
        &send,
        format!(
            "rootdir = {r}/sender\nlogfile = logs/reader.log\npidfile = logs/reader.pid\n\
             name = {sender}\nstore_dir = {r}/{store}\nsecret_file = {s}\n\
             Send.RetryMin = 0.1\nSend.RetryMax = 0.5\n{send_keys}\
             Index.0.Addresses = 127.0.0.1:{port}\n",
            r = root.display(),
            s = secret.display()
        ),
    )
    .unwrap();
    (Reader::start(&recv, &["--recv"]), Reader::start(&send, &[]))
}
