//! join + filter_url (docs/design.md#master-cycle, steps 3–4): the cycle's aggregates against
//! current_log, in id order, into the new current_log and the forwarded URLs.
//!
//! URL ids are spread evenly over 64 bits, so the id space is cut in two at 2^63 and the
//! halves are joined at the same time, each with its own reader of current_log
//! ([`current_log::Reader::open_split`]). The lower half writes the new current_log; the upper
//! half writes its entries to a scratch file beside it, which is then appended to it (a copy
//! in the kernel) and accounted in the trailer's count and checksum. The bytes are those of
//! one pass in id order. When the input was spilled, its parts (an even number) are split
//! between the halves the same way.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::ops::{Range, RangeInclusive};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use focuser_formats::queue::RecordFormat;

use crate::bgwrite::BackgroundWriter;
use crate::current_log::{self, LogEntry, Reader};
use crate::filter::{self, Decision, Entry, Incoming, Reason};
use crate::ingest::{self, AggView, Domains, Ingested, Merged};
use crate::logsaver::{Forwarded, ForwardedList};
use crate::route::DomainCounts;

/// Where the halves meet: the first id of the upper half.
const SPLIT: u64 = 1 << 63;

/// The cycle's clock and the filter's settings (seconds).
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub now: i64,
    pub window: i64,
    pub retention: i64,
}

/// What the join counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub unique_urls: u64,
    pub forwarded_new: u64,
    pub forwarded_window: u64,
    pub forwarded_updatetag: u64,
    /// In current_log and in this cycle, held back.
    pub kept: u64,
    /// In current_log, not in this cycle, within retention.
    pub retained: u64,
    pub expired: u64,
}

impl Tally {
    pub fn add(&mut self, o: &Tally) {
        self.unique_urls += o.unique_urls;
        self.forwarded_new += o.forwarded_new;
        self.forwarded_window += o.forwarded_window;
        self.forwarded_updatetag += o.forwarded_updatetag;
        self.kept += o.kept;
        self.retained += o.retained;
        self.expired += o.expired;
    }
}

/// The join's result. The new current_log is written and being synced by its writer's thread.
pub struct Joined {
    pub tally: Tally,
    /// Per domain number of the cycle (domains found only in current_log were added).
    pub counts: Vec<DomainCounts>,
    /// The forwarded URLs, in id order: the lower half's, then the upper's.
    pub forwarded: Vec<ForwardedList>,
    /// The new current_log's writer, to be finished (synced) before the commit point.
    pub log: BackgroundWriter,
    pub log_entries: u64,
}

/// The scratch file of the upper half's entries, beside `next_log`.
pub fn upper_path(next_log: &Path) -> PathBuf {
    let mut name = next_log.as_os_str().to_owned();
    name.push(".upper");
    PathBuf::from(name)
}

/// The forwarded list's spill file of half `h` in `tmp_dir`.
pub fn forwarded_path(tmp_dir: &Path, h: usize) -> PathBuf {
    tmp_dir.join(format!("forwarded-{h}.spill"))
}

