//! Sending a report: `notify_command` (the local sendmail) gets the mail on its standard
//! input, at most once every `notify_interval` seconds. The last report's time is the
//! modification time of a stamp file in `core_dir`, so that the limit holds across the
//! restarts of a crash loop, and for the fatal-signal handler too.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::report::{Report, Sender};
use crate::config::CommonConfig;

/// How long a report's command may take before the daemon stops waiting for it.
const COMMAND_DEADLINE: Duration = Duration::from_secs(10);
/// The environment the command runs with (nothing of the daemon's own).
pub(super) const COMMAND_PATH: &str = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";

/// The crash keys, resolved at start.
#[derive(Debug)]
pub(super) struct Settings {
    pub progname: String,
    /// `None`: `sendmessages = 0`, reports are only logged.
    pub sender: Option<Sender>,
    pub command: Vec<String>,
    pub interval: Duration,
    pub stamp: PathBuf,
}

impl Settings {
    pub fn new(progname: &str, common: &CommonConfig, stamp: PathBuf) -> Settings {
        let host = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "localhost".into());
        let log = match &common.logfile {
            Some(f) => format!("The log ({}) has the details.", common.path(f).display()),
            None => "The daemon's log has the details.".into(),
        };
        let sender = common
            .maintainer
            .clone()
            .filter(|_| common.sendmessages)
            .map(|maintainer| Sender {
                progname: progname.to_string(),
                host,
                pid: std::process::id(),
                maintainer,
                log,
            });
        Settings {
            progname: progname.to_string(),
            sender,
            command: common
                .notify_command
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            interval: Duration::from_secs(common.notify_interval),
            stamp,
        }
    }
}

/// What became of a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `sendmessages = 0`.
    Off,
    Sent,
    /// One was sent this long ago, less than `notify_interval`.
    Suppressed(Duration),
    Failed(String),
}

/// Sends reports (the runtime's fatal errors; the panic hook's).
#[derive(Debug, Clone)]
pub struct Notifier {
    settings: Arc<Settings>,
}

impl Notifier {
    pub(super) fn new(settings: Arc<Settings>) -> Notifier {
        Notifier { settings }
    }

    /// Sends `report` (rate-limited) and logs what became of it.
    pub fn report(&self, report: &Report) -> Outcome {
        let outcome = send(&self.settings, report);
        match &outcome {
            Outcome::Off => {}
            Outcome::Sent => log::info!("report sent: {}", report.what),
            Outcome::Suppressed(ago) => log::warn!(
                "report not sent: the last one went {} s ago (notify_interval)",
                ago.as_secs()
            ),
            Outcome::Failed(why) => log::error!("cannot send the report: {why}"),
        }
        outcome
    }

    /// Panics go to the log with their backtrace (standard error is /dev/null in a
    /// daemon), then to the maintainer.
    pub(super) fn install_panic_hook(&self) {
        let notifier = self.clone();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            let name = thread.name().unwrap_or("<unnamed>");
            let location = info
                .location()
                .map(|l| l.to_string())
                .unwrap_or_else(|| "an unknown place".into());
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(a panic without a message)".into());
            let backtrace = std::backtrace::Backtrace::force_capture();
            log::error!(
                "panic in thread '{name}' at {location}: {message}\nbacktrace:\n{backtrace}"
            );
            log::logger().flush();
            notifier.report(&Report::panic(name, &location, &message));
        }));
    }
}

fn send(settings: &Settings, report: &Report) -> Outcome {
    let Some(sender) = &settings.sender else {
        return Outcome::Off;
    };
    if let Some(ago) = last_sent(settings) {
        if ago < settings.interval {
            return Outcome::Suppressed(ago);
        }
    }
    if let Err(e) = stamp(settings) {
        // Sent all the same: a report lost is worse than two.
        log::warn!(
            "cannot record the report's time in {} ({e}): reports are not rate-limited",
            settings.stamp.display()
        );
    }
    let message = report.message(sender, &crate::clock::utc_stamp());
    run(&settings.command, message.as_bytes())
}

