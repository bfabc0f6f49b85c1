//! The exclusion file in force (`Url.ExcludeFile`, the source's excldb; docs/operations.md
//! "yacobot: exclusions and start URLs", docs/formats.md "Exclusion file"): read at start,
//! where a bad file stops the start (and `--check-config`), and again at every reload, where a
//! bad file is refused whole, naming its file and line, and the rules in force stay. The
//! loader (what it stores), the scheduler (what it fetches) and the start URLs take the rules
//! in force at each unit of work; the figures count what each left out.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use anyhow::anyhow;
use focuser_daemon::status::{Card, Figure, StatusSource};
use focuser_daemon::Config;
use focuser_formats::exclude::{ExcludeError, Exclusions};

use crate::config::YacobotConfig;
use crate::status::{add, get};

/// The rules of one exclusion file, and the file (for the reasons given).
#[derive(Debug, Default)]
pub struct Rules {
    pub file: Option<PathBuf>,
    pub set: Exclusions,
}

impl Rules {
    /// Why `url` (normalised, as stored) is excluded: `FILE:LINE (kind value)`; `None` if no
    /// rule excludes it.
    pub fn why(&self, url: &str) -> Option<String> {
        let rule = self.set.matching(url)?;
        let file = self.file.as_deref().unwrap_or(Path::new("?"));
        Some(format!(
            "{}:{} ({} {})",
            file.display(),
            rule.line,
            rule.kind.name(),
            rule.value
        ))
    }

    pub fn excludes(&self, url: &str) -> bool {
        self.set.excludes(url)
    }
}

/// Reads the exclusion file `cfg` names (none: no rules), refusing it whole at its first bad
/// line.
pub fn read(cfg: &Config<YacobotConfig>) -> anyhow::Result<Rules> {
    let Some(file) = &cfg.daemon.url.exclude_file else {
        return Ok(Rules::default());
    };
    let path = cfg.common.path(file);
    Ok(Rules {
        set: read_file(&path)?,
        file: Some(path),
    })
}

/// An exclusion file's rules, or its first error with its file and line.
pub fn read_file(path: &Path) -> anyhow::Result<Exclusions> {
    Exclusions::load(path).map_err(|e| match e {
        ExcludeError::Line { line, message } => anyhow!("{}:{line}: {message}", path.display()),
        ExcludeError::File(message) => anyhow!("{}: {message}", path.display()),
    })
}

/// Where a URL was left out, for the figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// Not stored from a queue file.
    Loader,
    /// Claimed, then parked instead of fetched.
    Scheduler,
    /// A start URL (`Url.StartFile`, `yacobot url add`) refused.
    Start,
}

/// The rules in force, shared by the workers, and their figures.
#[derive(Default)]
pub struct Exclusion {
    rules: RwLock<Arc<Rules>>,
    loader: AtomicU64,
    scheduler: AtomicU64,
    start: AtomicU64,
    refused: AtomicU64,
    /// The last file read was refused (the rules in force are older than the file).
    stale: AtomicBool,
}

impl Exclusion {
    /// The rules in force.
    pub fn rules(&self) -> Arc<Rules> {
        Arc::clone(&self.rules.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Reads the file `cfg` names and puts its rules in force. At start its error stops the
    /// start; at a reload it is logged and the rules in force stay.
    pub fn load(&self, cfg: &Config<YacobotConfig>) -> anyhow::Result<()> {
        match read(cfg) {
            Ok(rules) => {
                if let Some(file) = &rules.file {
                    log::info!(
                        "exclusions: {} rules from {} ({})",
                        rules.set.len(),
                        file.display(),
                        rules.set.counts()
                    );
                }
                *self.rules.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(rules);
                self.stale.store(false, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                add(&self.refused, 1);
                self.stale.store(true, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// A reload: the file again, or the rules in force kept with the reason logged.
    pub fn reload(&self, cfg: &Config<YacobotConfig>) {
        if let Err(e) = self.load(cfg) {
            log::error!("exclusion file refused, the rules in force stay: {e:#}");
        }
    }

    /// Counts `n` URLs left out `by`.
    pub fn counted(&self, by: By, n: u64) {
        let counter = match by {
            By::Loader => &self.loader,
            By::Scheduler => &self.scheduler,
            By::Start => &self.start,
        };
        add(counter, n);
    }
}

impl StatusSource for Exclusion {
    fn figures(&self) -> Vec<Figure> {
        let excluded = |by: &str, v: &AtomicU64| {
            Figure::counter(
                "yacobot_urls_excluded_total",
                "URLs left out by the exclusion file: not stored (loader), parked instead of fetched (scheduler), refused (start URLs)",
                get(v),
            )
            .with_label("by", by)
        };
        vec![
            Figure::gauge(
                "yacobot_exclusion_rules",
                "rules of the exclusion file in force",
                self.rules().set.len() as f64,
            ),
            Figure::counter(
                "yacobot_exclusion_files_refused_total",
                "exclusion files refused (a bad line): the rules in force stayed",
                get(&self.refused),
            ),
            excluded("loader", &self.loader),
            excluded("scheduler", &self.scheduler),
            excluded("start", &self.start),
        ]
    }

    fn cards(&self) -> Vec<Card> {
        let stale = self.stale.load(Ordering::Relaxed);
        let excluded = get(&self.loader) + get(&self.scheduler) + get(&self.start);
        vec![
            Card::number("exclusion rules", self.rules().set.len() as f64)
                .unit("rules")
                .warn_if(stale)
                .help("Url.ExcludeFile; amber: the last file read was refused (see the log), older rules are in force"),
            Card::number("URLs excluded", excluded).unit("URLs"),
        ]
    }
}
