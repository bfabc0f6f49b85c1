//! Aggregates held in memory by one reading thread, and the sorted runs they become.
//!
//! Lines are found by their raw URL: a fast hash as the key of an open-addressing table whose
//! 32-byte slots hold the per-line fields (hits, latest time), a CRC-32C as check. A known URL
//! costs one cache line; the rest of an aggregate (id, URL, domain, updatetag) is touched only
//! when it is new or its line has an updatetag.

use std::hash::BuildHasher;
use std::ops::RangeInclusive;

use focuser_schema::segment::crc;
use rustc_hash::{FxBuildHasher, FxHashMap};

/// A raw URL's key and check: two independent hashes, 96 bits in all.
pub fn raw_hash(raw: &[u8]) -> (u64, u32) {
    (FxBuildHasher.hash_one(raw).max(1), crc::crc32c(raw))
}

/// Asks for the cache line of `at` ahead of its use. A hint, where a plain read would hold
/// back every later instruction once the core's out-of-order window fills while it misses
/// (the normalisation between a domain's touch and its lookup is longer than that window).
#[inline]
pub(crate) fn prefetch<T>(at: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault; `at` is a reference.
    #[allow(unsafe_code)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (at as *const T).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    /// 0: empty.
    key: u64,
    hits: u64,
    ts: i64,
    check: u32,
    agg: u32,
}

/// Linear probing, at most half full.
struct Table {
    slots: Vec<Slot>,
    shift: u32,
    len: usize,
}

impl Table {
    fn new(slots: usize) -> Table {
        let slots = slots.next_power_of_two().max(64);
        Table {
            slots: vec![Slot::default(); slots],
            shift: 64 - slots.trailing_zeros(),
            len: 0,
        }
    }

    fn bytes(&self) -> u64 {
        (self.slots.len() * std::mem::size_of::<Slot>()) as u64
    }

    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// `Ok(slot)` of `key`, or `Err(the empty slot it would go to)`.
    fn find(&self, key: u64, check: u32) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let s = &self.slots[i];
            if s.key == key && s.check == check {
                return Ok(i);
            }
            if s.key == 0 {
                return Err(i);
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let mut bigger = Table::new(self.slots.len() * 2);
        for s in self.slots.iter().filter(|s| s.key != 0) {
            if let Err(i) = bigger.find(s.key, s.check) {
                bigger.slots[i] = *s;
            }
        }
        bigger.len = self.len;
        *self = bigger;
    }
}

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
    /// Where the normalised URL is in its run's text.
    url: u64,
    url_len: u32,
    /// Index in its run's tags (0: none).
    pub tag: u32,
    /// The domain: its thread's number for it, or the cycle's (see [`Run::domains`]).
    pub domain: u32,
}

impl Agg {
    pub fn new(id: u64, url: (u64, u32), domain: u32) -> Agg {
        Agg {
            id,
            ts: i64::MIN,
            hits: 0,
            tag_ts: i64::MIN,
            tag_seq: 0,
            url: url.0,
            url_len: url.1,
            tag: 0,
            domain,
        }
    }

    /// Whether a tag from (`ts`, `seq`) replaces this one.
    pub fn tag_wins(&self, ts: i64, seq: u64) -> bool {
        (ts, seq) >= (self.tag_ts, self.tag_seq)
    }
}

/// Updatetags, each kept once.
#[derive(Default)]
pub struct Tags {
    index: FxHashMap<Box<str>, u32>,
    pub names: Vec<Box<str>>,
    pub bytes: u64,
}

impl Tags {
    pub fn new() -> Tags {
        Tags {
            index: FxHashMap::default(),
            names: vec!["".into()],
            bytes: 0,
        }
    }

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

/// One thread's aggregates while it reads.
pub struct Memory {
    table: Table,
    aggs: Vec<Agg>,
    pub text: String,
    pub tags: Tags,
}

/// How many URLs ahead [`Memory::into_run`] asks for the one it will copy.
const LAYOUT_AHEAD: usize = 8;

/// Per aggregate, besides its URL: the `Agg` and a table slot and a half.
const AGG_COST: u64 = (std::mem::size_of::<Agg>() + 3 * std::mem::size_of::<Slot>()) as u64;

impl Memory {
    /// Room for about `urls` distinct URLs.
    pub fn new(urls: usize) -> Memory {
        Memory {
            table: Table::new(urls * 2),
            aggs: Vec::new(),
            text: String::new(),
            tags: Tags::new(),
        }
    }

    /// The memory it holds, about.
    pub fn used(&self) -> u64 {
        self.table.bytes()
            + self.aggs.len() as u64 * AGG_COST
            + self.text.len() as u64
            + self.tags.bytes
    }

    /// Loads the slot of `key` into the cache ahead of [`Memory::find`].
    pub fn touch(&self, key: u64) {
        prefetch(&self.table.slots[self.table.home(key)]);
    }

