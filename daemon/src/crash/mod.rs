//! Crash reports (docs/operations.md#crash-reports), after the source's dispatcher: a daemon
//! that panics or is killed by SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT or SIGQUIT leaves
//! evidence — the panic's message and backtrace, or the signal, in its log; a core file in
//! `core_dir` when `core_limit` allows one — and, with `sendmessages = 1`, a short report to
//! `maintainer` through `notify_command` (the local sendmail), at most one every
//! `notify_interval` seconds per daemon (a crash loop sends one, not one a second).
//!
//! A panic is reported from the panic hook (`report.rs`, `notify.rs`: ordinary code). A fatal
//! signal is reported from its handler (`fatal.rs`), where only async-signal-safe calls are
//! allowed: everything it writes is prepared at start.

mod fatal;
mod notify;
mod report;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, Context};
use nix::sys::resource::{setrlimit, Resource, RLIM_INFINITY};

use crate::config::CommonConfig;
pub(crate) use fatal::set_log_fd;
pub use notify::{Notifier, Outcome};
pub use report::Report;

/// The longest `maintainer` accepted (an e-mail address's limit).
const MAX_ADDRESS: usize = 254;

/// Checks the crash keys (part of the config's own check).
pub(crate) fn validate(common: &CommonConfig) -> Result<(), String> {
    if let Some(address) = &common.maintainer {
        // It goes into a mail header: one address, nothing that could start another header.
        let plain = address.len() <= MAX_ADDRESS
            && address.contains('@')
            && !address.starts_with('-')
            && address
                .chars()
                .all(|c| c.is_ascii_graphic() && !matches!(c, '<' | '>' | ',' | ';' | '"'));
        if !plain {
            return Err(format!(
                "maintainer: {:?} is not one plain e-mail address (user@host)",
                crate::config::clip(address)
            ));
        }
    }
    if common.sendmessages && common.maintainer.is_none() {
        return Err("sendmessages = 1 needs `maintainer`: whom to send the reports to".into());
    }
    let program = common.notify_command.split_whitespace().next();
    if !program.is_some_and(|p| p.starts_with('/')) {
        return Err(format!(
            "notify_command: {:?} must start with an absolute path (it runs without a shell or PATH)",
            crate::config::clip(&common.notify_command)
        ));
    }
    if common.notify_interval == 0 {
        return Err("notify_interval: must be at least 1 second".into());
    }
    if let Some(limit) = &common.core_limit {
        core_limit(limit)?;
    }
    Ok(())
}

/// `core_limit`'s value as an rlimit.
fn core_limit(value: &str) -> Result<u64, String> {
    match value.trim() {
        "unlimited" => Ok(RLIM_INFINITY),
        v => v.parse::<u64>().map_err(|_| {
            format!(
                "core_limit: {:?} is neither a number of bytes nor `unlimited`",
                crate::config::clip(value)
            )
        }),
    }
}

/// `core_dir` as the daemon sees it (relative to `rootdir`, which is its working directory).
fn core_dir(common: &CommonConfig) -> PathBuf {
    common
        .core_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("."))
}

/// What `--check-config` and every start check: `core_dir` is a directory. (Whether the
/// daemon's user may write there is the kernel's business at the crash; the log line says
/// where the core was meant to go.)
pub(crate) fn check_files(common: &CommonConfig) -> anyhow::Result<()> {
    if let Some(dir) = &common.core_dir {
        let path = common.path(dir);
        let meta =
            std::fs::metadata(&path).with_context(|| format!("core_dir {}", path.display()))?;
        if !meta.is_dir() {
            return Err(anyhow!("core_dir {}: not a directory", path.display()));
        }
    }
    Ok(())
}

/// Before the privilege drop (raising the hard limit needs root): `core_limit`.
pub(crate) fn set_core_limit(common: &CommonConfig) -> anyhow::Result<()> {
    if let Some(limit) = &common.core_limit {
        let bytes = core_limit(limit).map_err(|e| anyhow!(e))?;
        setrlimit(Resource::RLIMIT_CORE, bytes, bytes)
            .with_context(|| format!("core_limit = {limit}: setrlimit(RLIMIT_CORE)"))?;
    }
    Ok(())
}

/// After the privilege drop: the process may dump core again (a set-user-id change makes it
/// undumpable), the panic hook and the fatal-signal handlers are installed. Returns the
/// notifier the runtime reports fatal errors with.
pub(crate) fn install(name: &str, common: &CommonConfig) -> anyhow::Result<Notifier> {
    let wants_core = common.core_limit.as_deref().map(core_limit) != Some(Ok(0));
    if wants_core && common.core_limit.is_some() {
        // Only when asked for: a core holds the daemon's memory, its secrets included.
        nix::sys::prctl::set_dumpable(true).context("prctl(PR_SET_DUMPABLE)")?;
    }
    let progname = common.progname.clone().unwrap_or_else(|| name.to_string());
    let dir = core_dir(common);
    let notifier = Arc::new(notify::Settings::new(
        &progname,
        common,
        stamp_path(&dir, &progname),
    ));
    fatal::install(&notifier, &dir).context("installing the fatal-signal handlers")?;
    let notifier = Notifier::new(notifier);
    notifier.install_panic_hook();
    Ok(notifier)
}

/// The file whose modification time is the last report sent (shared by the daemon's
/// processes over time, so that a crash loop is rate-limited too).
fn stamp_path(core_dir: &Path, progname: &str) -> PathBuf {
    core_dir.join(format!(".{progname}.reported"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(extra: &[(&str, &str)]) -> Result<(), String> {
        let mut c: CommonConfig = serde_json::from_value(serde_json::json!({})).unwrap();
        for (k, v) in extra {
            match *k {
                "maintainer" => c.maintainer = Some(v.to_string()),
                "sendmessages" => c.sendmessages = *v == "1",
                "notify_command" => c.notify_command = v.to_string(),
                "core_limit" => c.core_limit = Some(v.to_string()),
                _ => unreachable!(),
            }
        }
        validate(&c)
    }

    #[test]
    fn a_maintainer_must_be_one_plain_address() {
        assert!(common(&[("maintainer", "ops@example.org")]).is_ok());
        for bad in [
            "ops@example.org\nBcc: all@example.org",
            "ops",
            "a@b, c@d",
            "-oQ/tmp@x",
            "<ops@example.org>",
        ] {
            let e = common(&[("maintainer", bad)]).unwrap_err();
            assert!(e.starts_with("maintainer:"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn sendmessages_needs_a_maintainer_and_the_command_an_absolute_path() {
        assert!(common(&[("sendmessages", "1")])
            .unwrap_err()
            .contains("needs `maintainer`"));
        assert!(common(&[("notify_command", "sendmail -t")])
            .unwrap_err()
            .starts_with("notify_command:"));
        assert!(common(&[("notify_command", "  ")]).is_err());
    }

    #[test]
    fn core_limit_is_bytes_or_unlimited() {
        assert_eq!(core_limit("unlimited"), Ok(RLIM_INFINITY));
        assert_eq!(core_limit("0"), Ok(0));
        assert_eq!(core_limit("1048576"), Ok(1 << 20));
        assert!(common(&[("core_limit", "1G")])
            .unwrap_err()
            .starts_with("core_limit:"));
    }
}
