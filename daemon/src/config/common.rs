//! The keys every focuser daemon understands (docs/design.md#runtime-config), their defaults and
//! checks.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{clip, restart_only};

/// The keys every focuser daemon understands (docs/design.md#runtime-config; each one in
/// docs/operations.md#the-config-file). Those marked `restart_only` take effect at the next
/// start; a reload applies the others (the log's settings, the access files and `stop_timeout`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CommonConfig {
    /// Directory every relative path is taken from; the daemon's working directory.
    #[serde(default = "default_rootdir", serialize_with = "restart_only")]
    pub rootdir: PathBuf,
    /// Name in log lines; defaults to the program's name.
    #[serde(default)]
    pub progname: Option<String>,
    /// Log file; absent: standard error.
    #[serde(default)]
    pub logfile: Option<PathBuf>,
    /// A log4rs YAML file that replaces `logfile`/`debuglevel`.
    #[serde(default)]
    pub logconfig: Option<PathBuf>,
    /// 10 critical/error, 20 warn, 30 info, 40 debug, 50+ trace, 90 protocol.
    #[serde(default = "default_debuglevel")]
    pub debuglevel: u8,
    /// Where the pid is written and locked.
    #[serde(default, serialize_with = "restart_only")]
    pub pidfile: Option<PathBuf>,
    /// Run as this user (and `group`) when started as root.
    #[serde(default, serialize_with = "restart_only")]
    pub user: Option<String>,
    #[serde(default, serialize_with = "restart_only")]
    pub group: Option<String>,
    /// chroot to `rootdir` before dropping privileges.
    #[serde(default, serialize_with = "restart_only")]
    pub chroot: bool,
    /// mysql://user:password@host:port/db, or several such URLs separated by commas (the
    /// nodes of a cluster: one is used, the next when it fails); `DATABASE_URL` in the
    /// environment overrides it.
    #[serde(default, serialize_with = "restart_only")]
    pub database: Option<String>,
    #[serde(default = "default_db_pool_size", serialize_with = "restart_only")]
    pub db_pool_size: u32,
    /// host:port (or a bare port on 127.0.0.1) of the status endpoint; empty: off.
    #[serde(default, serialize_with = "restart_only")]
    pub status_listen: Option<String>,
    /// Seconds between two samples of the status page's charts (1 to 300).
    #[serde(default = "default_status_sample", serialize_with = "restart_only")]
    pub status_sample: u64,
    /// hosts.allow: shell-glob patterns of peers' addresses or names, one a line.
    #[serde(default)]
    pub allowdb: Option<PathBuf>,
    /// user:argon2-hash lines for the status endpoint's POSTs (written by `NAME passwd`).
    #[serde(default)]
    pub pwfile: Option<PathBuf>,
    /// Seconds a graceful stop may take before the daemon exits anyway.
    #[serde(default = "default_stop_timeout")]
    pub stop_timeout: u64,
    /// The administrator's address for crash reports and fatal errors (docs/operations.md#crash-reports).
    #[serde(default, serialize_with = "restart_only")]
    pub maintainer: Option<String>,
    /// 1: send those reports to `maintainer`; 0: only log them.
    #[serde(default, serialize_with = "restart_only")]
    pub sendmessages: bool,
    /// The command a report is piped to, as a mail message (no shell; words split on blanks).
    #[serde(default = "default_notify_command", serialize_with = "restart_only")]
    pub notify_command: String,
    /// Least seconds between two reports of this daemon (a crash loop sends one).
    #[serde(default = "default_notify_interval", serialize_with = "restart_only")]
    pub notify_interval: u64,
    /// Where a crashing daemon leaves its core file (the kernel's `core_pattern` permitting);
    /// default `rootdir`.
    #[serde(default, serialize_with = "restart_only")]
    pub core_dir: Option<PathBuf>,
    /// RLIMIT_CORE: largest core file in bytes, `unlimited`, or 0 for none; absent: as inherited.
    #[serde(default, serialize_with = "restart_only")]
    pub core_limit: Option<String>,
}

