//! analyze_dump and group_sum (SPEC §5 steps 1–2): reflog files in, one aggregate per URL out,
//! bad lines to reject files.
//!
//! Lines are aggregated in memory while an estimate of the working set stays within
//! `Cycle.MemoryLimit`. If it would not, what is aggregated so far is written out and the id
//! space (URL ids are spread evenly over 64 bits) is cut into equal ranges, one spill file
//! each in `tmp_dir`; every further line goes to its range's file, and the ranges are then
//! aggregated one at a time, in id order, which is also current_log's order.

use std::collections::BTreeMap;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use focuser_schema::formats::reflog::{self, Reject};
use focuser_schema::fsutil;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::filter::Incoming;
use crate::scratch;

/// Lines longer than this are rejected without being held in memory.
pub const MAX_LINE: usize = 1 << 20;
/// How much of a rejected line its reject file keeps.
const REJECT_EXCERPT: usize = 1024;

/// Domains are few (hundreds of thousands at most) and repeat on every line: keep each once.
#[derive(Debug, Default)]
pub struct Domains {
    index: FxHashMap<String, u32>,
    pub names: Vec<String>,
}

impl Domains {
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }
}

/// A URL's aggregate in this cycle.
#[derive(Debug, Clone)]
pub struct Agg {
    pub url: String,
    pub domain: u32,
    pub incoming: Incoming,
    /// Timestamp of the line `incoming.tag` came from (`i64::MIN`: no tag yet).
    tag_ts: i64,
}

impl Agg {
    fn new(url: String, domain: u32) -> Agg {
        Agg {
            url,
            domain,
            incoming: Incoming {
                ts: i64::MIN,
                hits: 0,
                tag: String::new(),
            },
            tag_ts: i64::MIN,
        }
    }

