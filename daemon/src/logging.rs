//! Logging through log4rs: to `logfile` (or standard error), or as a `logconfig` YAML says.
//!
//! log4rs cannot reopen a file after logrotate moved it, so the log file appender is our own:
//! each line is formatted first and written with one `write` under a lock, and `reopen` swaps
//! the file under the same lock. A line written during a rotation therefore lands whole in
//! exactly one of the two files. With a YAML config, reopening rebuilds the config through the
//! log4rs handle, which opens its files anew.
//!
//! The log file is opened as [`crate::safefile`] says, at start (often as root) and at every
//! reopen: a link or a stranger's file in its place is refused, never written through.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use log::{LevelFilter, Record};
use log4rs::append::console::{ConsoleAppender, Target};
use log4rs::append::Append;
use log4rs::config::{Appender, Config, Deserializers, Logger, RawConfig, Root};
use log4rs::encode::pattern::PatternEncoder;
use log4rs::encode::writer::simple::SimpleWriter;
use log4rs::encode::Encode;
use log4rs::filter::threshold::ThresholdFilter;
use serde::Serialize;

use crate::safefile::{self, Access, Owner, SafeFileError};

/// Log target for wire-protocol dumps, enabled only at debuglevel 90 and above.
pub const PROTOCOL_TARGET: &str = "protocol";

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot open log file {path}: {error}")]
    Open { path: String, error: std::io::Error },
    #[error("log file {0}")]
    Refused(SafeFileError),
    #[error("log config {path}: {message}")]
    Yaml { path: String, message: String },
    #[error("cannot set up logging: {0}")]
    Setup(String),
}

/// The level a `debuglevel` of the source's scale stands for.
pub fn level_for(debuglevel: u8) -> LevelFilter {
    match debuglevel {
        0..=10 => LevelFilter::Error,
        11..=20 => LevelFilter::Warn,
        21..=30 => LevelFilter::Info,
        31..=40 => LevelFilter::Debug,
        _ => LevelFilter::Trace,
    }
}

/// Where and how much to log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    pub progname: String,
    pub logfile: Option<PathBuf>,
    pub logconfig: Option<PathBuf>,
    pub debuglevel: u8,
}

/// A log line of level WARN or worse, kept for the status page.
#[derive(Debug, Clone, Serialize)]
pub struct RecentEntry {
    pub time: String,
    pub level: String,
    pub message: String,
    /// When it was logged (`time` is this, for people).
    #[serde(skip)]
    pub at: chrono::DateTime<chrono::Utc>,
}

/// The last warnings and errors, newest last.
#[derive(Debug, Default)]
pub struct RecentErrors {
    entries: Mutex<VecDeque<RecentEntry>>,
    total: std::sync::atomic::AtomicU64,
}

const RECENT_KEPT: usize = 20;

