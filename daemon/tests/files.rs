//! The pidfile and the log file as an attacker with the service user's rights sees them: the
//! daemon starts as root with `user = nobody`, and nobody owns the directory they live in, so
//! nobody can plant a link there (CWE-59). The daemon must refuse it, not write through it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::{lchown, symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Testd;
use focuser_tests::{wait_exit, wait_for};
use nix::sys::signal::Signal;
use nix::unistd::{chown, geteuid, Uid, User};

const SECS: fn(u64) -> Duration = Duration::from_secs;
const PRECIOUS: &str = "root:$6$precious:19000:0:99999:7:::\n";

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A daemon to start as root with `user = nobody`, nobody owning `logs/`, and a root-only
/// file outside it for links to point at.
fn rig() -> (Testd, User, PathBuf) {
    let nobody = User::from_name("nobody").unwrap().unwrap();
    let t = Testd::new("user = nobody\n");
    chown(&t.root().join("logs"), Some(nobody.uid), Some(nobody.gid)).unwrap();
    let target = t.root().join("shadow");
    std::fs::write(&target, PRECIOUS).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    (t, nobody, target)
}

/// A link planted by nobody.
fn plant(link: &Path, target: &Path, nobody: &User) {
    symlink(target, link).unwrap();
    lchown(link, Some(nobody.uid.as_raw()), Some(nobody.gid.as_raw())).unwrap();
}

fn refused(t: &Testd, args: &[&str], needle: &str) {
    let out = t.run(args);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
    assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
}

#[test]
fn planted_links_and_strangers_files_are_refused_not_written_through() {
    if !geteuid().is_root() {
        // Only root can start as root and drop to nobody; CI runs as root.
        eprintln!("skipped: needs root");
        return;
    }
    let (t, nobody, target) = rig();

    plant(&t.pidfile, &target, &nobody);
    let link = format!("{} is a symbolic link", t.pidfile.display());
    refused(&t, &["--check-config"], &link);
    refused(&t, &[], &format!("pidfile {link}"));
    refused(&t, &["--daemon"], &format!("pidfile {link}"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), PRECIOUS);
    assert!(t.pidfile.symlink_metadata().unwrap().is_symlink());
    std::fs::remove_file(&t.pidfile).unwrap();

    plant(&t.log, &target, &nobody);
    let link = format!("{} is a symbolic link", t.log.display());
    refused(&t, &["--check-config"], &link);
    refused(&t, &[], &format!("logfile {link}"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), PRECIOUS);
    std::fs::remove_file(&t.log).unwrap();

    // A pidfile of another user's (not nobody's, not root's) is not the daemon's to truncate.
    std::fs::write(&t.pidfile, "4242\n").unwrap();
    chown(&t.pidfile, Some(Uid::from_raw(4242)), None).unwrap();
    refused(&t, &[], "is owned by uid 4242, not by nobody");
    assert_eq!(std::fs::read_to_string(&t.pidfile).unwrap(), "4242\n");
    std::fs::remove_file(&t.pidfile).unwrap();

    // A hard link is no better than a symbolic one.
    std::fs::hard_link(&target, &t.log).unwrap();
    refused(&t, &[], "has 2 hard links");
    std::fs::remove_file(&t.log).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), PRECIOUS);
}

#[test]
fn the_log_reopen_refuses_a_link_planted_after_the_start() {
    if !geteuid().is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let (t, nobody, target) = rig();
    let mut child = t.spawn();
    // The log was created by root before the drop and given to nobody, who keeps writing it.
    let meta = std::fs::metadata(&t.log).unwrap();
    assert_eq!(
        std::os::unix::fs::MetadataExt::uid(&meta),
        nobody.uid.as_raw()
    );

    // The service user moves the log away and plants a link where the next reopen looks.
    let old = t.root().join("logs/testd.log.1");
    std::fs::rename(&t.log, &old).unwrap();
    plant(&t.log, &target, &nobody);
    t.signal(Signal::SIGHUP);
    wait_for("the reopen is refused, in the old file", SECS(10), || {
        std::fs::read_to_string(&old)
            .unwrap()
            .contains("cannot reopen the log, still writing the old file")
    });
    assert!(std::fs::read_to_string(&old)
        .unwrap()
        .contains("is a symbolic link"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), PRECIOUS);

    // With the link gone, the next reopen creates the file afresh.
    std::fs::remove_file(&t.log).unwrap();
    t.signal(Signal::SIGHUP);
    t.wait_log("log reopened", SECS(10));
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), PRECIOUS);
}
