//! Aggregates and the sorted runs they become, merged in id order.
//!
//! A reading thread appends each new URL's aggregate and text in the order it finds them
//! (each one stream, which the processor fetches ahead of the writes). Finishing a run sorts
//! the aggregates by id and lays the text out again in that order, so that the merge reads
//! both front to back. The domain's name is a piece of the URL (its host, less a leading
//! `www.`): it is kept as a place in the text, not looked up by number.

use std::ops::RangeInclusive;

use focuser_formats::{md5_lanes, urls};
use rustc_hash::FxHashMap;

use super::table::prefetch;

/// An aggregate's index in its run, in 32 bits.
pub type AggRef = u32;

/// One URL's aggregate (group_sum): hits add up, the latest time wins, and the updatetag of
/// the latest line with one (in timestamp order, then input order: `tag_seq` is the line's
/// place in the inputs).
#[derive(Clone, Copy, Debug)]
pub struct Agg {
    pub id: u64,
    pub ts: i64,
    pub hits: u64,
    pub tag_ts: i64,
    pub tag_seq: u64,
    /// Where the normalised URL is in the run's text, and the domain's name from there.
    url: u32,
    url_len: u32,
    domain_at: u32,
    domain_len: u32,
    /// Index in its run's tags (0: none).
    pub tag: u32,
    /// The domain: its thread's number for it, then the cycle's ([`Run::renumber_domains`]).
    pub domain: u32,
}

impl Agg {
    /// Whether a tag from (`ts`, `seq`) replaces this one.
    pub fn tag_wins(&self, ts: i64, seq: u64) -> bool {
        (ts, seq) >= (self.tag_ts, self.tag_seq)
    }

    /// Its text: the URL, and the domain's name where it is not inside it.
    fn text_span(&self) -> std::ops::Range<usize> {
        let start = self.url as usize;
        start..start + (self.url_len.max(self.domain_at + self.domain_len)) as usize
    }
}

/// Updatetags, each kept once.
pub struct Tags {
    index: FxHashMap<Box<str>, u32>,
    pub names: Vec<Box<str>>,
    pub bytes: u64,
}

impl Default for Tags {
    fn default() -> Tags {
        Tags {
            index: FxHashMap::default(),
            names: vec!["".into()],
            bytes: 0,
        }
    }
}

impl Tags {
    pub fn intern(&mut self, tag: &str) -> u32 {
        if let Some(&i) = self.index.get(tag) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(tag.into());
        self.index.insert(tag.into(), i);
        self.bytes += 2 * tag.len() as u64 + 64;
        i
    }
}

/// Memory an aggregate costs besides its text.
pub const AGG_BYTES: u64 = std::mem::size_of::<Agg>() as u64;

/// Aggregates being made, in the order their URLs were found.
#[derive(Default)]
pub struct RunBuilder {
    aggs: Vec<Agg>,
    text: String,
    pub tags: Tags,
    /// The memory held, about.
    pub bytes: u64,
}

/// How many aggregates ahead [`RunBuilder::finish`] asks for the text it will copy.
const LAYOUT_AHEAD: usize = 8;

impl RunBuilder {
    /// Room for `aggs` aggregates and `text` bytes of their text. Only what is used is backed
    /// by memory; the room saves copying a growing run (and the interruptions of every core
    /// that moving its pages causes).
    pub fn with_capacity(aggs: usize, text: usize) -> RunBuilder {
        RunBuilder {
            aggs: Vec::with_capacity(aggs),
            text: String::with_capacity(text),
            ..RunBuilder::default()
        }
    }

    /// A new aggregate of URL `url`, whose domain `domain` (its number: `domain_no`) is found
    /// in it at `domain_at` (else its name is kept after it). `None` when the run is full:
    /// 2^32 aggregates, or 4 GiB of text (a memory budget that large is then not kept to).
    pub fn push(
        &mut self,
        id: u64,
        url: &str,
        domain: &str,
        domain_at: Option<usize>,
        domain_no: u32,
    ) -> Option<AggRef> {
        let index = u32::try_from(self.aggs.len()).ok()?;
        let inside = domain_at
            .filter(|&at| url.as_bytes().get(at..at + domain.len()) == Some(domain.as_bytes()));
        let extra = if inside.is_some() { 0 } else { domain.len() };
        let start = self.text.len();
        let end = start + url.len() + extra;
        u32::try_from(end).ok()?;
        self.text.push_str(url);
        if inside.is_none() {
            self.text.push_str(domain);
        }
        self.aggs.push(Agg {
            id,
            ts: i64::MIN,
            hits: 0,
            tag_ts: i64::MIN,
            tag_seq: 0,
            url: start as u32,
            url_len: url.len() as u32,
            domain_at: inside.unwrap_or(url.len()) as u32,
            domain_len: domain.len() as u32,
            tag: 0,
            domain: domain_no,
        });
        self.bytes += AGG_BYTES + (end - start) as u64;
        Some(index)
    }

