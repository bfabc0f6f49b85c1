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
mod line;
mod memory;
mod read;
mod rejects;
mod run;
mod scan;
mod table;
mod worker;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

use focuser_formats::reflog::HostPolicy;
use nix::errno::Errno;
use rustc_hash::FxHashMap;

pub use rejects::reject_path;
use run::RunBuilder;
pub use run::{AggView, Merged, Run};
pub(crate) use table::prefetch;
use worker::{Shared, Worker};

use crate::scratch;

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

/// The result of reading the inputs: the threads' runs in memory, or spilled by part.
pub struct Ingested {
    pub parts: usize,
    runs: Vec<Run>,
    /// Per part: the spill file of each thread that wrote one, with the thread's number.
    spills: Vec<Vec<(usize, PathBuf)>>,
    /// Each thread's domain numbers, as the cycle's.
    domain_maps: Vec<Vec<u32>>,
    /// Every domain of the input.
    pub domains: Domains,
    pub stats: IngestStats,
    /// Reject files written (temporary names) and where each is to be published.
    pub rejects: Vec<(PathBuf, PathBuf)>,
    /// The bytes read of each input (its size when the cycle looked).
    pub sizes: Vec<u64>,
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
    let mut mail = if threads > 1 {
        exchange::mailboxes(threads).into_iter().map(Some).collect()
    } else {
        vec![None]
    };
    let mut workers: Vec<Worker<'_>> = std::thread::scope(|scope| {
        let handles: Vec<_> = mail
            .iter_mut()
            .enumerate()
            .map(|(t, mail)| {
                let shared = &shared;
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
    })?;

