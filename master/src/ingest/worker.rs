//! One reading thread: its range of the inputs read, parsed and aggregated in memory while
//! they fit in its share of `Cycle.MemoryLimit`, else spilled by id range.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use focuser_schema::formats::reflog::{self, Reject};
use focuser_schema::urls::{self, NormalForm};

use super::line::Parser;
use super::memory::Memory;
use super::read::{Piece, Segment, SegmentReader};
use super::rejects::RejectLog;
use super::run::Run;
use super::scan;
use super::table::{raw_hash, DomainTable};
use super::{part_of, IngestStats, MAX_LINE};
use crate::scratch;

/// A new URL normalised (its id computed with the batch's), with its domain's key; or why it
/// is rejected.
type Normalised<'t> = Result<(NormalForm<'t>, (u64, u32)), Reject>;

/// What every thread shares.
pub struct Shared<'a> {
    pub inputs: &'a [PathBuf],
    pub offset: i64,
    pub max_url: usize,
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
        line_no: u64,
        seq: u64,
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
    rejects: RejectLog,
    /// Lines read of each input (header included).
    pub lines_of: Vec<u64>,
    file: usize,
    name: usize,
}

impl<'a> Worker<'a> {
    pub fn new(shared: &'a Shared<'a>, name: usize, segments: &[Segment]) -> Self {
        let bytes: u64 = segments.iter().map(|s| s.end - s.start).sum();
        // Room for a new URL every few lines, within the budget, so the table rarely grows.
        let urls = (bytes / 400).min(shared.budget / 256) as usize;
        Worker {
            shared,
            parser: Parser::new(shared.offset),
            memory: Some(Memory::new(urls)),
            run: None,
            domains: DomainTable::default(),
            spills: Vec::new(),
            stats: IngestStats::default(),
            rejects: RejectLog::new(shared.tmp_dir.join(format!("rejects-{name}.spill"))),
            lines_of: vec![0; shared.inputs.len()],
            file: 0,
            name,
        }
    }

    /// Reads `segments`; sorts what is in memory at the end.
    pub fn run(&mut self, segments: &[Segment]) -> std::io::Result<()> {
        for seg in segments {
            self.file = seg.file;
            let mut reader = SegmentReader::open(&self.shared.inputs[seg.file], *seg)?;
            let mut line_no = 0u64;
            while let Some(piece) = reader.next_piece()? {
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
            self.lines_of[seg.file] = line_no;
        }
        if let Some(m) = self.memory.take() {
            self.run = Some(m.into_run());
        }
        Ok(())
    }

    fn lines(&mut self, text: &[u8], at: u64, line_no: &mut u64) -> std::io::Result<()> {
        let mut batch: Vec<Item<'_>> = Vec::with_capacity(BATCH);
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
            } else {
                match self.parser.parse_scanned(s) {
                    Ok(p) => {
                        let key = raw_hash(p.url.as_bytes());
                        Item::Good {
                            line_no,
                            // The line's place in the inputs, for updatetag ties.
                            seq: ((self.file as u64) << 40) | offset,
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
            }
            Ok(())
        })?;
        self.flush(&mut batch)
    }

    fn reject(&mut self, line_no: u64, why: Reject, line: &[u8]) -> std::io::Result<()> {
        *self.stats.rejected.entry(why.kind()).or_insert(0) += 1;
        self.rejects.add(self.file, line_no, &why, line)
    }

    fn flush<'t>(&mut self, batch: &mut Vec<Item<'t>>) -> std::io::Result<()> {
        // Every slot of the batch is asked for at once, so that the cache misses overlap.
        // Then a line of a known URL is added, and a new URL is normalised (its domain's slot
        // asked for likewise); the new URLs' ids are computed side by side, and they are
        // added last, in line order.
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
            *n = Some(reflog::normal_form(url, self.shared.max_url).map(|n| {
                let key = raw_hash(n.domain.as_bytes());
                self.domains.touch(key.0);
                (n, key)
            }));
        }
        let mut ids = [0u64; BATCH];
        {
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
        }
        for ((item, n), id) in batch.drain(..).zip(normal).zip(ids) {
            match item {
                Item::Done => {}
                Item::Reject { line_no, why, line } => self.reject(line_no, why, line)?,
                Item::Good {
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
                        Some(Err(why)) => {
                            self.reject(line_no, why, line)?;
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
                        self.spill_line(id, ts, hits, tag, seq, domain, &n.url)?;
                        continue;
                    };
                    let inserted =
                        m.insert(at, (key, check), id, &n.url, &n.domain, n.domain_at, domain);
                    let Some(slot) = inserted else {
                        // No room for its aggregate: as over budget.
                        self.partition()?;
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
    fn spill_line(
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

    /// The rejects' scratch file, if any.
    pub fn finish_rejects(&mut self) -> std::io::Result<Option<PathBuf>> {
        let log = std::mem::replace(&mut self.rejects, RejectLog::new(PathBuf::new()));
        log.finish()
    }
}

/// A spilled line or aggregate: id, latest time, hits, the time and place its tag is from,
/// its thread's domain number; the tag and the URL.
fn write_spill(w: &mut impl Write, numbers: [u64; 6], tag: &str, url: &str) -> std::io::Result<()> {
    scratch::write(w, numbers, &[tag.as_bytes(), url.as_bytes()])
}