    /// Each aggregate's id, from its URL: several at a time.
    pub fn compute_ids(&mut self) {
        let RunBuilder { aggs, text, .. } = self;
        for group in aggs.chunks_mut(md5_lanes::LANES) {
            let urls: [&str; md5_lanes::LANES] = std::array::from_fn(|i| {
                group
                    .get(i)
                    .map_or("", |a| &text[a.url as usize..(a.url + a.url_len) as usize])
            });
            let mut ids = [0u64; md5_lanes::LANES];
            urls::url_ids(&urls[..group.len()], &mut ids[..group.len()]);
            for (a, id) in group.iter_mut().zip(ids) {
                a.id = id;
            }
        }
    }

    pub fn agg_mut(&mut self, r: AggRef) -> &mut Agg {
        &mut self.aggs[r as usize]
    }

    /// A line's tag for aggregate `r`, if it is the latest so far.
    pub fn tag(&mut self, r: AggRef, ts: i64, seq: u64, tag: &str) {
        let a = &mut self.aggs[r as usize];
        if a.tag_wins(ts, seq) {
            a.tag_ts = ts;
            a.tag_seq = seq;
            if *self.tags.names[a.tag as usize] != *tag {
                let before = self.tags.bytes;
                a.tag = self.tags.intern(tag);
                self.bytes += self.tags.bytes - before;
            }
        }
    }

    /// The aggregates sorted by id, their text laid out again in that order: the merge then
    /// reads both front to back instead of missing the cache on every URL.
    pub fn finish(self) -> Run {
        let RunBuilder {
            mut aggs,
            text,
            tags,
            ..
        } = self;
        sort_by_id(&mut aggs);
        let mut sorted = String::with_capacity(text.len());
        for i in 0..aggs.len() {
            // Each URL is a miss: the one a few places on is asked for meanwhile.
            if let Some(ahead) = aggs.get(i + LAYOUT_AHEAD) {
                if let Some(first) = text.as_bytes().get(ahead.url as usize) {
                    prefetch(first);
                }
            }
            let a = &mut aggs[i];
            let start = sorted.len() as u32;
            sorted.push_str(&text[a.text_span()]);
            a.url = start;
        }
        drop(text);
        Run {
            aggs,
            text: sorted,
            tags: tags.names,
        }
    }
}

/// Sorts `aggs` by id: each is first moved to its bucket of the ids' range (an in-place
/// radix pass, as American flag sort does; ids are spread evenly), then each bucket, within
/// the core's cache for a few million aggregates, is sorted. A sort of the whole goes over
/// all of them about twenty times; this one, the samples say, costs a fifth less. (With 2048
/// buckets the pass costs more than it saves.)
pub fn sort_by_id(aggs: &mut [Agg]) {
    const BUCKETS: usize = 1 << 8;
    let (Some(min), Some(max)) = (
        aggs.iter().map(|a| a.id).min(),
        aggs.iter().map(|a| a.id).max(),
    ) else {
        return;
    };
    // The bits the ids differ in, down to the top 8 of them.
    let span = 64 - (max - min).leading_zeros();
    let shift = span.saturating_sub(BUCKETS.trailing_zeros());
    let bucket = |a: &Agg| ((a.id - min) >> shift) as usize;
    let mut ends = vec![0usize; BUCKETS];
    for a in aggs.iter() {
        ends[bucket(a)] += 1;
    }
    let mut total = 0;
    for e in ends.iter_mut() {
        total += *e;
        *e = total;
    }
    // Fill each bucket in turn: an aggregate found in the wrong one is swapped into the next
    // free place of its own.
    let mut next = vec![0usize; BUCKETS];
    next[1..].copy_from_slice(&ends[..BUCKETS - 1]);
    let starts = next.clone();
    for b in 0..BUCKETS {
        while next[b] < ends[b] {
            let home = bucket(&aggs[next[b]]);
            if home == b {
                next[b] += 1;
            } else {
                aggs.swap(next[b], next[home]);
                next[home] += 1;
            }
        }
    }
    // Each bucket sorted by its ids and places (16 bytes each), then put in that order through
    // a scratch copy: cheaper than sorting the 64-byte aggregates themselves.
    let mut keys: Vec<(u64, u32)> = Vec::new();
    let mut scratch: Vec<Agg> = Vec::new();
    for (&start, &end) in starts.iter().zip(&ends) {
        let bucket = &mut aggs[start..end];
        keys.clear();
        keys.extend(bucket.iter().enumerate().map(|(i, a)| (a.id, i as u32)));
        keys.sort_unstable();
        scratch.clear();
        scratch.extend(keys.iter().map(|&(_, i)| bucket[i as usize]));
        bucket.copy_from_slice(&scratch);
    }
}

