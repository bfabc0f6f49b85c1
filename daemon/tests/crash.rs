//! Crash reports through the real test daemon (docs/operations.md#crash-reports): a panic's
//! message and backtrace in the log, a core file after a fatal signal (after the privilege
//! drop too), and the maintainer told through a fake sendmail, once per `notify_interval`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Testd;
use focuser_tests::poll;
use nix::sys::signal::Signal;
use nix::unistd::{chown, geteuid, User};

const WAIT: Duration = Duration::from_secs(20);

/// A sendmail that appends its arguments and the message to `mails`, one after the other.
fn fake_sendmail(dir: &Path) -> (PathBuf, PathBuf) {
    let mails = dir.join("mails");
    let script = dir.join("sendmail");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n{{ echo \"ARGS: $*\"; cat; echo '----'; }} >> {}\n",
            mails.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, mails)
}

fn mails(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split("----\n")
        .filter(|m| !m.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn reporting(t: &Testd, crash: &str, extra: &str) -> PathBuf {
    let dir = t.root().join("mail");
    std::fs::create_dir_all(&dir).unwrap();
    // Writable by the daemon's user whoever it is (the privilege-drop test's nobody).
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (script, mails) = fake_sendmail(&dir);
    t.append_config(&format!(
        "maintainer = ops@example.org\nsendmessages = 1\nnotify_command = {} -t -oi\nWork.Crash = {crash}\n{extra}",
        script.display()
    ));
    mails
}

#[test]
fn a_panic_goes_to_the_log_with_its_backtrace_and_to_the_maintainer_once_an_interval() {
    let t = Testd::new("");
    let mail_file = reporting(&t, "thread", "");
    let mut child = t.spawn();

    t.signal(Signal::SIGUSR1);
    t.wait_log("the worker stopped", WAIT);
    let log = t.log_text();
    assert!(
        log.contains("panic in thread 'worker' at daemon/examples/testd.rs:"),
        "{log}"
    );
    assert!(log.contains(": a worker's bug\nbacktrace:\n"), "{log}");
    assert!(poll(WAIT, || !mails(&mail_file).is_empty()));
    let first = &mails(&mail_file)[0];
    assert!(
        first.starts_with("ARGS: -t -oi\nTo: ops@example.org\n"),
        "{first}"
    );
    assert!(first.contains("Subject: focuser testd on "), "{first}");
    assert!(first.contains("panic in thread 'worker'"), "{first}");
    assert!(first.contains("a worker's bug"), "{first}");
    t.wait_log("report sent: panic in thread 'worker'", WAIT);

    // A second panic within notify_interval: logged, not mailed.
    t.signal(Signal::SIGUSR1);
    t.wait_log("report not sent: the last one went", WAIT);
    assert_eq!(log_count(&t, ": a worker's bug\nbacktrace:\n"), 2);
    assert_eq!(mails(&mail_file).len(), 1);

    t.signal(Signal::SIGTERM);
    assert!(
        child.wait().unwrap().success(),
        "the daemon went on after its worker's panic"
    );
}

fn log_count(t: &Testd, needle: &str) -> usize {
    t.log_text().matches(needle).count()
}

#[test]
fn a_panicking_main_loop_and_a_fatal_error_are_reported() {
    let t = Testd::new("");
    let mail_file = reporting(&t, "panic", "notify_interval = 1\n");
    let mut child = t.spawn();
    t.signal(Signal::SIGUSR1);
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(
        t.log_text().contains("panic in thread 'main' at"),
        "{}",
        t.log_text()
    );
    assert!(poll(WAIT, || mails(&mail_file).len() == 1));

    // A main loop that ends with an error: the daemon stops, the maintainer hears why.
    std::thread::sleep(Duration::from_millis(1100));
    t.append_config("Work.FailStart = the port is taken\n");
    let out = t.run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let all = mails(&mail_file);
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(all[1].contains("stopped on an error"), "{}", all[1]);
    assert!(all[1].contains("the port is taken"), "{}", all[1]);
}

/// Where the kernel puts a core (`core_pattern`): a file in the dumping process's working
/// directory, unless the pattern is a pipe or a path.
fn cores_land_in_the_working_directory() -> bool {
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    !pattern.starts_with('|') && !pattern.contains('/')
}

fn core_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("core"))
        .collect()
}

fn crash_with_core(t: &Testd, signal: Signal, crash: &str, extra: &str) {
    let mail_file = reporting(
        t,
        crash,
        &format!("core_dir = cores\ncore_limit = unlimited\n{extra}"),
    );
    let mut child = t.spawn();
    t.signal(Signal::SIGUSR1);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(signal as i32), "{status:?}");
    assert!(status.core_dumped(), "no core dumped: {status:?}");
    let log = t.log_text();
    let line = format!(
        "ERROR fatal signal {}: dumping core in cores\n",
        signal.as_str()
    );
    assert!(log.contains(&line), "{log}");
    assert!(log.contains("INFO  report sent\n"), "{log}");
    let all = mails(&mail_file);
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(
        all[0].contains("Subject: focuser testd on ")
            && all[0].contains(&format!(": fatal signal {}\n", signal.as_str())),
        "{}",
        all[0]
    );
    assert!(
        all[0].contains(&format!("was killed by {}.", signal.as_str())),
        "{}",
        all[0]
    );
    if cores_land_in_the_working_directory() {
        let cores = core_files(&t.root().join("cores"));
        assert_eq!(cores.len(), 1, "{cores:?}");
        assert!(std::fs::metadata(&cores[0]).unwrap().len() > 0);
    }
}

#[test]
fn a_segfault_leaves_a_log_line_a_core_file_and_a_report() {
    let t = Testd::new("");
    std::fs::create_dir(t.root().join("cores")).unwrap();
    crash_with_core(&t, Signal::SIGSEGV, "segv", "");
}

#[test]
fn a_daemon_that_dropped_its_privileges_still_dumps_core() {
    if !geteuid().is_root() {
        // Only root can start as root and drop to nobody; CI runs as root.
        eprintln!("skipped: needs root");
        return;
    }
    let nobody = User::from_name("nobody").unwrap().unwrap();
    let t = Testd::new("user = nobody\n");
    std::fs::set_permissions(t.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for dir in ["logs", "cores"] {
        let path = t.root().join(dir);
        std::fs::create_dir_all(&path).unwrap();
        chown(&path, Some(nobody.uid), Some(nobody.gid)).unwrap();
    }
    crash_with_core(&t, Signal::SIGQUIT, "quit", "");
    let log = t.log_text();
    assert!(log.contains(&format!("uid {}", nobody.uid)), "{log}");
}

#[test]
fn bad_crash_keys_are_refused_with_their_reason() {
    for (lines, needle) in [
        ("sendmessages = 1\n", "sendmessages = 1 needs `maintainer`"),
        ("maintainer = ops@example.org\\nBcc: x@y\n", "maintainer:"),
        ("maintainer = ops\n", "maintainer:"),
        ("notify_command = sendmail -t\n", "notify_command:"),
        ("core_limit = lots\n", "core_limit:"),
        ("core_dir = missing\n", "core_dir"),
    ] {
        let t = Testd::new(lines);
        let out = t.run(&["--check-config"]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{lines}: {err}");
        assert!(err.contains(needle), "{lines}: {err}");
    }
}
