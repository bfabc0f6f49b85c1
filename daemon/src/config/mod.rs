//! The config file: `key = value   # comment` lines, dotted keys, typed through serde.
//!
//! The common keys of every daemon (docs/design.md#runtime-config) are [`CommonConfig`]; the rest
//! of the file is the daemon's own struct, which implements [`DaemonConfig`]. Both reject unknown
//! keys, so a typo is a start-up error naming its file, line and key.

mod common;
mod de;
mod keys;
mod parse;
mod running;

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use common::CommonConfig;
use common::COMMON_KEYS;
use de::{DeError, DeErrorKind};
pub use keys::{restart_only, Key, Reload};
pub use parse::MAX_CONFIG_BYTES;
pub use running::RunningConfig;

/// A key or value as an error message shows it: whole when short, else its start and its
/// length, so that a 1 MB value does not become a 1 MB log line.
pub(crate) fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    clip_to(text, 64)
}

fn clip_to(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => text.into(),
        Some(_) => {
            let end = text.char_indices().nth(max - 16).map_or(0, |(i, _)| i);
            format!("{}… ({} bytes)", &text[..end], text.len()).into()
        }
    }
}

/// What each daemon's `config.rs` implements for its own keys. Each key's field says what a
/// reload does with it: `#[serde(serialize_with = "restart_only")]` on a key that takes effect
/// only at the next start; every other key the daemon reads from the running config at each
/// unit of work, so that SIGUSR2 applies it (see [`Key`]).
pub trait DaemonConfig: DeserializeOwned + Serialize + Clone + Send + Sync + 'static {
    /// Checks that go beyond types (ranges, combinations). The message names the key.
    fn validate(&self, _common: &CommonConfig) -> Result<(), String> {
        Ok(())
    }

    /// Start-up checks of the files the daemon's own keys name: they exist, can be read, a
    /// secret is private. Run by every start before it detaches and by `--check-config`; the
    /// message names the key and the file.
    fn check_files(&self, _common: &CommonConfig) -> Result<(), String> {
        Ok(())
    }

    /// Files the daemon reads only at start (a shared secret): `(key, path)`. A reload that
    /// finds one changed says that the change takes effect at the next start.
    fn start_files(&self, _common: &CommonConfig) -> Vec<(&'static str, PathBuf)> {
        Vec::new()
    }
}

/// A daemon without keys of its own.
impl DaemonConfig for NoKeys {}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NoKeys {}

/// A loaded, validated config: the common keys, the daemon's keys, and where they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Config<T> {
    pub file: PathBuf,
    pub common: CommonConfig,
    pub daemon: T,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: {message}")]
    File { file: String, message: String },
    #[error("{file}:{line}: {message}")]
    Line {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}:{line}: {key}: {message}")]
    Key {
        file: String,
        line: usize,
        key: String,
        message: String,
    },
    #[error("{file}: missing required key {key}")]
    Missing { file: String, key: String },
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
}

impl<T: DaemonConfig> Config<T> {
    /// How an operator tool reads its daemon's config: as the daemon would, with
    /// `DATABASE_URL` from the environment over `database`.
    pub fn load_for_tool(file: &Path) -> Result<Self, ConfigError> {
        Config::load(file, std::env::var("DATABASE_URL").ok())
    }

    /// Reads, types and validates `file`. `database_url` (the `DATABASE_URL` environment
    /// variable, passed in so tests stay independent of the environment) overrides `database`.
    pub fn load(file: &Path, database_url: Option<String>) -> Result<Self, ConfigError> {
        let name = file.display().to_string();
        let root = parse::parse_file(file).map_err(|e| match e.line {
            0 => ConfigError::File {
                file: name.clone(),
                message: e.message,
            },
            line => ConfigError::Line {
                file: name.clone(),
                line,
                message: e.message,
            },
        })?;
        let mut lines = std::collections::HashMap::new();
        root.lines(&mut lines);
        let (common_node, daemon_node) = root.split(COMMON_KEYS);
        let mut common: CommonConfig =
            de::from_node(&common_node).map_err(|e| located(&name, e))?;
        let daemon: T = de::from_node(&daemon_node).map_err(|mut e| {
            // An unknown top-level key may be a misspelt common key: list those too.
            if let (DeErrorKind::Unknown(m), Some(false)) =
                (&mut e.kind, e.key.as_ref().map(|k| k.contains('.')))
            {
                m.push_str(&format!("; common keys: {}", COMMON_KEYS.join(", ")));
            }
            located(&name, e)
        })?;
        if let Some(url) = database_url.filter(|u| !u.is_empty()) {
            common.database = Some(url);
        }
        // The daemon changes into rootdir and re-reads this file on reload: pin both down.
        common.rootdir = std::path::absolute(&common.rootdir).unwrap_or(common.rootdir);
        let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        let invalid = |message: String| at_its_line(&name, &lines, message);
        common.validate().map_err(invalid)?;
        daemon.validate(&common).map_err(invalid)?;
        Ok(Config {
            file,
            common,
            daemon,
        })
    }