    /// group_sum: hits add up, the latest timestamp wins, and the last non-empty updatetag in
    /// timestamp order (lines come in file and line order, so a tie goes to the later line).
    fn add(&mut self, ts: i64, hits: u64, tag: &str, tag_ts: i64) {
        self.incoming.hits = self.incoming.hits.saturating_add(hits);
        self.incoming.ts = self.incoming.ts.max(ts);
        if !tag.is_empty() && tag_ts >= self.tag_ts {
            self.tag_ts = tag_ts;
            if self.incoming.tag != tag {
                self.incoming.tag = tag.to_string();
            }
        }
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
}

/// The id range of part `p` of `parts`: `[start, end)`, the last one closed at `u64::MAX`.
pub fn part_of(id: u64, parts: usize) -> usize {
    ((u128::from(id) * parts as u128) >> 64) as usize
}

/// Aggregates held in memory: densely in `aggs`, found by URL id, and by the raw URL of a
/// line (a fast hash as key, a CRC-32C and the length as check: a hit is two memory
/// accesses, which is what reading a reflog costs per line).
#[derive(Default)]
struct InMemory {
    aggs: Vec<(u64, Agg)>,
    by_id: FxHashMap<u64, u32>,
    by_raw: FxHashMap<u64, (u64, u32)>,
}

impl InMemory {
    fn with_capacity(n: usize) -> Self {
        InMemory {
            aggs: Vec::with_capacity(n),
            by_id: FxHashMap::with_capacity_and_hasher(n, FxBuildHasher),
            by_raw: FxHashMap::with_capacity_and_hasher(n, FxBuildHasher),
        }
    }
}

/// The result of reading the inputs: per-part aggregates, in memory or spilled.
pub struct Ingested {
    pub parts: usize,
    memory: Option<InMemory>,
    spills: Vec<PathBuf>,
    pub stats: IngestStats,
    /// Reject files written (temporary names) and where each is to be published.
    pub rejects: Vec<(PathBuf, PathBuf)>,
}

/// A raw URL's key and check (two independent hashes, 96 bits in all; the 64-bit URL id
/// itself is far likelier to collide).
fn raw_hash(raw: &[u8]) -> (u64, u64) {
    let mut h = FxBuildHasher.build_hasher();
    h.write(raw);
    (
        h.finish(),
        (u64::from(crc32c::crc32c(raw)) << 32) | raw.len() as u64,
    )
}

/// How many parts an input of `bytes` needs within `budget` bytes of memory, if every line
/// were a URL of its own: an aggregate costs about three times its line.
pub fn parts_for(bytes: u64, budget: u64) -> usize {
    let need = bytes.saturating_mul(3);
    (need.div_ceil(budget.max(1))).clamp(2, 4096) as usize
}

/// The memory a new distinct URL is taken to cost: its raw and normalised text, plus the
/// cache entry, the map entry and their hash table slots.
fn entry_cost(raw: usize, url: usize) -> u64 {
    (raw + url + 200) as u64
}

/// Lines parsed by the reading thread, in order, with their bytes in one arena.
struct Batch {
    arena: Vec<u8>,
    items: Vec<Item>,
}

/// A parsed line, or one rejected while parsing: where its bytes are in the arena (and, for a
/// good line, where its URL and updatetag are within them).
enum Item {
    Line {
        line_no: u64,
        line: (usize, usize),
        url: (usize, usize),
        tag: (usize, usize),
        ts: i64,
        hits: u64,
        hash: (u64, u64),
    },
    Reject {
        line_no: u64,
        why: Reject,
        line: (usize, usize),
    },
}

enum Message {
    Batch(Batch),
    /// The end of input file `n`.
    EndOfFile,
    Failed(std::io::Error),
}

const BATCH_LINES: usize = 8192;

/// The reading thread: splits and parses every line of every input, in order.
fn produce(inputs: &[PathBuf], offset: i64, tx: &std::sync::mpsc::SyncSender<Message>) {
    for input in inputs {
        let mut lines = match File::open(input) {
            Ok(f) => Lines::new(f),
            Err(e) => {
                let _ = tx.send(Message::Failed(std::io::Error::new(
                    e.kind(),
                    format!("{}: {e}", input.display()),
                )));
                return;
            }
        };
        let mut batch = Batch {
            arena: Vec::with_capacity(BATCH_LINES * 128),
            items: Vec::with_capacity(BATCH_LINES),
        };
        let mut line_no = 0u64;
        loop {
            let line = match lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    let _ = tx.send(Message::Failed(e));
                    return;
                }
            };
            line_no += 1;
            if line_no == 1 {
                continue; // the header line
            }
            let start = batch.arena.len();
            match line {
                Line::TooLong => batch.items.push(Item::Reject {
                    line_no,
                    why: Reject::LineTooLong(MAX_LINE),
                    line: (start, start),
                }),
                Line::Text(text) => {
                    batch.arena.extend_from_slice(text);
                    let line = (start, batch.arena.len());
                    let base = text.as_ptr() as usize;
                    let range = |s: &str| {
                        let from = s.as_ptr() as usize - base + start;
                        (from, from + s.len())
                    };
                    batch.items.push(match reflog::parse_line(text, offset) {
                        Ok(p) => Item::Line {
                            line_no,
                            line,
                            url: range(p.url),
                            tag: range(p.updatetag),
                            ts: p.timestamp,
                            hits: p.hits,
                            hash: raw_hash(p.url.as_bytes()),
                        },
                        Err(why) => Item::Reject { line_no, why, line },
                    });
                }
            }
            if batch.items.len() == BATCH_LINES {
                let full = std::mem::replace(
                    &mut batch,
                    Batch {
                        arena: Vec::with_capacity(BATCH_LINES * 128),
                        items: Vec::with_capacity(BATCH_LINES),
                    },
                );
                if tx.send(Message::Batch(full)).is_err() {
                    return;
                }
            }
        }
        if tx.send(Message::Batch(batch)).is_err() || tx.send(Message::EndOfFile).is_err() {
            return;
        }
    }
}

