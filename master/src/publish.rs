//! Publishing a committed cycle (step 6 of the commit protocol, docs/formats.md): its outputs
//! renamed into place, its inputs moved out of the way; and the leftovers of an attempt that
//! did not commit.

use focuser_formats::fsutil;

use crate::cycle::Master;
use crate::journal::Journal;
use crate::{ingest, join, names};

impl Master<'_> {
    /// Puts a prepared cycle's outputs in place; safe to repeat after a crash.
    pub(crate) fn publish(&self, journal: &Journal) -> anyhow::Result<()> {
        let cfg = self.cfg;
        let name = self.queue_name(journal.seq);
        if let Ok(nodes) = std::fs::read_dir(&cfg.queue_dir) {
            for node in nodes.filter_map(|e| e.ok()) {
                let final_path = node.path().join(&name);
                let tmp = fsutil::temp_path(&final_path);
                if tmp.exists() {
                    fsutil::publish(&tmp, &final_path)?;
                }
            }
        }
        for input in &journal.inputs {
            let final_path = ingest::reject_path(&cfg.rejects_dir, input);
            let tmp = fsutil::temp_path(&final_path);
            if tmp.exists() {
                fsutil::publish(&tmp, &final_path)?;
            }
        }
        let next_log = cfg.state_dir.join("current_log.next");
        if next_log.exists() {
            fsutil::publish(&next_log, &self.current_log())?;
        }
        if !journal.keep_inputs {
            for input in &journal.inputs {
                if !input.exists() {
                    continue;
                }
                let disposed = match &cfg.done_dir {
                    Some(done) => fsutil::publish(input, &done.join(names::file_name(input))),
                    None => std::fs::remove_file(input).and_then(|()| match input.parent() {
                        Some(dir) => fsutil::sync_dir(dir),
                        None => Ok(()),
                    }),
                };
                // Processed, but not out of the way: set aside, or the next cycle would read
                // it again.
                if let Err(e) = disposed {
                    let why = format!("processed, but could not be moved out of the way: {e}");
                    self.set_aside(input, &why, Some(journal.seq), false)?;
                }
            }
        }
        Journal::remove(&cfg.state_dir)?;
        Ok(())
    }

    /// The queue files of cycle `seq` not yet published.
    pub(crate) fn discard_queue_temporaries(&self, seq: u64) -> anyhow::Result<()> {
        let name = self.queue_name(seq);
        if let Ok(nodes) = std::fs::read_dir(&self.cfg.queue_dir) {
            for node in nodes.filter_map(|e| e.ok()) {
                fsutil::remove_if_exists(&fsutil::temp_path(&node.path().join(&name)))?;
            }
        }
        Ok(())
    }

    /// Leftovers of an attempt at cycle `seq` that did not reach its commit point.
    pub(crate) fn discard_temporaries(&self, seq: u64) -> anyhow::Result<()> {
        let cfg = self.cfg;
        self.discard_queue_temporaries(seq)?;
        let next_log = cfg.state_dir.join("current_log.next");
        fsutil::remove_if_exists(&next_log)?;
        fsutil::remove_if_exists(&join::upper_path(&next_log))?;
        if let Ok(entries) = std::fs::read_dir(&cfg.tmp_dir) {
            for e in entries.filter_map(|e| e.ok()) {
                fsutil::remove_if_exists(&e.path())?;
            }
        }
        if let Ok(entries) = std::fs::read_dir(&cfg.rejects_dir) {
            for e in entries.filter_map(|e| e.ok()) {
                let n = e.file_name();
                let n = n.to_string_lossy();
                if n.starts_with('.') && n.ends_with(".rej.tmp") {
                    fsutil::remove_if_exists(&e.path())?;
                }
            }
        }
        Ok(())
    }
}
