//! logsaver (docs/design.md#master-cycle, step 7): the forwarded URLs, kept between the join and
//! the queue files, written into one queue file per node, records in id order.
//!
//! The join formats each forwarded URL's queue record as it goes (its node is not known
//! before the route plan, which needs the whole join's counts); logsaver then only copies
//! each record to its node's file.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use focuser_formats::queue::{QueueWriter, RecordFormat};

use crate::bgwrite::BackgroundWriter;
use crate::ingest::prefetch;

/// A node's queue file being written: its temporary name and its writer.
pub type Queue = (PathBuf, QueueWriter<BackgroundWriter>);

/// Writes every forwarded URL (`lists` in id order) into its node's queue file (`open` starts
/// one), and returns the files by node. `node_of`: each domain's node, by the cycle's number.
/// In memory, the nodes are split between two threads by the parity of their number, each
/// going through the whole list and copying its own nodes' records: the records of a node
/// keep their order, and the copies (into the writers' buffers, then the kernel's) run on both
/// cores.
pub fn write_queues(
    lists: &mut [ForwardedList],
    node_of: &[Option<u32>],
    open: &(impl Fn(u32) -> anyhow::Result<Queue> + Sync),
) -> anyhow::Result<BTreeMap<u32, Queue>> {
    let write = |keep: &dyn Fn(u32) -> bool,
                 writers: &mut BTreeMap<u32, Queue>,
                 domain: u32,
                 line: &[u8]|
     -> anyhow::Result<()> {
        let node = node_of
            .get(domain as usize)
            .copied()
            .flatten()
            .ok_or_else(|| {
                anyhow!(
                    "domain of `{}` has no node",
                    String::from_utf8_lossy(line).trim_end()
                )
            })?;
        if !keep(node) {
            return Ok(());
        }
        let w = match writers.entry(node) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => v.insert(open(node)?),
        };
        w.1.write_formatted(line)?;
        Ok(())
    };
    if lists.iter().any(|l| matches!(l, ForwardedList::File(..))) {
        let mut writers = BTreeMap::new();
        for list in lists.iter_mut() {
            list.for_each(|domain, line| write(&|_| true, &mut writers, domain, line))?;
        }
        return Ok(writers);
    }
    let in_memory: Vec<(&[Kept], &[u8])> = lists
        .iter()
        .filter_map(|l| match l {
            ForwardedList::Memory(kept, text) => Some((kept.as_slice(), text.as_slice())),
            ForwardedList::File(..) => None,
        })
        .collect();
    // A record's node is looked up AHEAD records before its turn (a cycle's domains outgrow
    // the core's cache).
    const AHEAD: usize = 16;
    let each = |odd: u32| -> anyhow::Result<BTreeMap<u32, Queue>> {
        let mut writers = BTreeMap::new();
        for (kept, text) in &in_memory {
            let mut at = 0;
            for (i, k) in kept.iter().enumerate() {
                if let Some(node) = kept
                    .get(i + AHEAD)
                    .and_then(|a| node_of.get(a.domain as usize))
                {
                    prefetch(node);
                }
                let line = &text[at..at + k.len as usize];
                at += k.len as usize;
                write(&|n| n % 2 == odd, &mut writers, k.domain, line)?;
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

/// A forwarded URL on its way from the join to the queue files.
pub struct Forwarded<'a> {
    pub id: u64,
    pub ts: i64,
    pub hits: u64,
    /// The cycle's number of the domain, and its name.
    pub domain: u32,
    pub domain_name: &'a str,
    pub new: bool,
    pub tag: &'a str,
    pub url: &'a str,
}

/// A forwarded URL kept in memory: its domain and the length of its record line in the text.
pub struct Kept {
    domain: u32,
    len: u32,
}

/// The forwarded URLs between the join and the queue files, each as its queue record line:
/// in memory when the input fitted in memory (they are fewer than the aggregates it held),
/// else in a scratch file (per record: its domain and length, little-endian u32s, then the
/// line).
pub enum ForwardedList {
    Memory(Vec<Kept>, Vec<u8>),
    /// The file, and how many records it holds.
    File(PathBuf, BufWriter<File>, u64),
}

impl ForwardedList {
    /// A list in memory (with room for about `records` of `bytes` in all, so that it does not
    /// grow: growing a large one moves it), else in a file at `path`.
    pub fn new(in_memory: Option<(usize, usize)>, path: &Path) -> std::io::Result<Self> {
        Ok(if let Some((records, bytes)) = in_memory {
            ForwardedList::Memory(Vec::with_capacity(records), Vec::with_capacity(bytes))
        } else {
            ForwardedList::File(
                path.to_path_buf(),
                BufWriter::with_capacity(1 << 20, File::create(path)?),
                0,
            )
        })
    }

    /// Adds `f`'s record, made by `format` (`line`: a buffer to reuse).
    pub fn push(
        &mut self,
        f: &Forwarded<'_>,
        format: &mut RecordFormat,
        line: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        let mut put = |out: &mut Vec<u8>| {
            let start = out.len();
            format.push(out, f.id, f.url, f.domain_name, f.ts, f.hits, f.tag, f.new);
            u32::try_from(out.len() - start)
                .map_err(|_| std::io::Error::other("a queue record of 4 GiB"))
        };
        match self {
            ForwardedList::Memory(list, text) => {
                let len = put(text)?;
                list.push(Kept {
                    domain: f.domain,
                    len,
                });
                Ok(())
            }
            ForwardedList::File(_, w, count) => {
                *count += 1;
                line.clear();
                let len = put(line)?;
                w.write_all(&f.domain.to_le_bytes())?;
                w.write_all(&len.to_le_bytes())?;
                w.write_all(line)
            }
        }
    }

    /// Calls `f` with each record's domain and line, in the order they were pushed.
    fn for_each(
        &mut self,
        mut f: impl FnMut(u32, &[u8]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        match self {
            ForwardedList::Memory(list, text) => {
                let mut at = 0;
                for k in list.iter() {
                    f(k.domain, &text[at..at + k.len as usize])?;
                    at += k.len as usize;
                }
            }
            ForwardedList::File(path, w, count) => {
                w.flush()?;
                let mut input = BufReader::with_capacity(1 << 20, File::open(&*path)?);
                let mut line = Vec::new();
                for _ in 0..*count {
                    let mut head = [0u8; 8];
                    input.read_exact(&mut head)?;
                    let [d0, d1, d2, d3, l0, l1, l2, l3] = head;
                    let len = u32::from_le_bytes([l0, l1, l2, l3]) as usize;
                    line.resize(len, 0);
                    input.read_exact(&mut line)?;
                    f(u32::from_le_bytes([d0, d1, d2, d3]), &line)?;
                }
            }
        }
        Ok(())
    }
}