impl RecentErrors {
    pub fn snapshot(&self) -> Vec<RecentEntry> {
        self.entries
            .lock()
            .map(|e| e.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Warnings and errors logged since start.
    pub fn total(&self) -> u64 {
        self.total.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Append for RecentErrorsAppender {
    fn append(&self, record: &Record) -> anyhow::Result<()> {
        let at = chrono::Utc::now();
        let entry = RecentEntry {
            at,
            time: at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
            level: record.level().to_string(),
            message: record.args().to_string(),
        };
        self.0
            .total
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut entries) = self.0.entries.lock() {
            if entries.len() == RECENT_KEPT {
                entries.pop_front();
            }
            entries.push_back(entry);
        }
        Ok(())
    }

    fn flush(&self) {}
}

#[derive(Debug)]
struct RecentErrorsAppender(Arc<RecentErrors>);

/// A file appender that can be reopened.
#[derive(Debug)]
struct ReopenableFile {
    path: PathBuf,
    owner: Owner,
    file: Mutex<File>,
    encoder: Box<dyn Encode>,
}

fn open_append(path: &Path, owner: &Owner) -> Result<File, LogError> {
    let file = safefile::open_owned(path, Access::Append, owner).map_err(|e| match e {
        SafeFileError::Io { error, .. } => LogError::Open {
            path: path.display().to_string(),
            error,
        },
        refused => LogError::Refused(refused),
    })?;
    // The fatal-signal handler writes its line here too (it cannot take the logger's lock).
    crate::crash::set_log_fd(std::os::fd::AsRawFd::as_raw_fd(&file));
    Ok(file)
}

impl ReopenableFile {
    fn reopen(&self) -> Result<(), LogError> {
        let fresh = open_append(&self.path, &self.owner)?;
        let mut file = self
            .file
            .lock()
            .map_err(|_| LogError::Setup("log file lock poisoned".into()))?;
        *file = fresh;
        Ok(())
    }
}

impl Append for ReopenableFile {
    fn append(&self, record: &Record) -> anyhow::Result<()> {
        let mut line = SimpleWriter(Vec::with_capacity(160));
        self.encoder.encode(&mut line, record)?;
        let mut file = self
            .file
            .lock()
            .map_err(|_| anyhow::anyhow!("log file lock poisoned"))?;
        file.write_all(&line.0)?;
        Ok(())
    }

    fn flush(&self) {}
}

/// The daemon's logging, owned by its runtime.
pub struct Logging {
    handle: log4rs::Handle,
    settings: LogSettings,
    /// Whom the log file must belong to (besides root); a file the daemon creates is given
    /// to this user, so that it can be reopened after the privilege drop.
    owner: Owner,
    file: Option<Arc<ReopenableFile>>,
    recent: Arc<RecentErrors>,
}

/// `Arc<ReopenableFile>` as a log4rs appender (log4rs takes ownership of a boxed appender).
#[derive(Debug)]
struct Shared(Arc<ReopenableFile>);

impl Append for Shared {
    fn append(&self, record: &Record) -> anyhow::Result<()> {
        self.0.append(record)
    }
    fn flush(&self) {}
}

fn pattern(progname: &str) -> String {
    let name = progname.replace('{', "{{").replace('}', "}}");
    format!(
        "{{d(%Y-%m-%d %H:%M:%S%.3f)(utc)}} {name}[{}] {{l:<5}} {{m}}{{n}}",
        std::process::id()
    )
}

impl Logging {
    /// Sets up logging as `settings` say and installs it as the process's logger; a log file
    /// belongs to whoever runs the process.
    pub fn init(settings: LogSettings) -> Result<Logging, LogError> {
        Logging::init_owned(settings, Owner::current())
    }

    /// As [`Logging::init`], for a daemon that runs as `owner` once it dropped privileges.
    pub fn init_owned(settings: LogSettings, owner: Owner) -> Result<Logging, LogError> {
        let recent = Arc::new(RecentErrors::default());
        let (config, file) = build(&settings, &owner, &recent)?;
        let handle = log4rs::init_config(config).map_err(|e| LogError::Setup(e.to_string()))?;
        Ok(Logging {
            handle,
            settings,
            owner,
            file,
            recent,
        })
    }

    /// Reopens the log file (SIGHUP, after logrotate moved it away).
    pub fn reopen(&self) -> Result<(), LogError> {
        match &self.file {
            Some(file) => file.reopen(),
            None => self.apply(self.settings.clone()).map(|_| ()),
        }
    }

    /// Applies new settings (a reloaded config), reopening or replacing files as needed.
    pub fn reconfigure(&mut self, settings: LogSettings) -> Result<(), LogError> {
        if settings == self.settings {
            return Ok(());
        }
        self.file = self.apply(settings.clone())?;
        self.settings = settings;
        Ok(())
    }

    fn apply(&self, settings: LogSettings) -> Result<Option<Arc<ReopenableFile>>, LogError> {
        let (config, file) = build(&settings, &self.owner, &self.recent)?;
        self.handle.set_config(config);
        Ok(file)
    }

    pub fn recent(&self) -> Arc<RecentErrors> {
        Arc::clone(&self.recent)
    }
}

fn read_logconfig(yaml: &Path) -> Result<RawConfig, LogError> {
    let err = |message: String| LogError::Yaml {
        path: yaml.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(yaml).map_err(|e| err(e.to_string()))?;
    serde_yaml::from_str(&text).map_err(|e| err(e.to_string()))
}

/// Whether a `logconfig` file can be read and parsed (`--check-config`; its appenders are
/// not built, since building them opens their files).
pub fn check_logconfig(yaml: &Path) -> Result<(), LogError> {
    read_logconfig(yaml).map(|_| ())
}

fn build(
    settings: &LogSettings,
    owner: &Owner,
    recent: &Arc<RecentErrors>,
) -> Result<(Config, Option<Arc<ReopenableFile>>), LogError> {
    let recent_appender = Appender::builder()
        .filter(Box::new(ThresholdFilter::new(LevelFilter::Warn)))
        .build("recent", Box::new(RecentErrorsAppender(Arc::clone(recent))));
    let protocol = if settings.debuglevel >= 90 {
        LevelFilter::Trace
    } else {
        LevelFilter::Off
    };

    if let Some(yaml) = &settings.logconfig {
        let err = |message: String| LogError::Yaml {
            path: yaml.display().to_string(),
            message,
        };
        let raw = read_logconfig(yaml)?;
        let (appenders, errors) = raw.appenders_lossy(&Deserializers::default());
        if !errors.is_empty() {
            return Err(err(format!("{errors}")));
        }
        let mut root = raw.root();
        let root_appenders: Vec<String> = root
            .appenders()
            .iter()
            .cloned()
            .chain(["recent".to_string()])
            .collect();
        root = Root::builder()
            .appenders(root_appenders)
            .build(root.level());
        let config = Config::builder()
            .appenders(appenders)
            .appender(recent_appender)
            .loggers(raw.loggers().iter().cloned())
            .build(root)
            .map_err(|e| err(e.to_string()))?;
        return Ok((config, None));
    }

    let encoder = PatternEncoder::new(&pattern(&settings.progname));
    let (main, file): (Box<dyn Append>, _) = match &settings.logfile {
        Some(path) => {
            let file = Arc::new(ReopenableFile {
                path: path.clone(),
                owner: owner.clone(),
                file: Mutex::new(open_append(path, owner)?),
                encoder: Box::new(encoder),
            });
            (Box::new(Shared(Arc::clone(&file))), Some(file))
        }
        None => (
            Box::new(
                ConsoleAppender::builder()
                    .target(Target::Stderr)
                    .encoder(Box::new(encoder))
                    .build(),
            ),
            None,
        ),
    };
    let config = Config::builder()
        .appender(Appender::builder().build("main", main))
        .appender(recent_appender)
        .logger(Logger::builder().build(PROTOCOL_TARGET, protocol))
        .build(
            Root::builder()
                .appenders(["main", "recent"])
                .build(level_for(settings.debuglevel)),
        )
        .map_err(|e| LogError::Setup(e.to_string()))?;
    Ok((config, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debuglevels_map_to_levels() {
        assert_eq!(level_for(10), LevelFilter::Error);
        assert_eq!(level_for(20), LevelFilter::Warn);
        assert_eq!(level_for(30), LevelFilter::Info);
        assert_eq!(level_for(40), LevelFilter::Debug);
        assert_eq!(level_for(50), LevelFilter::Trace);
        assert_eq!(level_for(90), LevelFilter::Trace);
    }

    #[test]
    fn the_pattern_escapes_braces_in_the_name() {
        assert!(pattern("a{b}").contains("a{{b}}["));
    }
}