/// Joins `ingested` with the current_log at `log_path` into a new one at `next_log` (cycle
/// `seq`), on two threads.
pub fn join(
    ingested: &Ingested,
    domains: &mut Domains,
    log_path: &Path,
    next_log: &Path,
    seq: u64,
    tmp_dir: &Path,
    rules: Rules,
) -> anyhow::Result<Joined> {
    let parts = ingested.parts;
    // One part in memory: both halves merge it, each over its ids. Spilled: parts are even,
    // and the lower half's parts hold exactly the ids below SPLIT.
    let (lower_parts, upper_parts) = if parts == 1 {
        (0..1, 0..1)
    } else {
        (0..parts / 2, parts / 2..parts)
    };
    let (lower_reader, upper_reader) = match Reader::open_split(log_path, SPLIT)? {
        Some((l, u)) => (Some(l), Some(u)),
        None => (None, None),
    };
    let upper_log = upper_path(next_log);
    // Each half forwards at most its share of the URLs, each record its URL and some 60 bytes.
    let (aggs, text) = ingested.size();
    let room = (parts == 1).then_some((aggs / 2 + 1024, (text + 60 * aggs) / 2 + (1 << 20)));
    let lower = Half {
        parts: lower_parts,
        ids: 0..=SPLIT - 1,
        reader: lower_reader,
        log: current_log::Writer::new(BackgroundWriter::new(File::create(next_log)?)?, seq)?,
        forwarded: ForwardedList::new(room, &forwarded_path(tmp_dir, 0))?,
    };
    let upper = Half {
        parts: upper_parts,
        ids: SPLIT..=u64::MAX,
        reader: upper_reader,
        // Read back by the lower half's writer thread when it is appended; written by a
        // thread of its own, as the lower half's entries are (else this half takes longer).
        log: current_log::Writer::continuation(BackgroundWriter::scratch(
            File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&upper_log)?,
        )?),
        forwarded: ForwardedList::new(room, &forwarded_path(tmp_dir, 1))?,
    };
    let shared: &Domains = domains;
    let (lower, upper) = std::thread::scope(|scope| {
        let up = scope.spawn(|| upper.run(ingested, shared, rules));
        let low = lower.run(ingested, shared, rules);
        let up = up
            .join()
            .unwrap_or_else(|_| Err(anyhow!("the upper half's join thread panicked")));
        (low, up)
    });
    let (mut lower, upper) = (lower?, upper?);
    if let (Some(l), Some(u)) = (&lower.reader, &upper.reader) {
        current_log::check_split(l, u)?;
    }

    // The upper half's entries go after the lower's, copied by the writer's thread.
    let (out, entries) = upper.log.into_entries()?;
    let file = out
        .finish()
        .context("writing the upper half of current_log")?;
    lower.log.append(entries, |w| w.append_file(file))?;
    std::fs::remove_file(&upper_log)?;
    let (log, log_entries) = lower.log.finish()?;

    let mut tally = lower.tally;
    tally.add(&upper.tally);
    let counts = domain_counts(
        [&lower.domains, &upper.domains],
        [lower.others, upper.others],
        domains,
    );
    Ok(Joined {
        tally,
        counts,
        forwarded: vec![lower.forwarded, upper.forwarded],
        log,
        log_entries,
    })
}

/// Each domain's counts, both halves' added up; domains found only in current_log are added
/// to `domains`.
fn domain_counts(
    [lower, upper]: [&[DomainSlot]; 2],
    others: [HashMap<String, DomainCounts>; 2],
    domains: &mut Domains,
) -> Vec<DomainCounts> {
    let mut counts: Vec<DomainCounts> = lower
        .iter()
        .zip(upper)
        .map(|(l, u)| DomainCounts {
            forwarded: u64::from(l.forwarded) + u64::from(u.forwarded),
            in_log: u64::from(l.in_log) + u64::from(u.in_log),
        })
        .collect();
    // Domains only in current_log, by name (each half may have seen the same one).
    let mut others: Vec<(String, DomainCounts)> = others.into_iter().flatten().collect();
    others.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, c) in others {
        let d = domains.intern(&name) as usize;
        if counts.len() <= d {
            counts.resize(d + 1, DomainCounts::default());
        }
        counts[d].in_log += c.in_log;
    }
    counts
}

/// One half of the id space, before the join.
struct Half<W: Write> {
    parts: Range<usize>,
    ids: RangeInclusive<u64>,
    reader: Option<Reader>,
    log: current_log::Writer<W>,
    forwarded: ForwardedList,
}

/// A half's counts of a domain of the cycle, in 8 bytes (the 100 k domains of a cycle then
/// fit a core's cache). They saturate; a domain's entries in one half stay far below 2^32 (a
/// current_log that long is hundreds of gigabytes).
#[derive(Debug, Clone, Copy)]
struct DomainSlot {
    forwarded: u32,
    in_log: u32,
}

/// One half, joined.
struct HalfDone<W: Write> {
    tally: Tally,
    /// Per domain number of the cycle.
    domains: Vec<DomainSlot>,
    /// Domains of current_log entries not in this cycle's input.
    others: HashMap<String, DomainCounts>,
    forwarded: ForwardedList,
    log: current_log::Writer<W>,
    /// Kept for the trailer's check.
    reader: Option<Reader>,
}

/// What one half writes and counts as it goes.
struct Outputs<W: Write> {
    tally: Tally,
    slots: Vec<DomainSlot>,
    others: HashMap<String, DomainCounts>,
    log: current_log::Writer<W>,
    forwarded: ForwardedList,
    /// A forwarded record's formatting, kept from one to the next.
    format: RecordFormat,
    line: Vec<u8>,
}