    pub fn find(&self, key: u64, check: u32) -> Result<usize, usize> {
        self.table.find(key, check)
    }

    /// A new URL in the empty slot `at` (from `find`); returns its slot.
    pub fn insert(
        &mut self,
        at: usize,
        key: u64,
        check: u32,
        id: u64,
        url: &str,
        domain: u32,
    ) -> usize {
        let mut at = at;
        if (self.table.len + 1) * 2 > self.table.slots.len() {
            self.table.grow();
            at = self.table.find(key, check).unwrap_or_else(|i| i);
        }
        let start = self.text.len() as u64;
        self.text.push_str(url);
        self.table.slots[at] = Slot {
            key,
            hits: 0,
            ts: i64::MIN,
            check,
            agg: self.aggs.len() as u32,
        };
        self.table.len += 1;
        self.aggs
            .push(Agg::new(id, (start, url.len() as u32), domain));
        at
    }

    /// One line of the URL in `slot`.
    pub fn add(&mut self, slot: usize, ts: i64, hits: u64, tag: &str, seq: u64) {
        let s = &mut self.table.slots[slot];
        s.hits = s.hits.saturating_add(hits);
        s.ts = s.ts.max(ts);
        if !tag.is_empty() {
            let a = &mut self.aggs[s.agg as usize];
            if a.tag_wins(ts, seq) {
                a.tag_ts = ts;
                a.tag_seq = seq;
                if *self.tags.names[a.tag as usize] != *tag {
                    a.tag = self.tags.intern(tag);
                }
            }
        }
    }

