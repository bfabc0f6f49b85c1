//! analyze_dump and group_sum (docs/design.md#master-cycle, steps 1–2): reflog files in, one
//! aggregate per URL out, bad lines to reject files.
//!
//! The inputs are cut into byte ranges of whole lines, 16 per thread ([`read`]); each thread
//! takes the next range no thread has taken yet, and reads and parses it ([`scan`], [`line`]). A thread keeps the URLs of its share of the raw URL keys and
//! posts the other lines to the threads that keep theirs ([`exchange`]), so that each URL is
//! aggregated ([`worker`], [`memory`]) by one thread; the threads' runs ([`run`]) are then
//! merged in id order, which is also current_log's order. Every rule of group_sum is
//! independent of the order lines are added in (the updatetag goes by timestamp, then by
//! place in the inputs), so the result does not depend on how the inputs were cut, nor on
//! which thread kept which URL.
//!
//! Lines are aggregated in memory while an estimate of a thread's working set stays within its
//! share of `Cycle.MemoryLimit`. If it would not, the id space (URL ids are spread evenly over
//! 64 bits) is cut into equal ranges, one spill file each per thread in `tmp_dir`; every
//! further line and, at the end, everything in memory goes to its range's file, and the ranges
//! are then aggregated in id order, two at a time: one for each half of the id space, which the
//! join ([`crate::join`]) works on at the same time.

mod exchange;
mod ingested;
mod line;
mod memory;
mod read;
mod rejects;
mod run;
mod scan;
mod table;
mod worker;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

use focuser_formats::reflog::HostPolicy;
use nix::errno::Errno;
use rustc_hash::FxHashMap;

pub use ingested::{Ingested, PartRuns};
pub use rejects::reject_path;
pub use run::{AggView, Merged, Run};
pub(crate) use table::prefetch;
use worker::{Shared, Worker};

/// Segments of the inputs per reading thread.
const SEGMENTS_PER_THREAD: usize = 16;

/// Lines longer than this are rejected without being held in memory.
pub const MAX_LINE: usize = 1 << 20;

/// How lines are judged: the reflog's time zone (seconds east of UTC), the longest URL, and
/// the URL hosts forwarded.
#[derive(Debug, Clone, Copy)]
pub struct LineRules {
    pub offset: i64,
    pub max_url: usize,
    pub hosts: HostPolicy,
}

/// A failure of one input of its own (it cannot be opened or read: gone, unreadable, a
/// directory, a media error), carried in the `std::io::Error` a reading thread returns so
/// that the cycle can set that input aside and go on without it.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {error}")]
pub struct InputFailed {
    /// Its place in the cycle's inputs.
    pub input: usize,
    pub path: String,
    pub error: std::io::Error,
}

/// `e`, met reading input `input` at `path`: the input's own failure, unless it is one of the
/// whole process (out of memory or file descriptors), which the cycle's redo may not meet.
pub(crate) fn input_failed(input: usize, path: &Path, e: std::io::Error) -> std::io::Error {
    let path = crate::names::printable(path.as_os_str());
    let of_the_process = e.raw_os_error().is_some_and(|n| {
        [Errno::EMFILE, Errno::ENFILE, Errno::ENOMEM, Errno::EINTR].contains(&Errno::from_raw(n))
    }) || e.kind() == std::io::ErrorKind::OutOfMemory;
    if of_the_process {
        return std::io::Error::new(e.kind(), format!("{path}: {e}"));
    }
    std::io::Error::new(
        e.kind(),
        InputFailed {
            input,
            path,
            error: e,
        },
    )
}

/// The input a failed [`ingest`] failed on, if the failure is that input's own.
pub fn failed_input(e: &std::io::Error) -> Option<&InputFailed> {
    e.get_ref()?.downcast_ref::<InputFailed>()
}

/// The cycle's domains, numbered. Domains are few (hundreds of thousands at most) and repeat on
/// every line: each is kept once, found by the 96-bit hash of its name.
#[derive(Debug, Default)]
pub struct Domains {
    index: FxHashMap<(u64, u32), u32>,
    pub names: Vec<String>,
    /// The memory they hold, about.
    pub bytes: u64,
}