impl<W: Write> Half<W> {
    fn run(
        self,
        ingested: &Ingested,
        domains: &Domains,
        rules: Rules,
    ) -> anyhow::Result<HalfDone<W>> {
        let Half {
            parts,
            ids,
            mut reader,
            log,
            forwarded,
        } = self;
        let mut out = Outputs {
            tally: Tally::default(),
            slots: (0..domains.names.len() as u32)
                .map(|_| DomainSlot {
                    forwarded: 0,
                    in_log: 0,
                })
                .collect(),
            others: HashMap::new(),
            log,
            forwarded,
            format: RecordFormat::default(),
            line: Vec::new(),
        };
        if let Some(r) = reader.as_mut() {
            r.advance()?;
        }
        let n_parts = ingested.parts;
        for p in parts {
            let part = ingested.part(p, domains)?;
            let mut aggs = Merged::new(part.runs(), ids.clone());
            loop {
                let log_id = reader
                    .as_ref()
                    .and_then(|r| r.current())
                    .map(|e| e.entry.id)
                    .filter(|&id| ingest::part_of(id, n_parts) <= p);
                let (id, from_log, from_input) = match (log_id, aggs.peek_id()) {
                    (None, None) => break,
                    (Some(l), Some(a)) if l == a => (l, true, true),
                    (Some(l), Some(a)) if l < a => (l, true, false),
                    (Some(l), None) => (l, true, false),
                    (_, Some(a)) => (a, false, true),
                };
                let log_entry = reader
                    .as_ref()
                    .and_then(|r| r.current())
                    .filter(|_| from_log);
                let agg = if from_input { aggs.next_agg() } else { None };
                out.tally.unique_urls += u64::from(agg.is_some());
                let incoming = agg.map(|a| Incoming {
                    ts: a.ts,
                    hits: a.hits,
                    tag: a.tag,
                });
                let d = filter::decide(
                    id,
                    log_entry.as_ref().map(|e| &e.entry),
                    incoming.as_ref(),
                    rules.now,
                    rules.window,
                    rules.retention,
                );
                let (url, domain, name) = match (&agg, &log_entry) {
                    (Some(a), _) => (a.url, Some(a.domain), a.domain_name),
                    (None, Some(e)) => (e.url, domains.get(e.domain), e.domain),
                    (None, None) => continue,
                };
                if let Some(next) = &d.next {
                    out.keep(next, domain, log_entry.as_ref(), name, url)?;
                }
                out.count_and_forward(id, &d, agg.as_ref(), url)?;
                if from_log {
                    if let Some(r) = reader.as_mut() {
                        r.advance()?;
                    }
                }
            }
        }
        Ok(HalfDone {
            tally: out.tally,
            domains: out.slots,
            others: out.others,
            forwarded: out.forwarded,
            log: out.log,
            reader,
        })
    }
}

impl<W: Write> Outputs<W> {
    /// An entry of the new current_log, counted for its domain.
    #[inline]
    fn keep(
        &mut self,
        next: &Entry<'_>,
        domain: Option<u32>,
        log_entry: Option<&LogEntry<'_>>,
        name: &str,
        url: &str,
    ) -> anyhow::Result<()> {
        match (domain, log_entry) {
            (Some(dn), _) => {
                let slot = &mut self.slots[dn as usize];
                slot.in_log = slot.in_log.saturating_add(1);
                self.log.write(next, name, url)?;
            }
            (None, Some(e)) => {
                self.log.write(next, e.domain, url)?;
                self.others.entry(e.domain.to_string()).or_default().in_log += 1;
            }
            (None, None) => {}
        }
        Ok(())
    }

    /// The URL counted by what the filter decided, and forwarded if it said so.
    #[inline]
    fn count_and_forward(
        &mut self,
        id: u64,
        d: &Decision<'_>,
        agg: Option<&AggView<'_>>,
        url: &str,
    ) -> anyhow::Result<()> {
        let tally = &mut self.tally;
        match (&d.forward, agg, &d.next) {
            (Some((hits, reason)), Some(a), Some(next)) => {
                match reason {
                    Reason::New => tally.forwarded_new += 1,
                    Reason::Window => tally.forwarded_window += 1,
                    Reason::Updatetag => tally.forwarded_updatetag += 1,
                }
                let slot = &mut self.slots[a.domain as usize];
                slot.forwarded = slot.forwarded.saturating_add(1);
                self.forwarded.push(
                    &Forwarded {
                        id,
                        ts: a.ts,
                        hits: *hits,
                        domain: a.domain,
                        domain_name: a.domain_name,
                        new: *reason == Reason::New,
                        tag: next.tag,
                        url,
                    },
                    &mut self.format,
                    &mut self.line,
                )?;
            }
            _ if d.expired => tally.expired += 1,
            _ if agg.is_some() => tally.kept += 1,
            _ => tally.retained += 1,
        }
        Ok(())
    }
}