    /// Restart-only keys whose value differs in `new` (the common keys first).
    pub fn restart_only_changes(&self, new: &Self) -> Vec<String> {
        let mut keys = keys::restart_only_changes(&self.common, &new.common);
        keys.extend(keys::restart_only_changes(&self.daemon, &new.daemon));
        keys
    }

    /// What runs after a reload to `new`: its values, except that restart-only keys keep
    /// those of `self`. Checked as a start checks a config: a new value may not fit a
    /// running one.
    pub fn reloaded(&self, new: Config<T>) -> Result<Config<T>, ConfigError> {
        let name = new.file.display().to_string();
        let invalid = |message: String| ConfigError::Invalid {
            file: name.clone(),
            message,
        };
        let common = keys::keep_running(&self.common, &new.common).map_err(invalid)?;
        let daemon = keys::keep_running(&self.daemon, &new.daemon).map_err(invalid)?;
        let with_running = |e: String| {
            invalid(format!(
                "{e} (with the running values of restart-only keys)"
            ))
        };
        common.validate().map_err(with_running)?;
        daemon.validate(&common).map_err(with_running)?;
        Ok(Config {
            file: new.file,
            common,
            daemon,
        })
    }

    /// Every key with its value (the password of the database, and of any other database
    /// URL a daemon takes, masked) and what a reload does with it: the common keys, then the
    /// daemon's, each in name order.
    pub fn keys(&self) -> Vec<Key> {
        let mut keys = keys::keys(&self.common);
        keys.extend(keys::keys(&self.daemon));
        for k in &mut keys {
            if (k.name == "database" && !k.value.is_empty()) || k.value.starts_with("mysql://") {
                k.value = mask_password(&k.value);
            }
        }
        keys
    }

    /// Whether `key` (a name of [`Config::keys`]) is one of the common keys.
    pub fn is_common(key: &str) -> bool {
        COMMON_KEYS.contains(&key.split('.').next().unwrap_or(key))
    }

    /// The effective config as `key = value` lines, secrets masked (`--check-config`).
    pub fn effective(&self) -> Vec<(String, String)> {
        self.keys().into_iter().map(|k| (k.name, k.value)).collect()
    }
}

/// A `validate` message (`key: what is wrong`, or `key1, key2 and key3: ...`) tied to the
/// line of the first key it names that the file sets; clipped, since it may quote a value.
fn at_its_line(
    file: &str,
    lines: &std::collections::HashMap<String, usize>,
    message: String,
) -> ConfigError {
    let message = clip_to(&message, 300).into_owned();
    let keys = message.split_once(": ").map_or("", |(keys, _)| keys);
    let line = keys
        .split(", ")
        .flat_map(|k| k.split(" and "))
        .find_map(|k| lines.get(k.trim()));
    match line {
        Some(&line) => ConfigError::Line {
            file: file.to_string(),
            line,
            message,
        },
        None => ConfigError::Invalid {
            file: file.to_string(),
            message,
        },
    }
}

fn located(file: &str, e: DeError) -> ConfigError {
    let file = file.to_string();
    let key = clip(&e.key.unwrap_or_default()).into_owned();
    match e.kind {
        DeErrorKind::Missing => ConfigError::Missing { file, key },
        DeErrorKind::Unknown(message) | DeErrorKind::Other(message) => match e.line {
            Some(line) if line > 0 => ConfigError::Key {
                file,
                line,
                key,
                message,
            },
            _ if key.is_empty() => ConfigError::Invalid { file, message },
            _ => ConfigError::Invalid {
                file,
                message: format!("{key}: {message}"),
            },
        },
    }
}