/// Aggregates sorted by id, with the text they point into. An id may repeat (raw URLs that
/// normalise alike); [`Merged`] adds those up.
pub struct Run {
    aggs: Vec<Agg>,
    text: String,
    tags: Vec<Box<str>>,
}

impl Run {
    /// Its aggregates, and the bytes of their text.
    pub fn size(&self) -> (usize, usize) {
        (self.aggs.len(), self.text.len())
    }

    fn url(&self, a: &Agg) -> &str {
        &self.text[a.url as usize..(a.url + a.url_len) as usize]
    }

    fn domain_name(&self, a: &Agg) -> &str {
        let at = (a.url + a.domain_at) as usize;
        &self.text[at..at + a.domain_len as usize]
    }

    fn tag(&self, a: &Agg) -> &str {
        &self.tags[a.tag as usize]
    }

    /// Every aggregate, with its URL, tag and domain's name.
    pub fn aggs(&self) -> impl Iterator<Item = (&Agg, &str, &str, &str)> + '_ {
        self.aggs
            .iter()
            .map(move |a| (a, self.url(a), self.tag(a), self.domain_name(a)))
    }

    /// Gives each aggregate's domain the number `map` has for it (the cycle's for the
    /// thread's), unless `map` changes nothing.
    pub fn renumber_domains(&mut self, map: &[u32]) {
        if map.iter().enumerate().all(|(i, &d)| i as u32 == d) {
            return;
        }
        for a in &mut self.aggs {
            a.domain = map[a.domain as usize];
        }
    }
}

/// A URL's aggregate over every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggView<'a> {
    pub id: u64,
    pub ts: i64,
    pub hits: u64,
    pub tag: &'a str,
    pub url: &'a str,
    /// The cycle's number of the domain, and its name.
    pub domain: u32,
    pub domain_name: &'a str,
}

/// Runs merged in id order, over a range of ids.
pub struct Merged<'a> {
    runs: &'a [Run],
    pos: Vec<usize>,
    end: Vec<usize>,
    /// The smallest id at the runs' places (`None`: every run is done).
    next: Option<u64>,
}

impl<'a> Merged<'a> {
    /// The aggregates of `runs` with ids in `ids`.
    pub fn new(runs: &'a [Run], ids: RangeInclusive<u64>) -> Merged<'a> {
        let (lo, hi) = (*ids.start(), *ids.end());
        let mut m = Merged {
            pos: runs
                .iter()
                .map(|r| r.aggs.partition_point(|a| a.id < lo))
                .collect(),
            end: runs
                .iter()
                .map(|r| r.aggs.partition_point(|a| a.id <= hi))
                .collect(),
            runs,
            next: None,
        };
        m.next = m.smallest();
        m
    }

    fn smallest(&self) -> Option<u64> {
        let runs: &'a [Run] = self.runs;
        (0..runs.len())
            .filter(|&r| self.pos[r] < self.end[r])
            .map(|r| runs[r].aggs[self.pos[r]].id)
            .min()
    }

    pub fn peek_id(&self) -> Option<u64> {
        self.next
    }

    /// The next URL, every run's lines of it added up.
    pub fn next_agg(&mut self) -> Option<AggView<'a>> {
        let id = self.next?;
        let runs: &'a [Run] = self.runs;
        let (mut ts, mut hits) = (i64::MIN, 0u64);
        let mut first: Option<(&'a Run, &'a Agg)> = None;
        let mut tag: Option<(&'a Run, &'a Agg)> = None;
        for (r, run) in runs.iter().enumerate() {
            let (mut p, end) = (self.pos[r], self.end[r]);
            while p < end && run.aggs[p].id == id {
                let a = &run.aggs[p];
                ts = ts.max(a.ts);
                hits = hits.saturating_add(a.hits);
                first.get_or_insert((run, a));
                if a.tag != 0 && tag.is_none_or(|(_, t)| t.tag_wins(a.tag_ts, a.tag_seq)) {
                    tag = Some((run, a));
                }
                p += 1;
            }
            self.pos[r] = p;
        }
        self.next = self.smallest();
        let (run, a) = first?;
        Some(AggView {
            id,
            ts,
            hits,
            tag: tag.map_or("", |(tr, t)| tr.tag(t)),
            url: run.url(a),
            domain: a.domain,
            domain_name: run.domain_name(a),
        })
    }
}

#[cfg(test)]
mod tests;
