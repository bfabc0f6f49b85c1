//! One reading thread: its range of the inputs read and parsed, the lines of the URLs it keeps
//! (its own and those other threads post) aggregated in memory while they fit in its share of
//! `Cycle.MemoryLimit`, else spilled by id range.

mod spill;

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use focuser_formats::reflog::{self, Reject};
use focuser_formats::urls::{self, NormalForm};

use super::exchange::{self, Mailbox, Posted};
use super::line::Parser;
use super::memory::Memory;
use super::read::{Piece, Segment, SegmentReader};
use super::rejects::{self, RejectLog};
use super::run::Run;
use super::scan;
use super::table::{raw_hash, DomainTable};
use super::{input_failed, IngestStats, LineRules, MAX_LINE};

/// A new URL normalised (its id computed with the batch's), with its domain's key; or why it
/// is rejected.
type Normalised<'t> = Result<(NormalForm<'t>, (u64, u32)), Reject>;

/// What every thread shares.
pub struct Shared<'a> {
    pub inputs: &'a [PathBuf],
    /// The inputs cut into pieces of whole lines, in order; each thread takes the next one
    /// not taken yet (`next`), so a thread slowed down reads fewer of them.
    pub segments: Vec<Segment>,
    pub next: AtomicUsize,
    pub rules: LineRules,
    /// This thread's share of the memory budget.
    pub budget: u64,
    /// The parts a spill is cut into.
    pub parts: usize,
    pub tmp_dir: &'a Path,
}

/// Lines looked up together, so that their cache misses overlap.
const BATCH: usize = 32;

/// A line of a batch: good (what it says, its place and its URL's key), or rejected.
enum Item<'a> {
    Good {
        /// The thread that read it, its segment and its number there.
        src: u32,
        seg: u32,
        line_no: u64,
        seq: u64,
        /// The line itself, for its reject (empty for a line posted by another thread).
        line: &'a [u8],
        url: &'a str,
        tag: &'a str,
        ts: i64,
        hits: u64,
        key: (u64, u32),
    },
    Reject {
        line_no: u64,
        why: Reject,
        line: &'a [u8],
    },
    /// Added already.
    Done,
}

pub struct Worker<'a> {
    shared: &'a Shared<'a>,
    parser: Parser,
    pub memory: Option<Memory>,
    /// Once spilling: the run made of what was in memory, written out at the end.
    pub run: Option<Run>,
    pub domains: DomainTable,
    pub spills: Vec<(PathBuf, BufWriter<File>)>,
    pub stats: IngestStats,
    /// Rejects of lines read by each thread (this one's own among them).
    rejects: Vec<RejectLog>,
    /// The inputs, opened to find a posted line that is rejected.
    opened: Vec<Option<File>>,
    /// Lines read of each segment this thread read (header included): (segment, lines).
    pub seg_lines: Vec<(usize, u64)>,
    /// The input and segment being read.
    file: usize,
    seg: usize,
    name: usize,
    /// Lines to and from the other threads (none when alone).
    mail: Option<Mailbox>,
    /// When the thread began (before its tables were made), for its debug line.
    born: std::time::Instant,
}

impl<'a> Worker<'a> {
    pub fn new(shared: &'a Shared<'a>, name: usize, mail: Option<Mailbox>) -> Self {
        let born = std::time::Instant::now();
        let threads = mail.as_ref().map_or(1, Mailbox::threads) as u64;
        let bytes: u64 = shared.segments.iter().map(|s| s.end - s.start).sum::<u64>() / threads;
        // Room for a new URL every six lines or so of as many bytes as this thread reads (it
        // keeps its share of the URLs of all the inputs), within the budget; the table grows
        // if there are more.
        let urls = (bytes / 600).min(shared.budget / 256) as usize;
        Worker {
            shared,
            parser: Parser::new(shared.rules.offset),
            memory: Some(Memory::new(urls)),
            run: None,
            domains: DomainTable::default(),
            spills: Vec::new(),
            stats: IngestStats::default(),
            rejects: (0..mail.as_ref().map_or(1, Mailbox::threads).max(name + 1))
                .map(|src| {
                    RejectLog::new(
                        shared
                            .tmp_dir
                            .join(format!("rejects-{name}-of-{src}.spill")),
                    )
                })
                .collect(),
            opened: shared.inputs.iter().map(|_| None).collect(),
            seg_lines: Vec::new(),
            file: 0,
            seg: 0,
            name,
            mail,
            born,
        }
    }