/// `mysql://user:secret@host/db` → `mysql://user:***@host/db`; each URL of a list separated
/// by commas.
pub fn mask_password(url: &str) -> String {
    if url.contains(',') {
        return url
            .split(',')
            .map(|u| mask_password(u.trim()))
            .collect::<Vec<_>>()
            .join(",");
    }
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) => "(not a URL)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Work {
        #[serde(rename = "Interval")]
        interval: u64,
    }

    #[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Testd {
        #[serde(rename = "Work")]
        work: Work,
    }

    impl DaemonConfig for Testd {
        fn validate(&self, _: &CommonConfig) -> Result<(), String> {
            if self.work.interval == 0 {
                return Err("Work.Interval: must be at least 1".into());
            }
            Ok(())
        }
    }

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("testd.cf");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn loads_common_and_own_keys_with_defaults() {
        let (_d, path) = write(
            "rootdir = /srv/f   # home\nlogfile = logs/t.log\nWork.Interval = 5\nstatus_listen = 8080\n\
             database = mysql://u:pw@db:3306/focuser\n",
        );
        let c = Config::<Testd>::load(&path, None).unwrap();
        assert_eq!(c.common.rootdir, PathBuf::from("/srv/f"));
        assert_eq!(
            c.common.path(Path::new("logs/t.log")),
            PathBuf::from("/srv/f/logs/t.log")
        );
        assert_eq!(
            c.common.path(Path::new("/var/log/x")),
            PathBuf::from("/var/log/x")
        );
        assert_eq!((c.common.debuglevel, c.common.stop_timeout), (30, 30));
        assert_eq!(
            c.common.status_addr().unwrap(),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(c.daemon.work.interval, 5);
        let eff = c.effective();
        assert!(
            eff.contains(&("database".into(), "mysql://u:***@db:3306/focuser".into())),
            "{eff:?}"
        );
        assert!(eff.contains(&("Work.Interval".into(), "5".into())));
        assert!(!format!("{eff:?}").contains("pw@"));
    }

    #[test]
    fn database_url_overrides_the_file() {
        let (_d, path) = write("Work.Interval = 1\ndatabase = mysql://a:b@h/x\n");
        let c = Config::<Testd>::load(&path, Some("mysql://env:e@h2/y".into())).unwrap();
        assert_eq!(c.common.database.as_deref(), Some("mysql://env:e@h2/y"));
    }

    #[test]
    fn database_takes_a_list_of_addresses_and_masks_every_password() {
        let list =
            "mysql://u:pw1@n1:3431/focuser, mysql://u:pw2@n2:3432/focuser,mysql://u:pw3@n3/focuser";
        let (_d, path) = write(&format!("Work.Interval = 1\ndatabase = {list}\n"));
        let c = Config::<Testd>::load(&path, None).unwrap();
        assert_eq!(c.common.database.as_deref(), Some(list));
        let eff = format!("{:?}", c.effective());
        assert!(
            eff.contains(
                "mysql://u:***@n1:3431/focuser,mysql://u:***@n2:3432/focuser,mysql://u:***@n3/focuser"
            ),
            "{eff}"
        );
        assert!(
            !["pw1", "pw2", "pw3"].iter().any(|p| eff.contains(p)),
            "{eff}"
        );
        let from_env = Config::<Testd>::load(&path, Some("mysql://e:x@a/d,mysql://e:x@b/d".into()));
        assert_eq!(
            from_env.unwrap().common.database.as_deref(),
            Some("mysql://e:x@a/d,mysql://e:x@b/d")
        );
    }

    #[test]
    fn bad_database_lists_name_the_address_and_the_reason() {
        for (list, want) in [
            ("mysql://u:pw@a/f,", "database: address 2 of 2: empty"),
            (",mysql://u:pw@a/f", "database: address 1 of 2: empty"),
            (
                "mysql://u:pw@a/f,postgres://u:pw@b/f",
                "database: address 2 of 2: expected mysql://",
            ),
            (
                "mysql://u:pw@a/f,mysql://u:pw@b/f,not a url",
                "database: address 3 of 3: expected mysql://",
            ),
            (
                "mysql://u:pw@a:3431/f,mysql://u:pw@a:3431/f",
                "database: address 2 repeats the server of address 1 (a:3431)",
            ),
            (
                "mysql://u:pw@a/f,mysql://u:pw@b/g",
                "database: address 2 names database `g`, address 1 `f`",
            ),
        ] {
            let (_d, path) = write(&format!("Work.Interval = 1\ndatabase = {list}\n"));
            let e = Config::<Testd>::load(&path, None).unwrap_err().to_string();
            assert!(e.contains(&format!("testd.cf:2: {want}")), "{list}: {e}");
            assert!(!e.contains(":pw"), "{e}");
            let (_d, path) = write("Work.Interval = 1\n");
            let e = Config::<Testd>::load(&path, Some(list.into()))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "DATABASE_URL={list}: {e}");
        }
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let (_d, path) = write("Work.Interval = 1\ndebuglevl = 40\n");
        let e = Config::<Testd>::load(&path, None).unwrap_err().to_string();
        assert!(e.contains("testd.cf:2: debuglevl: unknown key"), "{e}");

        let (_d, path) = write("Work.Interval = soon\n");
        let e = Config::<Testd>::load(&path, None).unwrap_err().to_string();
        assert!(
            e.contains("testd.cf:1: Work.Interval: expected a non-negative integer"),
            "{e}"
        );

        let (_d, path) = write("rootdir = /x\n");
        let e = Config::<Testd>::load(&path, None).unwrap_err().to_string();
        assert!(e.ends_with("testd.cf: missing required key Work"), "{e}");

        let (_d, path) = write("Work.Other = 1\n");
        let e = Config::<Testd>::load(&path, None).unwrap_err().to_string();
        assert!(e.contains("testd.cf:1: Work.Other: unknown key"), "{e}");

        let (_d, path) = write("Work.Interval = 0\n");
        let e = Config::<Testd>::load(&path, None).unwrap_err().to_string();
        assert!(e.contains("Work.Interval: must be at least 1"), "{e}");

        let (_d, path) = write("Work.Interval = 1\nchroot = 2\n");
        let e = Config::<Testd>::load(&path, None).unwrap_err().to_string();
        assert!(e.contains("testd.cf:2: chroot: expected 0 or 1"), "{e}");

        for bad in ["0", "301"] {
            let (_d, path) = write(&format!("Work.Interval = 1\nstatus_sample = {bad}\n"));
            let e = Config::<Testd>::load(&path, None).unwrap_err().to_string();
            assert!(
                e.contains(&format!("status_sample: {bad} is not between 1 and 300")),
                "{e}"
            );
        }

        let (_d, path) = write("Work.Interval = 1\ndatabase = postgres://x\n");
        let e = Config::<Testd>::load(&path, None).unwrap_err().to_string();
        assert!(e.contains("database: expected mysql://"), "{e}");

        let e = Config::<Testd>::load(Path::new("/nonexistent/x.cf"), None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/nonexistent/x.cf: cannot read"), "{e}");

        let (_d, path) = write("Work.Interval = 1\n\u{0}\u{ff}\n");
        std::fs::write(&path, b"Work.Interval = 1\n\xff\xfe = 2\n").unwrap();
        let e = Config::<Testd>::load(&path, None).unwrap_err().to_string();
        assert!(e.contains("testd.cf:2: not valid UTF-8"), "{e}");
    }

    #[test]
    fn restart_only_keys_are_named() {
        let (_d, a) = write("Work.Interval = 1\nstatus_listen = 9000\n");
        let (_d2, b) =
            write("Work.Interval = 2\nstatus_listen = 9001\ndebuglevel = 40\nstatus_sample = 60\n");
        let old = Config::<Testd>::load(&a, None).unwrap();
        let new = Config::<Testd>::load(&b, None).unwrap();
        assert_eq!(old.common.status_sample, 10, "the default");
        assert_eq!(
            old.restart_only_changes(&new),
            ["status_listen", "status_sample"]
        );
        let running = old.reloaded(new).unwrap();
        assert_eq!(running.common.debuglevel, 40);
        assert_eq!(running.daemon.work.interval, 2);
        assert_eq!(running.common.status_listen.as_deref(), Some("9000"));
        assert_eq!(running.common.status_sample, 10);
    }

    #[test]
    fn the_common_keys_are_the_fields_of_common_config() {
        let (_d, path) = write("Work.Interval = 1\n");
        let c = Config::<Testd>::load(&path, None).unwrap();
        let names: Vec<String> = c.keys().into_iter().map(|k| k.name).collect();
        let mut common: Vec<&str> = COMMON_KEYS.to_vec();
        common.sort_unstable();
        assert_eq!(names[..common.len()], common);
        assert!(names
            .iter()
            .all(|n| Config::<Testd>::is_common(n) != n.starts_with("Work.")));
    }
}