impl Domains {
    /// `names`, numbered in their order (they are distinct).
    fn numbered(names: Vec<String>) -> Domains {
        let mut index = FxHashMap::default();
        index.reserve(names.len());
        let mut bytes = 0;
        for (i, name) in names.iter().enumerate() {
            index.insert(table::raw_hash(name.as_bytes()), i as u32);
            bytes += name.len() as u64 + 48;
        }
        Domains {
            index,
            names,
            bytes,
        }
    }

    /// The number of `name`, if it is one of the cycle's.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.index.get(&table::raw_hash(name.as_bytes())).copied()
    }

    pub fn intern(&mut self, name: &str) -> u32 {
        let key = table::raw_hash(name.as_bytes());
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(key, i);
        self.bytes += name.len() as u64 + 48;
        i
    }
}

/// What reading the inputs counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngestStats {
    pub files: u64,
    pub lines: u64,
    pub rejected: BTreeMap<&'static str, u64>,
}

impl IngestStats {
    pub fn rejected_total(&self) -> u64 {
        self.rejected.values().sum()
    }

    fn add(&mut self, other: &IngestStats) {
        self.files += other.files;
        self.lines += other.lines;
        for (k, v) in &other.rejected {
            *self.rejected.entry(k).or_insert(0) += v;
        }
    }
}

/// The id range of part `p` of `parts`: `[start, end)`, the last one closed at `u64::MAX`.
pub fn part_of(id: u64, parts: usize) -> usize {
    ((u128::from(id) * parts as u128) >> 64) as usize
}

/// How many parts an input of `bytes` needs within `budget` bytes of memory, if every line
/// were a URL of its own: an aggregate costs about three times its line, and the join holds
/// two parts at once (one per half of the id space, so the count is even).
pub fn parts_for(bytes: u64, budget: u64) -> usize {
    let need = bytes.saturating_mul(3).saturating_mul(2);
    let parts = need.div_ceil(budget.max(1)).clamp(2, 4096);
    (parts + parts % 2) as usize
}

/// How many threads read: one per core (the result is the same with any number).
pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
}

/// Reads `inputs` in order with `threads` threads within `budget` bytes. Reject files go to
/// `rejects_dir` under temporary names (listed in the result, published by the caller at
/// commit). A failure of one input's own is an [`InputFailed`] ([`failed_input`]).
pub fn ingest(
    inputs: &[PathBuf],
    threads: usize,
    budget: u64,
    (tmp_dir, rejects_dir): (&Path, &Path),
    rules: LineRules,
) -> std::io::Result<Ingested> {
    std::fs::create_dir_all(tmp_dir)?;
    let threads = threads.max(1);
    let sizes = read::sizes(inputs)?;
    // Pieces of the inputs, many per thread: a thread that falls behind takes fewer of them.
    let segments: Vec<read::Segment> = read::split(inputs, &sizes, threads * SEGMENTS_PER_THREAD)?
        .into_iter()
        .flatten()
        .collect();
    let total: u64 = segments.iter().map(|s| s.end - s.start).sum();
    let shared = Shared {
        inputs,
        segments,
        next: AtomicUsize::new(0),
        rules,
        budget: budget / threads as u64,
        parts: parts_for(total, budget),
        tmp_dir,
    };
    let mut workers = read_in_threads(&shared, threads)?;
    let mut stats = IngestStats {
        files: inputs.len() as u64,
        ..Default::default()
    };
    let found = gather(&mut workers, &mut stats, &shared)?;
    let rejects = assemble_rejects(
        &shared.segments,
        &found.seg_lines,
        &found.logs,
        inputs,
        rejects_dir,
    )?;
    let (parts, runs, spills) = runs_or_spills(&mut workers, &found.domain_maps, shared.parts)?;
    Ok(Ingested {
        parts,
        runs,
        spills,
        domain_maps: found.domain_maps,
        domains: found.domains,
        stats,
        rejects,
        sizes,
    })
}