/// Reads `inputs` in order within `budget` bytes. Reject files go to `rejects_dir` under
/// temporary names (listed in the result, published by the caller at commit).
///
/// A second thread reads and parses the lines while this one looks them up and aggregates:
/// reading is cheap per line but aggregating waits on memory, and the two overlap.
pub fn ingest(
    inputs: &[PathBuf],
    budget: u64,
    tmp_dir: &Path,
    rejects_dir: &Path,
    offset: i64,
    max_url: usize,
    domains: &mut Domains,
) -> std::io::Result<Ingested> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Message>(4);
    std::thread::scope(|scope| {
        scope.spawn(move || produce(inputs, offset, &tx));
        let mut consumer = Consumer::new(inputs, budget, tmp_dir, max_url, domains);
        let mut file = 0;
        let mut rejects: Option<RejectFile> = None;
        for message in rx {
            match message {
                Message::Failed(e) => return Err(e),
                Message::EndOfFile => {
                    let final_reject =
                        rejects_dir.join(format!("{}.rej", file_name(&inputs[file])));
                    if let Some(tmp) = rejects
                        .take()
                        .map(RejectFile::finish)
                        .transpose()?
                        .flatten()
                    {
                        consumer.ingested.rejects.push((tmp, final_reject));
                    }
                    consumer.ingested.stats.files += 1;
                    file += 1;
                }
                Message::Batch(batch) => {
                    let rejects = rejects.get_or_insert_with(|| {
                        RejectFile::new(fsutil::temp_path(
                            &rejects_dir.join(format!("{}.rej", file_name(&inputs[file]))),
                        ))
                    });
                    consumer.batch(&batch, rejects)?;
                }
            }
        }
        consumer.finish()
    })
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The aggregating side of [`ingest`].
struct Consumer<'a> {
    ingested: Ingested,
    spill_writers: Vec<BufWriter<File>>,
    used: u64,
    budget: u64,
    total_bytes: u64,
    tmp_dir: &'a Path,
    max_url: usize,
    domains: &'a mut Domains,
}

impl<'a> Consumer<'a> {
    fn new(
        inputs: &[PathBuf],
        budget: u64,
        tmp_dir: &'a Path,
        max_url: usize,
        domains: &'a mut Domains,
    ) -> Self {
        let total_bytes: u64 = inputs
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        // Room for a URL every few lines (within the budget), so the tables rarely grow.
        let expected = (total_bytes / 300).min(budget / 400) as usize;
        Consumer {
            ingested: Ingested {
                parts: 1,
                memory: Some(InMemory::with_capacity(expected)),
                spills: Vec::new(),
                stats: IngestStats::default(),
                rejects: Vec::new(),
            },
            spill_writers: Vec::new(),
            used: 0,
            budget,
            total_bytes,
            tmp_dir,
            max_url,
            domains,
        }
    }

    fn reject(
        &mut self,
        rejects: &mut RejectFile,
        line_no: u64,
        why: Reject,
        line: &[u8],
    ) -> std::io::Result<()> {
        *self.ingested.stats.rejected.entry(why.kind()).or_insert(0) += 1;
        rejects.add(line_no, &why.to_string(), line)
    }

    fn batch(&mut self, batch: &Batch, rejects: &mut RejectFile) -> std::io::Result<()> {
        // Look every line up first, then aggregate: the lookups of a batch are independent,
        // so their cache misses overlap instead of queueing one behind the other.
        let known: Vec<Option<u32>> = match &self.ingested.memory {
            Some(memory) => batch
                .items
                .iter()
                .map(|item| match item {
                    Item::Line { hash: (h, c), .. } => match memory.by_raw.get(h) {
                        Some(&(check, i)) if check == *c => Some(i),
                        _ => None,
                    },
                    Item::Reject { .. } => None,
                })
                .collect(),
            None => Vec::new(),
        };
        for (k, item) in batch.items.iter().enumerate() {
            self.ingested.stats.lines += 1;
            let (line_no, line, url, tag, ts, hits, hash) = match *item {
                Item::Reject { line_no, why, line } => {
                    self.reject(rejects, line_no, why, &batch.arena[line.0..line.1])?;
                    continue;
                }
                Item::Line {
                    line_no,
                    line,
                    url,
                    tag,
                    ts,
                    hits,
                    hash,
                } => (line_no, line, url, tag, ts, hits, hash),
            };
            // The reading thread checked both are UTF-8.
            let (Ok(url), Ok(tag)) = (
                std::str::from_utf8(&batch.arena[url.0..url.1]),
                std::str::from_utf8(&batch.arena[tag.0..tag.1]),
            ) else {
                self.reject(rejects, line_no, Reject::Utf8, &batch.arena[line.0..line.1])?;
                continue;
            };
            if let (Some(Some(i)), Some(memory)) = (known.get(k), self.ingested.memory.as_mut()) {
                memory.aggs[*i as usize].1.add(ts, hits, tag, ts);
                continue;
            }
            if let Err(why) = self.add(url, hash, ts, hits, tag)? {
                self.reject(rejects, line_no, why, &batch.arena[line.0..line.1])?;
            }
        }
        Ok(())
    }

