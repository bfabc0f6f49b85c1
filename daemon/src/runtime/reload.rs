//! SIGUSR2: the config file read again and applied, except its restart-only keys (declared on
//! their fields, see [`crate::config::Key`]), which keep their running values and are named.
//! A new config is compared not with the file's previous text but with what runs, so a second
//! reload of an unchanged file still names them; and files read only at start (a shared
//! secret) are compared with what they were at start.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::start::settings;
use super::Runtime;
use crate::checks::load_access;
use crate::config::{Config, DaemonConfig};

/// A file's identity and last change: enough to tell that it was edited or replaced (without
/// reading it: after the privilege drop the daemon may no longer be able to).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp(Option<(u64, u64, u64, i64, i64)>);

impl Stamp {
    fn of(path: &Path) -> Stamp {
        Stamp(
            std::fs::metadata(path)
                .ok()
                .map(|m| (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec())),
        )
    }
}

/// The config and start-only files as the daemon started with them.
pub(crate) struct Started<T> {
    config: Config<T>,
    files: Vec<(&'static str, PathBuf, Stamp)>,
    /// Inside a chroot to `rootdir`, paths below it are seen from `/`.
    chrooted: bool,
}

impl<T: DaemonConfig> Started<T> {
    /// Taken once the daemon runs as it will (after a chroot).
    pub(crate) fn new(config: &Config<T>, chrooted: bool) -> Started<T> {
        let mut started = Started {
            config: config.clone(),
            files: Vec::new(),
            chrooted,
        };
        started.files = config
            .daemon
            .start_files(&config.common)
            .into_iter()
            .map(|(key, path)| {
                let stamp = Stamp::of(&started.local(&path));
                (key, path, stamp)
            })
            .collect();
        started
    }

    /// `path` (under `rootdir`, as [`crate::CommonConfig::path`] makes it) as this process
    /// reaches it.
    fn local(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.config.common.rootdir) {
            Ok(below) if self.chrooted => Path::new("/").join(below),
            _ => path.to_path_buf(),
        }
    }

    /// The keys (and start-only files) of `new` that differ from what runs and take effect
    /// only at the next start.
    pub(crate) fn restart_only(&self, new: &Config<T>) -> Vec<String> {
        let mut keys = self.config.restart_only_changes(new);
        let now = new.daemon.start_files(&new.common);
        for (key, path, stamp) in &self.files {
            let Some((_, new_path)) = now.iter().find(|(k, _)| k == key) else {
                continue;
            };
            if new_path != path {
                if !keys.iter().any(|k| k == key) {
                    keys.push(key.to_string());
                }
            } else if Stamp::of(&self.local(path)) != *stamp {
                keys.push(format!("{key} (the file {} changed)", path.display()));
            }
        }
        keys
    }
}

impl<T: DaemonConfig> Runtime<T> {
    /// Re-reads the config file. Everything that can fail is checked before anything changes.
    pub(super) fn reload(&mut self) -> anyhow::Result<()> {
        let new = Config::<T>::load(&self.config.file, std::env::var("DATABASE_URL").ok())?;
        let access = load_access(&new.common, Path::to_path_buf)?;
        let restart_only = self.started.restart_only(&new);
        let running = Arc::new(self.config.reloaded(new)?);
        self.logging
            .reconfigure(settings(self.name, &running.common))?;
        if let Ok(mut a) = self.shared.access.lock() {
            *a = access;
        }
        self.stopper
            .timeout
            .store(running.common.stop_timeout, Ordering::Relaxed);
        if let Ok(mut keys) = self.shared.config.lock() {
            *keys = running.keys();
        }
        self.running.set(Arc::clone(&running));
        self.config = running;
        let file = self.config.file.display();
        if restart_only.is_empty() {
            log::info!("config reloaded from {file}");
        } else {
            log::warn!(
                "config reloaded from {file}; changed keys that take effect only at restart (running values kept): {}",
                restart_only.join(", ")
            );
        }
        Ok(())
    }
}