/// How long ago the last report went, if one did (and its stamp is readable).
fn last_sent(settings: &Settings) -> Option<Duration> {
    let meta = std::fs::symlink_metadata(&settings.stamp).ok()?;
    let at = meta.modified().ok()?;
    // A stamp in the future (a clock set back) counts as just now.
    Some(SystemTime::now().duration_since(at).unwrap_or_default())
}

fn stamp(settings: &Settings) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&settings.stamp)
        .map(drop)
}

fn run(command: &[String], message: &[u8]) -> Outcome {
    let Some((program, args)) = command.split_first() else {
        return Outcome::Failed("notify_command is empty".into());
    };
    let (path_key, path_value) = COMMAND_PATH.split_once('=').unwrap_or(("PATH", ""));
    let spawned = Command::new(program)
        .args(args)
        .env_clear()
        .env(path_key, path_value)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(format!("{program}: {e}")),
    };
    // A command that fails at once closes its end before the message is written: its exit
    // status, waited for below, says more than the broken pipe.
    let written = match child.stdin.take() {
        Some(mut stdin) => stdin.write_all(message),
        None => Ok(()),
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return match (status.success(), &written) {
                    (true, Ok(())) => Outcome::Sent,
                    (true, Err(e)) => {
                        Outcome::Failed(format!("{program}: writing the message: {e}"))
                    }
                    (false, Ok(())) => Outcome::Failed(format!("{program}: {status}")),
                    (false, Err(e)) => {
                        Outcome::Failed(format!("{program}: {status} (writing the message: {e})"))
                    }
                }
            }
            Ok(None) if started.elapsed() < COMMAND_DEADLINE => {
                std::thread::sleep(Duration::from_millis(20));
            }
            // Left to finish on its own (it is not killed: it may be delivering).
            Ok(None) => {
                return Outcome::Failed(format!(
                    "{program}: still running after {} s",
                    COMMAND_DEADLINE.as_secs()
                ))
            }
            Err(e) => return Outcome::Failed(format!("{program}: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(dir: &std::path::Path, command: &str) -> Settings {
        Settings {
            progname: "testd".into(),
            sender: Some(Sender {
                progname: "testd".into(),
                host: "h".into(),
                pid: 1,
                maintainer: "ops@example.org".into(),
                log: String::new(),
            }),
            command: command.split_whitespace().map(str::to_string).collect(),
            interval: Duration::from_secs(600),
            stamp: dir.join(".testd.reported"),
        }
    }

    #[test]
    fn one_report_an_interval_and_a_failing_command_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("mail");
        let script = dir.path().join("sendmail");
        std::fs::write(&script, format!("#!/bin/sh\ncat > {}\n", out.display())).unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let s = settings(dir.path(), &script.display().to_string());
        assert_eq!(send(&s, &Report::fatal("first")), Outcome::Sent);
        assert!(std::fs::read_to_string(&out).unwrap().contains("first"));
        assert!(matches!(
            send(&s, &Report::fatal("second")),
            Outcome::Suppressed(_)
        ));
        assert!(!std::fs::read_to_string(&out).unwrap().contains("second"));

        let failing = settings(tempfile::tempdir().unwrap().path(), "/bin/false");
        assert!(
            matches!(send(&failing, &Report::fatal("x")), Outcome::Failed(e) if e.contains("exit status: 1"))
        );
        let missing = settings(tempfile::tempdir().unwrap().path(), "/nonexistent/sendmail");
        assert!(
            matches!(send(&missing, &Report::fatal("x")), Outcome::Failed(e) if e.contains("/nonexistent/sendmail"))
        );
        let off = Settings {
            sender: None,
            ..settings(dir.path(), "/bin/true")
        };
        assert_eq!(send(&off, &Report::fatal("x")), Outcome::Off);
    }
}