    /// One good line into memory or its partition; `Ok(Err(why))` if its URL is rejected.
    fn add(
        &mut self,
        raw: &str,
        (hash, check): (u64, u64),
        ts: i64,
        hits: u64,
        tag: &str,
    ) -> std::io::Result<Result<(), Reject>> {
        let Some(memory) = self.ingested.memory.as_mut() else {
            let n = match reflog::normalize_url(raw, self.max_url) {
                Ok(n) => n,
                Err(why) => return Ok(Err(why)),
            };
            let domain = self.domains.intern(&n.domain);
            let w = &mut self.spill_writers[part_of(n.id, self.ingested.parts)];
            write_spill(
                w,
                n.id,
                &Incoming {
                    ts,
                    hits,
                    tag: tag.to_string(),
                },
                ts,
                domain,
                &n.url,
            )?;
            return Ok(Ok(()));
        };
        let i = match memory.by_raw.get(&hash) {
            Some(&(c, i)) if c == check => i as usize,
            // Not seen (or a hash shared with another raw URL): normalise.
            _ => match reflog::normalize_url(raw, self.max_url) {
                Err(why) => return Ok(Err(why)),
                Ok(n) => {
                    let next = memory.aggs.len() as u32;
                    let i = *memory.by_id.entry(n.id).or_insert(next);
                    if i == next {
                        self.used += entry_cost(raw.len(), n.url.len());
                        memory
                            .aggs
                            .push((n.id, Agg::new(n.url, self.domains.intern(&n.domain))));
                    }
                    memory.by_raw.entry(hash).or_insert((check, i));
                    i as usize
                }
            },
        };
        memory.aggs[i].1.add(ts, hits, tag, ts);
        if self.used > self.budget {
            self.partition()?;
        }
        Ok(Ok(()))
    }

    /// Over budget: what is aggregated goes to disk, and so does every further line.
    fn partition(&mut self) -> std::io::Result<()> {
        let Some(memory) = self.ingested.memory.take() else {
            return Ok(());
        };
        let parts = parts_for(self.total_bytes, self.budget);
        log::info!(
            "input larger than Cycle.MemoryLimit: partitioning it into {parts} parts in {}",
            self.tmp_dir.display()
        );
        std::fs::create_dir_all(self.tmp_dir)?;
        for p in 0..parts {
            let path = self.tmp_dir.join(format!("part-{p:04}.spill"));
            self.spill_writers
                .push(BufWriter::with_capacity(256 << 10, File::create(&path)?));
            self.ingested.spills.push(path);
        }
        for (id, a) in memory.aggs {
            write_spill(
                &mut self.spill_writers[part_of(id, parts)],
                id,
                &a.incoming,
                a.tag_ts,
                a.domain,
                &a.url,
            )?;
        }
        self.ingested.parts = parts;
        Ok(())
    }

    fn finish(mut self) -> std::io::Result<Ingested> {
        for w in &mut self.spill_writers {
            w.flush()?;
        }
        Ok(self.ingested)
    }
}