/// The common keys, for splitting a file between [`CommonConfig`] and the daemon's struct.
pub(super) const COMMON_KEYS: &[&str] = &[
    "rootdir",
    "progname",
    "logfile",
    "logconfig",
    "debuglevel",
    "pidfile",
    "user",
    "group",
    "chroot",
    "database",
    "db_pool_size",
    "status_listen",
    "status_sample",
    "allowdb",
    "pwfile",
    "stop_timeout",
    "maintainer",
    "sendmessages",
    "notify_command",
    "notify_interval",
    "core_dir",
    "core_limit",
];

fn default_rootdir() -> PathBuf {
    PathBuf::from(".")
}
fn default_debuglevel() -> u8 {
    30
}
fn default_db_pool_size() -> u32 {
    4
}
fn default_stop_timeout() -> u64 {
    30
}
fn default_status_sample() -> u64 {
    10
}
fn default_notify_command() -> String {
    "/usr/sbin/sendmail -t -oi".into()
}
fn default_notify_interval() -> u64 {
    600
}

impl CommonConfig {
    /// `path` as the daemon sees it: absolute paths stay, relative ones hang off `rootdir`.
    pub fn path(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.rootdir.join(path)
        }
    }

    /// The address of the status endpoint, if one is configured.
    pub fn status_addr(&self) -> Result<Option<SocketAddr>, String> {
        let Some(listen) = self.status_listen.as_deref() else {
            return Ok(None);
        };
        let with_host = if listen.parse::<u16>().is_ok() {
            format!("127.0.0.1:{listen}")
        } else {
            listen.to_string()
        };
        let mut addrs = with_host
            .to_socket_addrs()
            .map_err(|e| format!("status_listen: cannot resolve {:?}: {e}", clip(listen)))?;
        addrs
            .next()
            .map(Some)
            .ok_or_else(|| format!("status_listen: {:?} resolves to no address", clip(listen)))
    }

    pub(super) fn validate(&self) -> Result<(), String> {
        if !(1..=99).contains(&self.debuglevel) {
            return Err(format!(
                "debuglevel: {} is not between 1 and 99",
                self.debuglevel
            ));
        }
        if self.stop_timeout == 0 {
            return Err("stop_timeout: must be at least 1 second".into());
        }
        if self.db_pool_size == 0 {
            return Err("db_pool_size: must be at least 1".into());
        }
        if self.group.is_some() && self.user.is_none() {
            return Err("group: set `user` too; group alone is not a privilege drop".into());
        }
        if let Some(list) = &self.database {
            check_database_list(list)?;
        }
        if !(1..=300).contains(&self.status_sample) {
            return Err(format!(
                "status_sample: {} is not between 1 and 300 seconds",
                self.status_sample
            ));
        }
        self.status_addr()?;
        crate::crash::validate(self)?;
        Ok(())
    }
}

/// `database`: one `mysql://user:password@host:port/db` URL, or several separated by commas,
/// all naming the same database on different servers. The message never quotes a password.
pub(crate) fn check_database_list(list: &str) -> Result<(), String> {
    const FORM: &str = "expected mysql://user:password@host:port/db";
    let entries: Vec<&str> = list.split(',').map(str::trim).collect();
    let n = entries.len();
    let which = |i: usize| match n {
        1 => String::new(),
        _ => format!("address {} of {n}: ", i + 1),
    };
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if entry.is_empty() {
            return Err(format!(
                "database: {}empty (a list is mysql:// URLs separated by commas)",
                which(i)
            ));
        }
        let url = url::Url::parse(entry)
            .ok()
            .filter(|u| u.scheme() == "mysql" && u.host_str().is_some_and(|h| !h.is_empty()))
            .ok_or_else(|| format!("database: {}{FORM}", which(i)))?;
        let server = format!(
            "{}:{}",
            url.host_str().unwrap_or(""),
            url.port().unwrap_or(3306)
        );
        let db = url.path().trim_start_matches('/').to_string();
        if let Some(j) = seen.iter().position(|(s, _)| *s == server) {
            return Err(format!(
                "database: address {} repeats the server of address {} ({server})",
                i + 1,
                j + 1
            ));
        }
        if let Some((_, first)) = seen.first().filter(|(_, first)| *first != db) {
            return Err(format!(
                "database: address {} names database `{db}`, address 1 `{first}`: the addresses \
                 of a list are servers of one database",
                i + 1
            ));
        }
        seen.push((server, db));
    }
    Ok(())
}
