//! A 50 MB feed is read in memory bounded by the limits: the peak of live heap bytes while
//! extracting is measured with a counting global allocator.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use common::*;
use focuser_feed::items::{extract, Limits, Outcome};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// Counting needs the allocator interface, which is unsafe by definition; it only forwards
// to the system allocator.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(live, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The feed, made as it is read: it never exists in memory as a whole.
struct Generated {
    next: usize,
    items: usize,
    pending: Vec<u8>,
    at: usize,
    done: bool,
}

impl Generated {
    fn new(items: usize) -> Self {
        Generated {
            next: 0,
            items,
            pending: b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss xmlns:g=\"g\"><channel>\n"
                .to_vec(),
            at: 0,
            done: false,
        }
    }

    fn refill(&mut self) {
        self.pending.clear();
        self.at = 0;
        if self.next < self.items {
            let i = self.next;
            self.next += 1;
            self.pending.extend_from_slice(
                format!(
                    "<item>\n  <id>k{i}</id>\n  <title>商品 {i}: {}</title>\n  <g:price>{}.50</g:price>\n  <images><img src=\"/i/{i}.jpg\"/></images>\n  <description><![CDATA[{}]]></description>\n</item>\n",
                    "名称".repeat(i % 7 + 1),
                    i % 1000,
                    "a long description that no rule reads. ".repeat(9)
                )
                .as_bytes(),
            );
        } else if !self.done {
            self.done = true;
            self.pending.extend_from_slice(b"</channel></rss>\n");
        }
    }
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.pending.len() {
            self.refill();
        }
        let n = (self.pending.len() - self.at).min(buf.len());
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn a_50_mb_feed_in_bounded_memory() {
    let items = 95_000;
    let rules = shop_rules();
    let limits = Limits::default();
    let mut bytes = 0u64;
    let mut counted = Generated::new(items);
    let mut sink = [0u8; 65536];
    loop {
        let n = counted.read(&mut sink).unwrap();
        if n == 0 {
            break;
        }
        bytes += n as u64;
    }
    assert!(bytes > 50_000_000, "the feed is {bytes} bytes");

    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let mut good = 0usize;
    let mut last_key = String::new();
    let summary = extract(Generated::new(items), None, &rules, &limits, |o| {
        if let Outcome::Item(i) = o {
            good += 1;
            if good == items {
                last_key = i.key().to_string();
            }
        }
        ControlFlow::Continue(())
    })
    .unwrap();
    let peak = PEAK.load(Relaxed) - base;
    println!(
        "{bytes} bytes, {} items, peak heap while extracting: {peak} bytes",
        summary.items
    );
    assert_eq!((summary.items, summary.failed), (items as u64, 0));
    assert_eq!(last_key, format!("k{}", items - 1));
    // Two 64 KiB decoder buffers, quick-xml's event buffer, one item's buffers: well under
    // 1 MiB, and nothing like the feed's 50 MB.
    assert!(peak < 1 << 20, "peak {peak} bytes");
}
