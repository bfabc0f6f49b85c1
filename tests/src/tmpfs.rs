//! A tmpfs of a test's own, for what a full disk does: mounted on a temporary directory of a
//! given size, grown or shrunk while in use, unmounted when dropped. Tests that use it run as
//! root (CI does) and say so when they are not.

use std::path::Path;
use std::process::Command;

pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`mount`'s notation: `400k`, `8m`) on a new temporary directory.
    pub fn mount(size: &str) -> Tmpfs {
        assert!(
            nix::unistd::geteuid().is_root(),
            "this test mounts a tmpfs: run it as root (CI does)"
        );
        let t = Tmpfs {
            dir: tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}")),
        };
        t.mount_cmd(&[
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0755"),
            "tmpfs",
        ]);
        t
    }

    /// Gives it a new size; what it holds stays.
    pub fn resize(&self, size: &str) {
        self.mount_cmd(&["-o", &format!("remount,size={size}")]);
    }

    fn mount_cmd(&self, args: &[&str]) {
        let st = Command::new("mount")
            .args(args)
            .arg(self.dir.path())
            .status()
            .unwrap_or_else(|e| panic!("mount: {e}"));
        assert!(st.success(), "mount {args:?} {}", self.dir.path().display());
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}
