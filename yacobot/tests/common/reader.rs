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
