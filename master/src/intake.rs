//! What the master takes in: the reflogs of `incoming_dir` that have settled (not modified for
//! `Cycle.SettleSeconds`: a file written in place is still growing), and the inputs it sets
//! aside — moved to `bad_dir` with their reason — because it cannot process them, so that one
//! bad input never stops the cycles (docs/operations.md).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use focuser_daemon::episode::Episode;
use focuser_formats::fsutil;

use crate::cycle::Master;
use crate::names;

/// The reflogs of `incoming_dir` at one look.
#[derive(Debug, Default)]
pub struct Incoming {
    /// Settled, in name order (at most `Cycle.MaxFiles`).
    pub ready: Vec<PathBuf>,
    /// Modified within `Cycle.SettleSeconds`: still being written, left for a later look.
    pub settling: Vec<Settling>,
}

#[derive(Debug)]
pub struct Settling {
    pub path: PathBuf,
    pub size: u64,
    /// How long ago it was modified (or how far ahead, for a time in the future).
    pub age: Duration,
}

impl Master<'_> {
    /// Looks at `incoming_dir`: dot-files are being written and are left alone, a name the
    /// journal cannot hold is set aside, a file modified within `Cycle.SettleSeconds` waits.
    pub fn incoming(&self) -> anyhow::Result<Incoming> {
        let dir = &self.cfg.incoming_dir;
        let settle = Duration::from_secs(self.cfg.cycle.settle_seconds);
        let now = SystemTime::now();
        let mut found = Incoming::default();
        for entry in std::fs::read_dir(dir)
            .with_context(|| format!("incoming_dir {}", dir.display()))?
            .filter_map(|e| e.ok())
        {
            let name = entry.file_name();
            if name.as_bytes().starts_with(b".") || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.path();
            if !names::journaled(&name) {
                let why = "its name is not printable UTF-8 (control characters, a backslash or \
                           bytes that are not UTF-8), which the cycle journal cannot hold";
                self.set_aside(&path, why, None, false)?;
                continue;
            }
            let Ok(meta) = entry.metadata() else {
                continue; // gone since the listing
            };
            if !settle.is_zero() {
                // A time in the future counts by its distance: a file stamped far ahead (a
                // wrong clock, `touch -d`) does not wait until then.
                let age = meta.modified().map_or(Duration::ZERO, |m| {
                    now.duration_since(m)
                        .unwrap_or_else(|ahead| ahead.duration())
                });
                if age < settle {
                    found.settling.push(Settling {
                        path,
                        size: meta.len(),
                        age,
                    });
                    continue;
                }
            }
            found.ready.push(path);
        }
        found.ready.sort();
        if self.cfg.cycle.max_files > 0 {
            found.ready.truncate(self.cfg.cycle.max_files);
        }
        Ok(found)
    }

    /// Takes `input` out of the work for good: moved to `bad_dir` (under its printable name,
    /// made unique) next to `<that name>.why`, which says why; logged once, counted. A
    /// `master replay` input (`keep_inputs`) stays where it is. Nothing to do for an input
    /// that is gone (removed by hand).
    pub(crate) fn set_aside(
        &self,
        input: &Path,
        why: &str,
        cycle: Option<u64>,
        keep_inputs: bool,
    ) -> anyhow::Result<()> {
        let shown = names::printable(input.as_os_str());
        let of_cycle = cycle.map(|c| format!("cycle {c}: ")).unwrap_or_default();
        if std::fs::symlink_metadata(input).is_err() {
            log::warn!("{of_cycle}{shown}: no longer there; dropped from the cycle ({why})");
            return Ok(());
        }
        self.set_aside.fetch_add(1, Ordering::Relaxed);
        if keep_inputs {
            log::error!("{of_cycle}{shown}: cannot be processed, left out of the cycle: {why}");
            return Ok(());
        }
        let dir = &self.cfg.bad_dir;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let base = names::file_name(input);
        // A name of its own: an earlier input of that name may be there already.
        let name = (0..10_000)
            .map(|n| match n {
                0 => names::fitted(&base, ""),
                n => names::fitted(&base, &format!(".{n}")),
            })
            .find(|name| std::fs::symlink_metadata(dir.join(name)).is_err())
            .unwrap_or_else(|| names::fitted(&base, ""));
        let target = dir.join(&name);
        let reason = dir.join(names::fitted(&name, ".why"));
        let stamp = focuser_daemon::clock::utc_stamp();
        fsutil::write_atomically(&reason, |w| {
            writeln!(w, "input {shown}")?;
            if let Some(c) = cycle {
                writeln!(w, "cycle {c}")?;
            }
            writeln!(w, "time {stamp}")?;
            writeln!(w, "reason {}", names::printable(OsStr::new(why)))
        })
        .with_context(|| format!("writing {}", reason.display()))?;
        fsutil::publish(input, &target)
            .with_context(|| format!("setting {shown} aside to {}", target.display()))?;
        log::warn!(
            "{of_cycle}{shown}: set aside to {} ({}): {why}",
            target.display(),
            reason.display()
        );
        Ok(())
    }

    /// Inputs set aside by this master so far.
    pub fn set_aside_count(&self) -> u64 {
        self.set_aside.load(Ordering::Relaxed)
    }
}

/// How often a file that never settles is mentioned again.
const SETTLING_REMINDER: Duration = Duration::from_secs(600);

/// The files seen settling, each said once: when it is first seen (and every ten minutes if it
/// never settles), and when it has settled.
#[derive(Default)]
pub struct SettleLog {
    seen: HashMap<PathBuf, (Instant, Episode)>,
}

impl SettleLog {
    /// Notes one look's settling files; `settle` is `Cycle.SettleSeconds`.
    pub fn note(&mut self, settling: &[Settling], settle: u64) {
        self.seen.retain(|path, (since, _)| {
            let still = settling.iter().any(|s| &s.path == path);
            if !still {
                log::info!(
                    "{}: settled after {} s",
                    names::printable(path.as_os_str()),
                    since.elapsed().as_secs()
                );
            }
            still
        });
        for s in settling {
            let (_, episode) = self.seen.entry(s.path.clone()).or_insert_with(|| {
                let what = names::printable(s.path.as_os_str());
                (
                    Instant::now(),
                    Episode::new(what).summary_every(SETTLING_REMINDER),
                )
            });
            episode.occurred(
                log::Level::Info,
                &format_args!(
                    "still being written ({} bytes, modified {} s ago); taken once unchanged \
                     for {settle} s (reflogs should be renamed in when finished)",
                    s.size,
                    s.age.as_secs()
                ),
            );
        }
    }
}