    let mut stats = IngestStats {
        files: inputs.len() as u64,
        ..Default::default()
    };
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
    for w in &mut workers {
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
    // Each segment's first line number in its input.
    let seg_file: Vec<usize> = shared.segments.iter().map(|s| s.file).collect();
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
    let rejects = rejects::assemble(&logs, &seg_file, &seg_base, &names)?;

    let spilled = workers.iter().any(|w| !w.spills.is_empty());
    let (parts, runs, spills) = if spilled {
        let mut spills = vec![Vec::new(); shared.parts];
        for (t, w) in workers.iter_mut().enumerate() {
            for (p, path) in w.finish_spills()?.into_iter().enumerate() {
                spills[p].push((t, path));
            }
        }
        (shared.parts, Vec::new(), spills)
    } else {
        // Each run's domains by the cycle's numbers (the first thread's are those already).
        let runs = workers
            .iter_mut()
            .zip(&domain_maps)
            .filter_map(|(w, map)| {
                w.run.take().map(|mut r| {
                    r.renumber_domains(map);
                    r
                })
            })
            .collect();
        (1, runs, Vec::new())
    };
    Ok(Ingested {
        parts,
        runs,
        spills,
        domain_maps,
        domains,
        stats,
        rejects,
        sizes,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_id_space_in_order() {
        assert_eq!(part_of(0, 4), 0);
        assert_eq!(part_of(u64::MAX, 4), 3);
        assert_eq!(part_of(1 << 62, 4), 1);
        assert_eq!(part_of(u64::MAX, 1), 0);
        assert_eq!(parts_for(100, 1000), 2);
        assert_eq!(parts_for(1000, 1000), 6);
        assert_eq!(parts_for(1500, 1000), 10);
        // Even parts: the lower half of the id space is the first half of the parts.
        assert_eq!(part_of((1 << 63) - 1, 10), 4);
        assert_eq!(part_of(1 << 63, 10), 5);
    }

    /// Every aggregate: id, latest time, hits, tag, URL, domain.
    type Seen = Vec<(u64, i64, u64, String, String, String)>;

    fn ingest_with(
        dir: &Path,
        inputs: &[PathBuf],
        threads: usize,
        budget: u64,
    ) -> (Seen, IngestStats, Vec<String>, usize) {
        let tmp = dir.join(format!("tmp-{threads}-{budget}"));
        let rej = dir.join(format!("rej-{threads}-{budget}"));
        let rules = LineRules {
            offset: 0,
            max_url: 2048,
            hosts: HostPolicy::default(),
        };
        let ing = ingest(inputs, threads, budget, (&tmp, &rej), rules).unwrap();
        let mut seen = Vec::new();
        for p in 0..ing.parts {
            let part = ing.part(p, &ing.domains).unwrap();
            let mut m = Merged::new(part.runs(), 0..=u64::MAX);
            while let Some(a) = m.next_agg() {
                let domain = ing.domains.names[a.domain as usize].clone();
                // Ids are computed a batch at a time: each must still be its own URL's.
                assert_eq!(a.id, focuser_formats::urls::url_id(a.url), "{}", a.url);
                seen.push((
                    a.id,
                    a.ts,
                    a.hits,
                    a.tag.to_string(),
                    a.url.to_string(),
                    domain,
                ));
            }
        }
        let rejects = ing
            .rejects
            .iter()
            .map(|(tmp, _)| std::fs::read_to_string(tmp).unwrap())
            .collect();
        (seen, ing.stats, rejects, ing.parts)
    }

    /// A reflog line at second `ts` of 2023-11-14 22:13.
    fn line(ts: u32, url: &str, hits: u64, tag: &str) -> String {
        format!("b\t5\t202311142213{ts:02}\t1\t{url}\t{hits}\t{tag}\n")
    }

    #[test]
    fn the_last_non_empty_tag_in_timestamp_order_wins_however_the_input_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = String::from("header\n");
        let mut b = String::from("header\n");
        for round in 0..300u32 {
            let filler = format!("http://f{}.ru/{round}", round % 7);
            a.push_str(&line(round % 60, &filler, 1, ""));
            a.push_str("bad line\n");
            b.push_str(&line(
                round % 60,
                &filler,
                2,
                if round % 5 == 0 { "f" } else { "" },
            ));
        }
        for (ts, url, tag) in [
            (10, "http://a.ru/u", "x"),
            (30, "http://a.ru/u", ""),
            (20, "http://A.RU/u", "y"),
            (5, "http://a.ru/u#frag", "old"),
        ] {
            a.push_str(&line(ts, url, 1, tag));
        }
        // The same second as y, in a later line (of a later file): it wins.
        b.push_str(&line(20, "http://a.ru:80/u", 1, "z"));
        b.push_str(&line(59, "ftp://a.ru/", 1, ""));
        let inputs = [("a.log", a), ("b.log", b)].map(|(name, text)| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        });
        let (seen, stats, rejects, parts) = ingest_with(dir.path(), &inputs, 1, 1 << 30);
        assert_eq!(parts, 1);
        assert_eq!(
            (stats.files, stats.lines, stats.rejected_total()),
            (2, 906, 301)
        );
        let u = seen.iter().find(|s| s.4 == "http://a.ru/u").unwrap();
        let t30 = focuser_formats::stamp::parse(b"20231114221330", 0).unwrap();
        assert_eq!(
            (u.1, u.2, u.3.as_str(), u.5.as_str()),
            (t30, 5, "z", "a.ru")
        );
        assert_eq!(rejects.len(), 2);
        assert!(
            rejects[0].starts_with("3\texpected 7 tab-separated fields, found 1\tbad line\n5\t")
        );
        assert_eq!(
            rejects[1],
            "303\tnot an http or https URL\tb\t5\t20231114221359\t1\tftp://a.ru/\t1\t\n"
        );
        for threads in [2, 3, 5, 16] {
            for budget in [1 << 30, 1 << 16] {
                let (s, st, r, parts) = ingest_with(dir.path(), &inputs, threads, budget);
                assert_eq!(
                    parts > 1,
                    budget < 1 << 20,
                    "{threads} threads, {budget} bytes"
                );
                assert_eq!(
                    (&s, &st, &r),
                    (&seen, &stats, &rejects),
                    "{threads} threads, {budget} bytes"
                );
            }
        }
    }

    /// A URL that does not normalise is rejected, line by line, by the thread that keeps it,
    /// which may not be the one that read the line: the reject files do not depend on that.
    #[test]
    fn rejected_urls_are_reported_alike_whichever_thread_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let bad = [
            "ftp://a.ru/",
            "http://",
            "http://a b.ru/",
            "mailto:x@a.ru",
            "http://[::1",
            "gopher://g.ru/",
        ];
        let mut inputs = Vec::new();
        for f in 0..3 {
            let mut text = String::from("header\n");
            for i in 0..2000u32 {
                let url = if i % 13 == 0 {
                    format!("{}{}", bad[(i as usize / 13) % bad.len()], i % 50)
                } else {
                    format!("http://d{}.ru/p/{}", i % 11, i % 700)
                };
                text.push_str(&line(i % 60, &url, u64::from(i % 4), ""));
                if i % 97 == 0 {
                    // Long enough to stand out in a reject file, with a non-ASCII byte.
                    text.push_str(&line(
                        1,
                        &format!("ftp://é{}.ru/{}", i, "x".repeat(1500)),
                        1,
                        "",
                    ));
                }
            }
            let p = dir.path().join(format!("{f}.log"));
            std::fs::write(&p, text).unwrap();
            inputs.push(p);
        }
        let (seen, stats, rejects, _) = ingest_with(dir.path(), &inputs, 1, 1 << 30);
        assert_eq!(rejects.len(), 3);
        let rejected: usize = rejects.iter().map(|r| r.lines().count()).sum();
        assert_eq!(rejected as u64, stats.rejected_total());
        // Most of them (`http://` and a number is an IPv4 host: refused as internal).
        assert!(rejected > 400, "{rejected}");
        assert!(rejects[0].contains("[... "), "{}", &rejects[0][..200]);
        for threads in [2, 3, 4, 7] {
            for budget in [1 << 30, 1 << 16] {
                let (s, st, r, _) = ingest_with(dir.path(), &inputs, threads, budget);
                assert_eq!(
                    (&s, &st, &r),
                    (&seen, &stats, &rejects),
                    "{threads} threads, {budget} bytes"
                );
            }
        }
    }
}