/// Each thread reads and aggregates until no segment is left; the threads, done.
fn read_in_threads<'a>(shared: &'a Shared<'a>, threads: usize) -> std::io::Result<Vec<Worker<'a>>> {
    let mut mail = if threads > 1 {
        exchange::mailboxes(threads).into_iter().map(Some).collect()
    } else {
        vec![None]
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = mail
            .iter_mut()
            .enumerate()
            .map(|(t, mail)| {
                let mail = mail.take();
                scope.spawn(move || {
                    let mut w = Worker::new(shared, t, mail);
                    w.run().map(|()| w)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a reading thread panicked")))
            })
            .collect::<std::io::Result<Vec<_>>>()
    })
}

/// What the threads found, put together.
struct Gathered {
    /// The cycle's domains, and each thread's numbers for them.
    domains: Domains,
    domain_maps: Vec<Vec<u32>>,
    /// Lines read of each segment.
    seg_lines: Vec<u64>,
    /// The threads' reject logs.
    logs: Vec<PathBuf>,
}

/// The threads' findings put together; their figures added to `stats`.
fn gather(
    workers: &mut [Worker<'_>],
    stats: &mut IngestStats,
    shared: &Shared<'_>,
) -> std::io::Result<Gathered> {
    // The first thread's domains are numbered as it numbered them; the others' are added.
    let mut domains = Domains::numbered(
        workers
            .first_mut()
            .map(|w| std::mem::take(&mut w.domains.names))
            .unwrap_or_default(),
    );
    let mut domain_maps: Vec<Vec<u32>> = Vec::new();
    let mut seg_lines = vec![0u64; shared.segments.len()];
    let mut logs = Vec::new();
    for w in workers {
        stats.add(&w.stats);
        domain_maps.push(if domain_maps.is_empty() {
            (0..domains.names.len() as u32).collect()
        } else {
            w.domains.names.iter().map(|d| domains.intern(d)).collect()
        });
        for &(seg, lines) in &w.seg_lines {
            seg_lines[seg] = lines;
        }
        logs.extend(w.finish_rejects()?.into_iter().flatten());
    }
    Ok(Gathered {
        domains,
        domain_maps,
        seg_lines,
        logs,
    })
}

/// The threads' reject logs made into one reject file per input, each line with its number
/// in its input (a segment's first line is the sum of the lines of the segments before it).
fn assemble_rejects(
    segments: &[read::Segment],
    seg_lines: &[u64],
    logs: &[PathBuf],
    inputs: &[PathBuf],
    rejects_dir: &Path,
) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
    let seg_file: Vec<usize> = segments.iter().map(|s| s.file).collect();
    let mut seg_base = Vec::with_capacity(seg_file.len());
    let mut before = 0u64;
    for (i, &file) in seg_file.iter().enumerate() {
        if i > 0 && seg_file[i - 1] != file {
            before = 0;
        }
        seg_base.push(before);
        before += seg_lines[i];
    }
    let names: Vec<PathBuf> = inputs
        .iter()
        .map(|i| rejects::reject_path(rejects_dir, i))
        .collect();
    rejects::assemble(logs, &seg_file, &seg_base, &names)
}

/// The parts, the runs in memory and the spill files of each part: one part of runs when no
/// thread spilled, else every part in spill files.
#[allow(clippy::type_complexity)]
fn runs_or_spills(
    workers: &mut [Worker<'_>],
    domain_maps: &[Vec<u32>],
    parts: usize,
) -> std::io::Result<(usize, Vec<Run>, Vec<Vec<(usize, PathBuf)>>)> {
    if workers.iter().any(|w| !w.spills.is_empty()) {
        let mut spills = vec![Vec::new(); parts];
        for (t, w) in workers.iter_mut().enumerate() {
            for (p, path) in w.finish_spills()?.into_iter().enumerate() {
                spills[p].push((t, path));
            }
        }
        return Ok((parts, Vec::new(), spills));
    }
    // Each run's domains by the cycle's numbers (the first thread's are those already).
    let runs = workers
        .iter_mut()
        .zip(domain_maps)
        .filter_map(|(w, map)| {
            w.run.take().map(|mut r| {
                r.renumber_domains(map);
                r
            })
        })
        .collect();
    Ok((1, runs, Vec::new()))
}

#[cfg(test)]
mod tests;
