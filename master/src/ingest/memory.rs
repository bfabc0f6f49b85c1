//! Aggregates held in memory by one reading thread while it reads.
//!
//! Lines are found by their raw URL ([`Table`]): its slot holds what every line changes (hits,
//! latest time), so a known URL costs one cache line; the rest of its aggregate (id, URL,
//! domain, updatetag) is made when the URL is new ([`RunBuilder`]) and touched again only by a
//! line with an updatetag.

use super::run::{AggRef, Run, RunBuilder};
use super::table::{Slot, Table};

pub struct Memory {
    table: Table,
    aggs: RunBuilder,
}

impl Memory {
    /// Room for about `urls` distinct URLs.
    pub fn new(urls: usize) -> Memory {
        Memory {
            table: Table::new(urls * 2),
            // Twice the URLs expected: a run rarely has to grow.
            aggs: RunBuilder::with_capacity(2 * urls, 128 * urls),
        }
    }

    /// The memory it holds, about: with, for each URL, room for the table to double.
    pub fn used(&self) -> u64 {
        self.table.bytes()
            + self.table.len as u64 * 3 * std::mem::size_of::<Slot>() as u64
            + self.aggs.bytes
            + self.aggs.tags.bytes
    }

    /// Loads the slot of `key` into the cache ahead of [`Memory::find`].
    pub fn touch(&self, key: u64) {
        self.table.touch(key);
    }

    pub fn find(&self, key: u64, check: u32) -> Result<usize, usize> {
        self.table.find(key, check)
    }

    /// A new URL in the empty slot `at` (from `find`); returns its slot, or `None` when its
    /// aggregate has no room (see [`RunBuilder::push`]). Its id is computed at the end.
    pub fn insert(
        &mut self,
        at: usize,
        (key, check): (u64, u32),
        url: &str,
        domain: &str,
        domain_at: Option<usize>,
        domain_no: u32,
    ) -> Option<usize> {
        let agg = self.aggs.push(0, url, domain, domain_at, domain_no)?;
        let slot = Slot {
            key,
            hits: 0,
            ts: i64::MIN,
            check,
            agg,
        };
        Some(self.table.insert(at, slot))
    }

    /// One line of the URL in `slot`.
    pub fn add(&mut self, slot: usize, ts: i64, hits: u64, tag: &str, seq: u64) {
        let s = &mut self.table.slots[slot];
        s.hits = s.hits.saturating_add(hits);
        s.ts = s.ts.max(ts);
        if !tag.is_empty() {
            let agg: AggRef = s.agg;
            self.aggs.tag(agg, ts, seq, tag);
        }
    }

    /// The aggregates with their ids, sorted by id.
    pub fn into_run(self) -> Run {
        let Memory { table, mut aggs } = self;
        for s in table.slots.iter().filter(|s| s.key != 0) {
            let a = aggs.agg_mut(s.agg);
            a.hits = s.hits;
            a.ts = s.ts;
        }
        drop(table);
        aggs.compute_ids();
        aggs.finish()
    }
}
