//! Start-up checks: what a start would refuse, found before anything is started. A start runs
//! them before it detaches (the error goes to the terminal), and `--check-config` runs the
//! same function, so a config it passes does not then fail to start for a missing or exposed
//! file.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};

use crate::access::{AllowList, PasswordFile};
use crate::config::{CommonConfig, Config, DaemonConfig};
use crate::status::server::Access;
use crate::{logging, privileges, safefile};

/// Everything a start checks besides the config's text: `rootdir` is a directory; `user`,
/// `group` and `chroot` can be had; a pidfile or log file already there is one the daemon may
/// write (see [`safefile`]), and their directories exist; `logconfig` parses; `allowdb` and
/// `pwfile` load (the pwfile private); and the daemon's own files
/// ([`DaemonConfig::check_files`]: a reader's secret, say).
pub fn preflight<T: DaemonConfig>(config: &Config<T>) -> anyhow::Result<()> {
    let common = &config.common;
    let meta = std::fs::metadata(&common.rootdir)
        .with_context(|| format!("rootdir {}", common.rootdir.display()))?;
    if !meta.is_dir() {
        return Err(anyhow!(
            "rootdir {}: not a directory",
            common.rootdir.display()
        ));
    }
    privileges::check(common)?;
    let owner = privileges::owner(common)?;
    for (key, path) in [("pidfile", &common.pidfile), ("logfile", &common.logfile)] {
        if let Some(path) = path {
            safefile::check_path(&common.path(path), &owner).map_err(|e| anyhow!("{key} {e}"))?;
        }
    }
    if let Some(yaml) = &common.logconfig {
        logging::check_logconfig(&common.path(yaml))?;
    }
    load_access(common, |p| common.path(p))?;
    crate::crash::check_files(common)?;
    config
        .daemon
        .check_files(common)
        .map_err(|e| anyhow!("{}: {e}", config.file.display()))?;
    Ok(())
}

/// `allowdb` and `pwfile`, their paths resolved by `resolve` (taken as they are by a started
/// daemon, whose working directory is `rootdir`, or `/` inside a chroot).
pub(crate) fn load_access(
    common: &CommonConfig,
    resolve: impl Fn(&Path) -> PathBuf,
) -> anyhow::Result<Access> {
    let allow = match &common.allowdb {
        Some(p) => AllowList::load(&resolve(p)).context("allowdb")?,
        None => AllowList::loopback(),
    };
    let passwords = common
        .pwfile
        .as_deref()
        .map(|p| PasswordFile::load(&resolve(p)).context("pwfile"))
        .transpose()?;
    Ok(Access { allow, passwords })
}
