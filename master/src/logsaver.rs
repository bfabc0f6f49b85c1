//! logsaver (SPEC §5): the forwarded URLs, kept between the merge and the queue files, written
//! into one queue file per node, records in id order.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use focuser_schema::formats::queue::QueueWriter;

use crate::bgwrite::BackgroundWriter;
use crate::ingest::{prefetch, NameArena, NameSpan};
use crate::scratch;

/// A node's queue file being written: its temporary name and its writer.
pub type Queue = (PathBuf, QueueWriter<BackgroundWriter>);

/// Writes every forwarded URL (`lists` in id order) into its node's queue file (`open` starts
/// one), and returns the files by node. In memory, the nodes are split between two threads by the parity of their
/// number, each reading the whole list and writing its own nodes' records: the records of a
/// node keep their order, and formatting them (most of the work) runs on both cores.
pub fn write_queues(
    lists: &mut [ForwardedList],
    node_of: &[Option<u32>],
    domains: &[String],
    open: &(impl Fn(u32) -> anyhow::Result<Queue> + Sync),
) -> anyhow::Result<BTreeMap<u32, Queue>> {
    // Per domain, what a record of it needs, side by side: every record is a cache miss here.
    let names = NameArena::new(domains)?;
    let dest: Vec<Dest> = (0..domains.len())
        .map(|d| Dest {
            node: node_of.get(d).copied().flatten(),
            name: names.span(d as u32),
        })
        .collect();
    let write = |keep: &dyn Fn(u32) -> bool,
                 writers: &mut BTreeMap<u32, Queue>,
                 f: Forwarded<'_>|
     -> anyhow::Result<()> {
        let Dest { node, name } = dest[f.domain as usize];
        let domain = names.at(name);
        let node = node.ok_or_else(|| anyhow!("domain {domain} has no node"))?;
        if !keep(node) {
            return Ok(());
        }
        let w = match writers.entry(node) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => v.insert(open(node)?),
        };
        w.1.write_fields(f.id, f.url, domain, f.ts, f.hits, f.tag, f.new)?;
        Ok(())
    };
    if lists.iter().any(|l| matches!(l, ForwardedList::File(..))) {
        let mut writers = BTreeMap::new();
        for list in lists.iter_mut() {
            list.for_each(|f| write(&|_| true, &mut writers, f))?;
        }
        return Ok(writers);
    }
    let in_memory: Vec<(&[Kept], &str)> = lists
        .iter()
        .filter_map(|l| match l {
            ForwardedList::Memory(kept, text) => Some((kept.as_slice(), text.as_str())),
            ForwardedList::File(..) => None,
        })
        .collect();
    // A record's domain is loaded into the cache AHEAD records before its turn, its name
    // half as many.
    const AHEAD: usize = 16;
    let each = |odd: u32| -> anyhow::Result<BTreeMap<u32, Queue>> {
        let mut writers = BTreeMap::new();
        for (kept, text) in &in_memory {
            for (i, k) in kept.iter().enumerate() {
                if let Some(ahead) = kept.get(i + AHEAD) {
                    prefetch(&dest[ahead.domain as usize]);
                }
                if let Some(ahead) = kept.get(i + AHEAD / 2) {
                    names.prefetch(dest[ahead.domain as usize].name);
                }
                write(&|n| n % 2 == odd, &mut writers, k.forwarded(text))?;
            }
        }
        Ok(writers)
    };
    std::thread::scope(|scope| {
        let odd = scope.spawn(|| each(1));
        let mut writers = each(0)?;
        let odd = odd
            .join()
            .unwrap_or_else(|_| Err(anyhow!("queue writing thread panicked")))?;
        writers.extend(odd);
        Ok(writers)
    })
}

/// Where the records of a domain go: its node (none: a bug of routing) and its name.
#[derive(Clone, Copy)]
struct Dest {
    node: Option<u32>,
    name: NameSpan,
}

/// A forwarded URL on its way from the merge to the queue files.
pub struct Forwarded<'a> {
    pub id: u64,
    pub ts: i64,
    pub hits: u64,
    pub domain: u32,
    pub new: bool,
    pub tag: &'a str,
    pub url: &'a str,
}

/// A forwarded URL kept in memory: its fields, and where its tag and URL are in the text.
pub struct Kept {
    id: u64,
    ts: i64,
    hits: u64,
    domain: u32,
    new: bool,
    at: usize,
    tag_len: u32,
    url_len: u32,
}

impl Kept {
    /// The record, its tag and URL in `text` (its list's).
    fn forwarded<'a>(&self, text: &'a str) -> Forwarded<'a> {
        let tag_end = self.at + self.tag_len as usize;
        Forwarded {
            id: self.id,
            ts: self.ts,
            hits: self.hits,
            domain: self.domain,
            new: self.new,
            tag: &text[self.at..tag_end],
            url: &text[tag_end..tag_end + self.url_len as usize],
        }
    }
}

/// The forwarded URLs between the merge and the queue files: in memory when the input fitted
/// in memory (they are fewer than the aggregates it held), their text in one string; else in
/// a scratch file (id, latest time, hits, domain, new; the tag and the URL).
pub enum ForwardedList {
    Memory(Vec<Kept>, String),
    File(PathBuf, BufWriter<File>),
}

impl ForwardedList {
    pub fn new(in_memory: bool, path: &Path) -> std::io::Result<Self> {
        Ok(if in_memory {
            ForwardedList::Memory(Vec::new(), String::new())
        } else {
            ForwardedList::File(
                path.to_path_buf(),
                BufWriter::with_capacity(1 << 20, File::create(path)?),
            )
        })
    }

    pub fn push(&mut self, f: &Forwarded<'_>) -> std::io::Result<()> {
        match self {
            ForwardedList::Memory(list, text) => {
                list.push(Kept {
                    id: f.id,
                    ts: f.ts,
                    hits: f.hits,
                    domain: f.domain,
                    new: f.new,
                    at: text.len(),
                    tag_len: f.tag.len() as u32,
                    url_len: f.url.len() as u32,
                });
                text.push_str(f.tag);
                text.push_str(f.url);
                Ok(())
            }
            ForwardedList::File(_, w) => scratch::write(
                w,
                [
                    f.id,
                    f.ts as u64,
                    f.hits,
                    u64::from(f.domain),
                    u64::from(f.new),
                ],
                &[f.tag.as_bytes(), f.url.as_bytes()],
            ),
        }
    }

    /// Calls `f` with each record, in the order they were pushed (as often as asked).
    fn for_each(
        &mut self,
        mut f: impl FnMut(Forwarded<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        match self {
            ForwardedList::Memory(list, text) => {
                for k in list.iter() {
                    f(k.forwarded(text))?;
                }
            }
            ForwardedList::File(path, w) => {
                w.flush()?;
                let mut input = BufReader::with_capacity(1 << 20, File::open(&*path)?);
                while let Some(([id, ts, hits, domain, new], [tag, url])) =
                    scratch::read(&mut input)?
                {
                    f(Forwarded {
                        id,
                        ts: ts as i64,
                        hits,
                        domain: domain as u32,
                        new: new == 1,
                        tag: &tag,
                        url: &url,
                    })?;
                }
            }
        }
        Ok(())
    }
}