    /// The aggregates, sorted by id.
    pub fn into_run(self) -> Run {
        let Memory {
            table,
            mut aggs,
            text,
            tags,
        } = self;
        for s in table.slots.iter().filter(|s| s.key != 0) {
            let a = &mut aggs[s.agg as usize];
            a.hits = s.hits;
            a.ts = s.ts;
        }
        drop(table);
        sort_by_id(&mut aggs);
        // The URLs laid out again in id order, here where every thread does its own: the
        // single-threaded merge then reads them front to back instead of missing the cache on
        // every one. The table just freed is larger than the copy.
        let mut sorted = String::with_capacity(text.len());
        for i in 0..aggs.len() {
            // Each URL is a miss: the one a few places on is asked for meanwhile.
            if let Some(ahead) = aggs.get(i + LAYOUT_AHEAD) {
                if let Some(first) = text.as_bytes().get(ahead.url as usize) {
                    prefetch(first);
                }
            }
            let a = &mut aggs[i];
            let start = a.url as usize;
            let url = &text[start..start + a.url_len as usize];
            a.url = sorted.len() as u64;
            sorted.push_str(url);
        }
        drop(text);
        Run {
            aggs,
            text: sorted,
            tags: tags.names,
            domains: None,
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
    for (start, end) in starts.iter().zip(&ends) {
        aggs[*start..*end].sort_unstable_by_key(|a| a.id);
    }
}

/// Aggregates sorted by id, with the text they point into. An id may repeat (raw URLs that
/// normalise alike); [`Merged`] adds those up.
pub struct Run {
    pub aggs: Vec<Agg>,
    pub text: String,
    pub tags: Vec<Box<str>>,
    /// The cycle's domain number of each of the thread's (None: they are the cycle's).
    pub domains: Option<Vec<u32>>,
}

impl Run {
    pub fn url(&self, a: &Agg) -> &str {
        &self.text[a.url as usize..a.url as usize + a.url_len as usize]
    }

    pub fn tag(&self, a: &Agg) -> &str {
        &self.tags[a.tag as usize]
    }

    fn domain(&self, a: &Agg) -> u32 {
        match &self.domains {
            Some(map) => map[a.domain as usize],
            None => a.domain,
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
    pub domain: u32,
}

/// Runs merged in id order, over a range of ids.
pub struct Merged<'a> {
    runs: &'a [Run],
    pos: Vec<usize>,
    end: Vec<usize>,
}

impl<'a> Merged<'a> {
    /// The aggregates of `runs` with ids in `ids`.
    pub fn new(runs: &'a [Run], ids: RangeInclusive<u64>) -> Merged<'a> {
        let (lo, hi) = (*ids.start(), *ids.end());
        Merged {
            pos: runs
                .iter()
                .map(|r| r.aggs.partition_point(|a| a.id < lo))
                .collect(),
            end: runs
                .iter()
                .map(|r| r.aggs.partition_point(|a| a.id <= hi))
                .collect(),
            runs,
        }
    }

    fn at(&self, r: usize) -> Option<&'a Agg> {
        let runs: &'a [Run] = self.runs;
        runs[r].aggs[..self.end[r]].get(self.pos[r])
    }

    /// The domain of each run's aggregate `ahead` places past its next one, to be loaded
    /// into the cache before its turn comes.
    pub fn domains_ahead(&self, ahead: usize) -> impl Iterator<Item = u32> + '_ {
        (0..self.runs.len()).filter_map(move |r| {
            let run = &self.runs[r];
            run.aggs[..self.end[r]]
                .get(self.pos[r] + ahead)
                .map(|a| run.domain(a))
        })
    }

    pub fn peek_id(&self) -> Option<u64> {
        (0..self.runs.len())
            .filter_map(|r| self.at(r).map(|a| a.id))
            .min()
    }

    /// The next URL, every run's lines of it added up.
    pub fn next_agg(&mut self) -> Option<AggView<'a>> {
        let id = self.peek_id()?;
        let (mut ts, mut hits) = (i64::MIN, 0u64);
        let mut first: Option<(usize, &'a Agg)> = None;
        let mut tag: Option<(usize, &'a Agg)> = None;
        for r in 0..self.runs.len() {
            while let Some(a) = self.at(r).filter(|a| a.id == id) {
                ts = ts.max(a.ts);
                hits = hits.saturating_add(a.hits);
                first.get_or_insert((r, a));
                if a.tag != 0 && tag.is_none_or(|(_, t)| t.tag_wins(a.tag_ts, a.tag_seq)) {
                    tag = Some((r, a));
                }
                self.pos[r] += 1;
            }
        }
        let runs: &'a [Run] = self.runs;
        let (r, a) = first?;
        let run = &runs[r];
        Some(AggView {
            id,
            ts,
            hits,
            tag: tag.map_or("", |(tr, t)| runs[tr].tag(t)),
            url: run.url(a),
            domain: run.domain(a),
        })
    }
}

/// A thread's domains, found by a 96-bit hash of the name like raw URLs are (so that the
/// slot of a name can be loaded ahead of its lookup).
pub struct DomainTable {
    slots: Vec<(u64, u32, u32)>,
    shift: u32,
    pub names: Vec<String>,
    pub bytes: u64,
}

impl Default for DomainTable {
    fn default() -> Self {
        DomainTable {
            slots: vec![(0, 0, 0); 1024],
            shift: 64 - 10,
            names: Vec::new(),
            bytes: 1024 * 16,
        }
    }
}

impl DomainTable {
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    pub fn touch(&self, key: u64) {
        prefetch(&self.slots[self.home(key)]);
    }

    /// The number of `name` (whose [`raw_hash`] is `key`, `check`).
    pub fn intern(&mut self, (key, check): (u64, u32), name: &str) -> u32 {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let (k, c, id) = self.slots[i];
            if k == key && c == check {
                return id;
            }
            if k == 0 {
                break;
            }
            i = (i + 1) & mask;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.slots[i] = (key, check, id);
        self.bytes += name.len() as u64 + 48;
        if self.names.len() * 2 > self.slots.len() {
            let bigger = vec![(0, 0, 0); self.slots.len() * 2];
            let old = std::mem::replace(&mut self.slots, bigger);
            self.shift -= 1;
            self.bytes += old.len() as u64 * 16;
            let mask = self.slots.len() - 1;
            for s in old.into_iter().filter(|s| s.0 != 0) {
                let mut i = self.home(s.0);
                while self.slots[i].0 != 0 {
                    i = (i + 1) & mask;
                }
                self.slots[i] = s;
            }
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Ids spread over all 64 bits, over a few bits only (a spilled part's range), or repeated.
    fn ids() -> impl Strategy<Value = Vec<u64>> {
        prop_oneof![
            prop::collection::vec(any::<u64>(), 0..3000),
            (any::<u64>(), prop::collection::vec(0u64..5000, 0..3000)).prop_map(|(base, offs)| {
                offs.into_iter().map(|o| base.saturating_add(o)).collect()
            }),
            prop::collection::vec(
                prop::sample::select(vec![0, 1, 7, u64::MAX - 1, u64::MAX]),
                0..300
            ),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The same aggregates as a plain sort, in id order.
        #[test]
        fn sort_by_id_sorts_like_a_plain_sort(ids in ids()) {
            let mut aggs: Vec<Agg> = ids
                .iter()
                .enumerate()
                .map(|(i, &id)| Agg::new(id, (i as u64, 0), i as u32))
                .collect();
            let mut expected = aggs.clone();
            expected.sort_by_key(|a| (a.id, a.domain));
            sort_by_id(&mut aggs);
            prop_assert!(aggs.windows(2).all(|w| w[0].id <= w[1].id));
            aggs.sort_by_key(|a| (a.id, a.domain));
            let key = |v: &[Agg]| v.iter().map(|a| (a.id, a.url, a.domain)).collect::<Vec<_>>();
            prop_assert_eq!(key(&aggs), key(&expected));
        }
    }
}