impl Ingested {
    /// The aggregates of part `p`, sorted by id.
    pub fn part(&mut self, p: usize) -> std::io::Result<Vec<(u64, Agg)>> {
        let mut sorted = match self.memory.take() {
            Some(memory) => memory.aggs,
            None => {
                let mut map: FxHashMap<u64, Agg> = FxHashMap::default();
                let path = &self.spills[p];
                let mut r = BufReader::with_capacity(256 << 10, File::open(path)?);
                while let Some(([id, ts, hits, tag_ts, domain], [tag, url])) =
                    scratch::read(&mut r)?
                {
                    map.entry(id)
                        .or_insert_with(|| Agg::new(url, domain as u32))
                        .add(ts as i64, hits, &tag, tag_ts as i64);
                }
                std::fs::remove_file(path)?;
                map.into_iter().collect()
            }
        };
        sorted.sort_unstable_by_key(|(id, _)| *id);
        Ok(sorted)
    }
}

/// One spilled line or aggregate: id, latest time, hits, the time its tag is from, domain;
/// the tag and the URL.
fn write_spill(
    w: &mut impl Write,
    id: u64,
    i: &Incoming,
    tag_ts: i64,
    domain: u32,
    url: &str,
) -> std::io::Result<()> {
    scratch::write(
        w,
        [id, i.ts as u64, i.hits, tag_ts as u64, u64::from(domain)],
        &[i.tag.as_bytes(), url.as_bytes()],
    )
}

/// A line as read: whole, or too long to keep.
enum Line<'a> {
    Text(&'a [u8]),
    TooLong,
}

/// Reads `\n`-terminated lines, holding at most [`MAX_LINE`] bytes of one.
struct Lines<R: Read> {
    input: BufReader<R>,
    buf: Vec<u8>,
    overlong: usize,
}

impl<R: Read> Lines<R> {
    fn new(input: R) -> Self {
        Lines {
            input: BufReader::with_capacity(1 << 20, input),
            buf: Vec::with_capacity(4096),
            overlong: 0,
        }
    }

    fn next_line(&mut self) -> std::io::Result<Option<Line<'_>>> {
        self.buf.clear();
        self.overlong = 0;
        let mut read_any = false;
        loop {
            let chunk = self.input.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            read_any = true;
            let (take, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if self.overlong > 0 || self.buf.len() + take > MAX_LINE {
                self.overlong += self.buf.len() + take;
                self.buf.clear();
            } else {
                self.buf.extend_from_slice(&chunk[..take]);
            }
            self.input.consume(take + usize::from(done));
            if done {
                break;
            }
        }
        if !read_any {
            return Ok(None);
        }
        Ok(Some(if self.overlong > 0 {
            Line::TooLong
        } else {
            Line::Text(&self.buf)
        }))
    }
}

/// `<line> \t <reason> \t <the line, cut at 1 KiB>` for each rejected line of one input.
struct RejectFile {
    path: PathBuf,
    out: Option<BufWriter<File>>,
}

impl RejectFile {
    fn new(path: PathBuf) -> Self {
        RejectFile { path, out: None }
    }

    fn add(&mut self, line_no: u64, reason: &str, line: &[u8]) -> std::io::Result<()> {
        if self.out.is_none() {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            self.out = Some(BufWriter::new(File::create(&self.path)?));
        }
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        let cut = &line[..line.len().min(REJECT_EXCERPT)];
        let excerpt = String::from_utf8_lossy(cut).replace(['\n', '\r'], " ");
        let more = if line.len() > REJECT_EXCERPT {
            format!(" [... {} bytes]", line.len())
        } else {
            String::new()
        };
        writeln!(out, "{line_no}\t{reason}\t{excerpt}{more}")
    }

    /// Flushes and fsyncs; the temporary path if anything was rejected.
    fn finish(self) -> std::io::Result<Option<PathBuf>> {
        let Some(out) = self.out else { return Ok(None) };
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(Some(self.path))
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
        assert_eq!(parts_for(1000, 1000), 3);
    }

    #[test]
    fn the_last_non_empty_tag_in_timestamp_order_wins() {
        let mut a = Agg::new("u".into(), 0);
        a.add(10, 1, "x", 10);
        a.add(30, 1, "", 30);
        a.add(20, 1, "y", 20);
        a.add(5, 1, "old", 5);
        assert_eq!(
            (a.incoming.ts, a.incoming.hits, a.incoming.tag.as_str()),
            (30, 4, "y")
        );
        a.add(20, 1, "z", 20); // same second as y, later line
        assert_eq!(a.incoming.tag, "z");
    }
}
