//! Over budget: the thread's lines from then on, and at the end what it held in memory, go
//! to spill files, one per part of the id space.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use super::Worker;
use crate::ingest::part_of;
use crate::scratch;

impl Worker<'_> {
    /// Over budget: from now on every line goes to its id range's spill file, and what is
    /// in memory is written there at the end.
    pub fn partition(&mut self) -> std::io::Result<()> {
        if let Some(m) = self.memory.take() {
            self.run = Some(m.into_run());
        }
        if !self.spills.is_empty() {
            return Ok(());
        }
        log::info!(
            "input larger than Cycle.MemoryLimit: partitioning it into {} parts in {}",
            self.shared.parts,
            self.shared.tmp_dir.display()
        );
        std::fs::create_dir_all(self.shared.tmp_dir)?;
        for p in 0..self.shared.parts {
            let path = self
                .shared
                .tmp_dir
                .join(format!("part-{p:04}-{}.spill", self.name));
            let w = BufWriter::with_capacity(256 << 10, File::create(&path)?);
            self.spills.push((path, w));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn spill_line(
        &mut self,
        id: u64,
        ts: i64,
        hits: u64,
        tag: &str,
        seq: u64,
        domain: u32,
        url: &str,
    ) -> std::io::Result<()> {
        let (tag_ts, tag_seq) = if tag.is_empty() {
            (i64::MIN, 0)
        } else {
            (ts, seq)
        };
        let w = &mut self.spills[part_of(id, self.shared.parts)].1;
        write_spill(
            w,
            [
                id,
                ts as u64,
                hits,
                tag_ts as u64,
                tag_seq,
                u64::from(domain),
            ],
            tag,
            url,
        )
    }

    /// Writes out what stayed in memory (after a spill, here or in another thread) and
    /// closes the spill files.
    pub fn finish_spills(&mut self) -> std::io::Result<Vec<PathBuf>> {
        self.partition()?;
        if let Some(run) = self.run.take() {
            for (a, url, tag, _) in run.aggs() {
                let w = &mut self.spills[part_of(a.id, self.shared.parts)].1;
                let numbers = [
                    a.id,
                    a.ts as u64,
                    a.hits,
                    a.tag_ts as u64,
                    a.tag_seq,
                    u64::from(a.domain),
                ];
                write_spill(w, numbers, tag, url)?;
            }
        }
        let mut paths = Vec::new();
        for (path, w) in &mut self.spills {
            w.flush()?;
            paths.push(path.clone());
        }
        Ok(paths)
    }
}

/// A spilled line or aggregate: id, latest time, hits, the time and place its tag is from,
/// its thread's domain number; the tag and the URL.
fn write_spill(w: &mut impl Write, numbers: [u64; 6], tag: &str, url: &str) -> std::io::Result<()> {
    scratch::write(w, numbers, &[tag.as_bytes(), url.as_bytes()])
}
