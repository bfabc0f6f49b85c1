//! What reading the inputs gives the cycle: the threads' runs in memory, or every part's
//! spill files, read back part by part.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use rustc_hash::FxHashMap;

use super::run::{self, RunBuilder};
use super::{Domains, IngestStats, Run};
use crate::scratch;

/// The result of reading the inputs: the threads' runs in memory, or spilled by part.
pub struct Ingested {
    pub parts: usize,
    pub(super) runs: Vec<Run>,
    /// Per part: the spill file of each thread that wrote one, with the thread's number.
    pub(super) spills: Vec<Vec<(usize, PathBuf)>>,
    /// Each thread's domain numbers, as the cycle's.
    pub(super) domain_maps: Vec<Vec<u32>>,
    /// Every domain of the input.
    pub domains: Domains,
    pub stats: IngestStats,
    /// Reject files written (temporary names) and where each is to be published.
    pub rejects: Vec<(PathBuf, PathBuf)>,
    /// The bytes read of each input (its size when the cycle looked).
    pub sizes: Vec<u64>,
}

/// The runs of one part: borrowed when nothing was spilled, else read back from the spills.
pub enum PartRuns<'a> {
    Memory(&'a [Run]),
    Loaded(Vec<Run>),
}

impl PartRuns<'_> {
    pub fn runs(&self) -> &[Run] {
        match self {
            PartRuns::Memory(runs) => runs,
            PartRuns::Loaded(runs) => runs,
        }
    }
}

impl Ingested {
    /// The aggregates held in memory, and the bytes of their text.
    pub fn size(&self) -> (usize, usize) {
        self.runs
            .iter()
            .map(Run::size)
            .fold((0, 0), |(a, t), (ra, rt)| (a + ra, t + rt))
    }

    /// The runs held in memory, given back once merged.
    pub fn take_runs(&mut self) -> Vec<Run> {
        std::mem::take(&mut self.runs)
    }

    /// The runs of part `p`, to be merged in id order ([`Merged::new`]). Parts may be loaded
    /// by different threads at once; a spilled part's files are removed once read.
    /// `domains`: the cycle's ([`Ingested::domains`], which the caller may have taken).
    pub fn part(&self, p: usize, domains: &Domains) -> std::io::Result<PartRuns<'_>> {
        if self.spills.is_empty() {
            return Ok(PartRuns::Memory(&self.runs));
        }
        // Lines of one URL (or aggregates of it, written from memory) are added up by id;
        // the domain's name is the cycle's, found again in the URL.
        let mut at: FxHashMap<u64, run::AggRef> = FxHashMap::default();
        let mut aggs = RunBuilder::default();
        for (t, path) in &self.spills[p] {
            let mut r = BufReader::with_capacity(256 << 10, File::open(path)?);
            while let Some(([id, ts, hits, tag_ts, tag_seq, domain], [tag, url])) =
                scratch::read(&mut r)?
            {
                let r = match at.get(&id) {
                    Some(&r) => r,
                    None => {
                        let domain = self.domain_maps[*t][domain as usize];
                        let name = &domains.names[domain as usize];
                        let place = url.find(name.as_str());
                        let r = aggs
                            .push(id, &url, name, place, domain)
                            .ok_or_else(|| std::io::Error::other("a spilled part is too large"))?;
                        at.insert(id, r);
                        r
                    }
                };
                let a = aggs.agg_mut(r);
                a.hits = a.hits.saturating_add(hits);
                a.ts = a.ts.max(ts as i64);
                if !tag.is_empty() {
                    aggs.tag(r, tag_ts as i64, tag_seq, &tag);
                }
            }
            std::fs::remove_file(path)?;
        }
        Ok(PartRuns::Loaded(vec![aggs.finish()]))
    }
}