    /// Reads segments until none is left; sorts what is in memory at the end.
    pub fn run(&mut self) -> std::io::Result<()> {
        let started = self.born;
        let made = started.elapsed().as_secs_f64();
        loop {
            let i = self.shared.next.fetch_add(1, Ordering::Relaxed);
            let Some(&seg) = self.shared.segments.get(i) else {
                break;
            };
            self.seg = i;
            self.file = seg.file;
            let path = &self.shared.inputs[seg.file];
            let failed = |e| input_failed(seg.file, path, e);
            let mut reader = SegmentReader::open(path, seg).map_err(failed)?;
            let mut line_no = 0u64;
            while let Some(piece) = reader.next_piece().map_err(failed)? {
                match piece {
                    Piece::TooLong { at } => {
                        line_no += 1;
                        if !(line_no == 1 && at == 0) {
                            self.stats.lines += 1;
                            self.reject(line_no, Reject::LineTooLong(MAX_LINE), &[])?;
                        }
                    }
                    Piece::Lines { text, at } => self.lines(text, at, &mut line_no)?,
                }
            }
            self.seg_lines.push((i, line_no));
        }
        // What is left for the others, then everything they post until they are done.
        while self.mail.as_mut().is_some_and(|m| m.flush().is_err()) {
            self.take_in(false)?;
        }
        if let Some(m) = self.mail.as_mut() {
            m.close();
        }
        let read = started.elapsed().as_secs_f64();
        while self.take_in(true)? {}
        let taken = started.elapsed().as_secs_f64();
        if let Some(m) = self.memory.take() {
            self.run = Some(m.into_run());
        }
        log::debug!(
            "reading thread {}: made its tables in {made:.3} s, read its segments by \
             {read:.3} s, took the others' lines by {taken:.3} s, sorted its aggregates by \
             {:.3} s",
            self.name,
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// Aggregates the lines of a chunk from the inbox, if there is one (`wait`: waits for one
    /// while another thread may still post). Returns whether there was.
    fn take_in(&mut self, wait: bool) -> std::io::Result<bool> {
        let Some(chunk) = self.mail.as_mut().and_then(|m| m.take(wait)) else {
            return Ok(false);
        };
        let mut batch: Vec<Item<'_>> = Vec::with_capacity(BATCH);
        for p in chunk.records() {
            batch.push(Item::Good {
                src: p.src,
                seg: p.seg,
                line_no: p.line_no,
                seq: p.seq,
                line: &[],
                url: p.url,
                tag: p.tag,
                ts: p.ts,
                hits: p.hits,
                key: p.key,
            });
            if batch.len() == BATCH {
                self.flush(&mut batch)?;
            }
        }
        self.flush(&mut batch)?;
        if let Some(m) = self.mail.as_mut() {
            m.give_back(chunk);
        }
        Ok(true)
    }

    /// Posts a good line to the thread that keeps its URL, taking in this thread's inbox
    /// while that thread's is full.
    fn post(&mut self, to: usize, p: &Posted<'_>) -> std::io::Result<()> {
        while self.mail.as_mut().is_some_and(|m| m.post(to, p).is_err()) {
            if !self.take_in(false)? {
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    fn lines(&mut self, text: &[u8], at: u64, line_no: &mut u64) -> std::io::Result<()> {
        let mut batch: Vec<Item<'_>> = Vec::with_capacity(BATCH);
        // Only the file's last piece may end without a `\n`: its last line is torn.
        let torn_at = (!text.ends_with(b"\n")).then_some(text.len());
        scan::lines(text, |s| -> std::io::Result<()> {
            let line = s.bytes;
            let offset = at + s.at.start as u64;
            *line_no += 1;
            if offset == 0 {
                return Ok(()); // the header line
            }
            self.stats.lines += 1;
            let line_no = *line_no;
            let item = if line.len() > MAX_LINE {
                Item::Reject {
                    line_no,
                    why: Reject::LineTooLong(MAX_LINE),
                    line: &[],
                }
            } else if torn_at == Some(s.at.end) {
                Item::Reject {
                    line_no,
                    why: Reject::Torn,
                    line,
                }
            } else {
                match self.parser.parse_scanned(s) {
                    Ok(p) => {
                        let key = raw_hash(p.url.as_bytes());
                        // The line's place in the inputs, for updatetag ties.
                        let seq = ((self.file as u64) << 40) | offset;
                        let to = self.owner(key.0);
                        if to != self.name {
                            return self.post(
                                to,
                                &Posted {
                                    key,
                                    seq,
                                    src: self.name as u32,
                                    seg: self.seg as u32,
                                    line_no,
                                    ts: p.timestamp,
                                    hits: p.hits,
                                    url: p.url,
                                    tag: p.updatetag,
                                },
                            );
                        }
                        Item::Good {
                            src: self.name as u32,
                            seg: self.seg as u32,
                            line_no,
                            seq,
                            line,
                            url: p.url,
                            tag: p.updatetag,
                            ts: p.timestamp,
                            hits: p.hits,
                            key,
                        }
                    }
                    Err(why) => Item::Reject { line_no, why, line },
                }
            };
            batch.push(item);
            if batch.len() == BATCH {
                self.flush(&mut batch)?;
                self.take_in(false)?;
            }
            Ok(())
        })?;
        self.flush(&mut batch)
    }

    /// The thread that keeps the URLs of raw key `key`.
    fn owner(&self, key: u64) -> usize {
        match &self.mail {
            Some(m) => exchange::owner(key, m.threads()),
            None => self.name,
        }
    }

    fn reject(&mut self, line_no: u64, why: Reject, line: &[u8]) -> std::io::Result<()> {
        *self.stats.rejected.entry(why.kind()).or_insert(0) += 1;
        self.rejects[self.name].add(self.seg, line_no, &why, line)
    }

    /// A line thread `src` posted (line `line_no` of segment `seg`), whose URL is rejected:
    /// the line is read again from its input (rare: a URL that does not normalise).
    fn reject_posted(
        &mut self,
        (src, seg, line_no): (u32, u32, u64),
        seq: u64,
        why: Reject,
    ) -> std::io::Result<()> {
        *self.stats.rejected.entry(why.kind()).or_insert(0) += 1;
        let (file, offset) = ((seq >> 40) as usize, seq & ((1 << 40) - 1));
        let path = &self.shared.inputs[file];
        let failed = |e| input_failed(file, path, e);
        let input = match &mut self.opened[file] {
            Some(f) => f,
            slot => slot.insert(File::open(path).map_err(failed)?),
        };
        let line = rejects::line_at(input, offset).map_err(failed)?;
        match self.rejects.get_mut(src as usize) {
            Some(log) => log.add(seg as usize, line_no, &why, &line),
            None => Err(std::io::Error::other("a line posted by an unknown thread")),
        }
    }

    /// Adds the lines of URLs in memory (marking them done) and normalises the others, their
    /// slots and their domains' asked for first.
    #[inline]
    fn look_up<'t>(&mut self, batch: &mut [Item<'t>]) -> [Option<Normalised<'t>>; BATCH] {
        if let Some(m) = &self.memory {
            for item in batch.iter() {
                if let Item::Good { key, .. } = item {
                    m.touch(key.0);
                }
            }
        }
        let mut normal: [Option<Normalised<'t>>; BATCH] = std::array::from_fn(|_| None);
        for (item, n) in batch.iter_mut().zip(normal.iter_mut()) {
            let Item::Good {
                url,
                tag,
                ts,
                hits,
                seq,
                key: (key, check),
                ..
            } = *item
            else {
                continue;
            };
            if let Some(m) = self.memory.as_mut() {
                if let Ok(slot) = m.find(key, check) {
                    m.add(slot, ts, hits, tag, seq);
                    *item = Item::Done;
                    continue;
                }
            }
            let rules = self.shared.rules;
            *n = Some(
                reflog::normal_form(url, rules.max_url)
                    .and_then(|n| reflog::check_host(&n.url, rules.hosts).map(|()| n))
                    .map(|n| {
                        let key = raw_hash(n.domain.as_bytes());
                        self.domains.touch(key.0);
                        (n, key)
                    }),
            );
        }
        normal
    }

    fn flush<'t>(&mut self, batch: &mut Vec<Item<'t>>) -> std::io::Result<()> {
        // Every slot of the batch is asked for at once, so that the cache misses overlap.
        // Then a line of a known URL is added, and a new URL is normalised (its domain's slot
        // asked for likewise); the new URLs' ids are computed side by side, and they are
        // added last, in line order.
        let normal = self.look_up(batch);
        // Ids are computed here only for lines that go to spill files; those kept in memory
        // get theirs at the end, side by side in full groups.
        let spilling = self.memory.is_none();
        let ids = if spilling {
            spill_ids(&normal)
        } else {
            [0u64; BATCH]
        };
        for ((item, n), id) in batch.drain(..).zip(normal).zip(ids) {
            match item {
                Item::Done => {}
                Item::Reject { line_no, why, line } => self.reject(line_no, why, line)?,
                Item::Good {
                    src,
                    seg,
                    line_no,
                    seq,
                    line,
                    tag,
                    ts,
                    hits,
                    key: (key, check),
                    ..
                } => {
                    let (n, domain_key) = match n {
                        Some(Ok(n)) => n,
                        Some(Err(why)) if src as usize == self.name => {
                            self.reject(line_no, why, line)?;
                            continue;
                        }
                        Some(Err(why)) => {
                            self.reject_posted((src, seg, line_no), seq, why)?;
                            continue;
                        }
                        None => continue,
                    };
                    let found = self.memory.as_ref().map(|m| m.find(key, check));
                    if let (Some(Ok(slot)), Some(m)) = (found, self.memory.as_mut()) {
                        // Its URL came earlier in the batch.
                        m.add(slot, ts, hits, tag, seq);
                        continue;
                    }
                    let domain = self.domains.intern(domain_key, &n.domain);
                    let (Some(Err(at)), Some(m)) = (found, self.memory.as_mut()) else {
                        // Partitioned before this batch, or earlier in it (no id yet).
                        let id = if spilling { id } else { urls::url_id(&n.url) };
                        self.spill_line(id, ts, hits, tag, seq, domain, &n.url)?;
                        continue;
                    };
                    let inserted =
                        m.insert(at, (key, check), &n.url, &n.domain, n.domain_at, domain);
                    let Some(slot) = inserted else {
                        // No room for its aggregate: as over budget.
                        self.partition()?;
                        let id = urls::url_id(&n.url);
                        self.spill_line(id, ts, hits, tag, seq, domain, &n.url)?;
                        continue;
                    };
                    m.add(slot, ts, hits, tag, seq);
                    if m.used() + self.domains.bytes > self.shared.budget {
                        self.partition()?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The rejects' scratch files, by the thread that read the lines (none: nothing rejected).
    pub fn finish_rejects(&mut self) -> std::io::Result<Vec<Option<PathBuf>>> {
        std::mem::take(&mut self.rejects)
            .into_iter()
            .map(RejectLog::finish)
            .collect()
    }
}

/// The ids of the new URLs of a batch, computed side by side (for lines that go to spill
/// files).
#[inline]
fn spill_ids(normal: &[Option<Normalised<'_>>; BATCH]) -> [u64; BATCH] {
    let mut ids = [0u64; BATCH];
    let mut forms = [""; BATCH];
    let mut of = [0usize; BATCH];
    let mut count = 0;
    for (i, n) in normal.iter().enumerate() {
        if let Some(Ok((form, _))) = n {
            forms[count] = form.url.as_ref();
            of[count] = i;
            count += 1;
        }
    }
    let mut computed = [0u64; BATCH];
    urls::url_ids(&forms[..count], &mut computed[..count]);
    for (&i, &id) in of[..count].iter().zip(&computed) {
        ids[i] = id;
    }
    ids
}
