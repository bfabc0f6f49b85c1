//! The config file's limits, as an operator (or a mistake) meets them: a huge value or key, a
//! FIFO or `/dev/zero` given as the config, an out-of-range value; and what a reload says
//! about keys (and a secret) that only a restart applies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use common::{testd_binary, Testd};
use focuser_tests::{output_within, wait_exit, wait_for};
use nix::sys::signal::Signal;
use nix::sys::stat::Mode;

const SECS: fn(u64) -> Duration = Duration::from_secs;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `--check-config` of `extra` fails with a short message holding `needle`.
fn refused(t: &Testd, extra: &str, needle: &str) {
    t.write_config(extra);
    let out = t.run(&["--check-config"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}", &err[..err.len().min(500)]);
    assert!(err.len() < 600, "{} bytes: {}", err.len(), &err[..500]);
    assert!(err.contains(needle), "{err}");
}

#[test]
fn huge_values_and_keys_are_refused_in_a_few_words() {
    let t = Testd::new("");
    refused(
        &t,
        &format!("Work.Message = {}\n", "v".repeat(2 << 20)),
        "testd.cf: cannot read: larger than 1048576 bytes (1 MiB)",
    );
    // Below the cap, an unknown key or a bad value is named, not echoed whole.
    refused(
        &t,
        &format!("Work.{} = 1\n", "k".repeat(900_000)),
        "unknown key `kkkkkkkkkkkk",
    );
    refused(
        &t,
        &format!("Work.StopDelayMs = {}\n", "9".repeat(900_000)),
        "(900000 bytes)",
    );
    refused(
        &t,
        &format!("{} no equals sign\n", "x".repeat(900_000)),
        "expected `key = value`",
    );
}

#[test]
fn a_fifo_or_a_device_is_not_read_as_a_config() {
    let t = Testd::new("");
    let fifo = t.root().join("testd.fifo");
    nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o600)).unwrap();
    for (file, args) in [
        (fifo.to_str().unwrap(), &["--check-config"][..]),
        (fifo.to_str().unwrap(), &[][..]),
        ("/dev/zero", &["--check-config"][..]),
    ] {
        // Reading either would block for ever or fill the memory: 30 s is plenty to refuse.
        let out = output_within(
            Command::new(testd_binary()).arg("-c").arg(file).args(args),
            SECS(30),
        );
        assert_eq!(out.status.code(), Some(1), "{file}");
        assert!(
            stderr(&out).contains(&format!("{file}: cannot read: not a regular file")),
            "{file}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn out_of_range_values_name_their_line() {
    let t = Testd::new("");
    // The base config has rootdir, logfile, pidfile and Work.TickMs on lines 1 to 4.
    refused(
        &t,
        "debuglevel = 0\n",
        "testd.cf:5: debuglevel: 0 is not between 1 and 99",
    );
    refused(
        &t,
        "stop_timeout = 5\nstatus_sample = 301\n",
        "testd.cf:6: status_sample: 301 is not between 1 and 300",
    );
    // Without Work.TickMs in it, the base has three lines.
    let t = Testd::new("Work.Message = x\nWork.TickMs = 0\n");
    refused(
        &t,
        "Work.Message = x\nWork.TickMs = 0\n",
        "testd.cf:5: Work.TickMs: must be at least 1",
    );
}

/// The warning lines of reloads that named restart-only changes.
fn restart_warnings(t: &Testd) -> Vec<String> {
    t.log_text()
        .lines()
        .filter(|l| l.contains("take effect only at restart"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_reload_names_what_differs_from_what_runs_and_a_changed_secret() {
    let t = Testd::new("Work.SecretFile = testd.secret\n");
    let secret = t.root().join("testd.secret");
    std::fs::write(&secret, "first secret\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut child = t.spawn();

    t.append_config("database = mysql://u:p@127.0.0.1:1/x\nWork.UseDb = 1\n");
    t.signal(Signal::SIGUSR2);
    wait_for("a first warning", SECS(10), || {
        restart_warnings(&t).len() == 1
    });
    // The same file again: what runs has not changed, so the same keys are named again.
    t.signal(Signal::SIGUSR2);
    wait_for("a second warning", SECS(10), || {
        restart_warnings(&t).len() == 2
    });
    for w in restart_warnings(&t) {
        assert!(w.ends_with("database, Work.UseDb"), "{w}");
    }

    // Back to the running values: nothing to name.
    t.remove_line("database = mysql://u:p@127.0.0.1:1/x");
    t.remove_line("Work.UseDb = 1");
    t.signal(Signal::SIGUSR2);
    wait_for("a third reload", SECS(10), || {
        t.log_text().matches("config reloaded from").count() == 3
    });
    assert_eq!(restart_warnings(&t).len(), 2);

    // The secret is read at start only: a new one is named, with its file.
    std::fs::write(&secret, "second secret, longer\n").unwrap();
    t.signal(Signal::SIGUSR2);
    wait_for("a warning for the secret", SECS(10), || {
        restart_warnings(&t).len() == 3
    });
    let w = restart_warnings(&t).pop().unwrap();
    assert!(
        w.contains(&format!(
            "Work.SecretFile (the file {} changed)",
            secret.display()
        )),
        "{w}"
    );

    // A config grown past the cap is refused, and the running one stays.
    t.append_config(&format!("Work.Message = {}\n", "v".repeat(2 << 20)));
    t.signal(Signal::SIGUSR2);
    t.wait_log("reload rejected, the running config stays", SECS(10));
    assert!(t.log_text().contains("larger than 1048576 bytes"));
    assert!(t.log_text().len() < 100_000);

    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
}
