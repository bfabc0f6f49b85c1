//! Speed on one core and memory per page: the whole analysis (decode → blocks → template
//! weights → main text) over the pages, next to a parse-only pass over the same pages (decode,
//! tokenizer, block tree: the limit). Memory is the peak of live heap bytes while a page is
//! analysed, over the page's size, from a counting global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use focuser_multidoc::decode::{decode, DEFAULT_MAX_BYTES};
use focuser_multidoc::segment::parse_only;
use focuser_multidoc::template::DomainEvidence;
use focuser_multidoc::{analyze, Evidence};

use crate::data::Page;

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

pub struct Speed {
    pub pages: usize,
    pub bytes: usize,
    pub parse_s: f64,
    pub analysis_s: f64,
    /// Peak heap in flight over the page's size: median, 95th percentile, max.
    pub memory: [f64; 3],
    /// Sum of the peaks over the sum of the pages' sizes.
    pub memory_total: f64,
}

/// Best of `rounds` timings of `f` over all pages.
fn timed(rounds: usize, mut f: impl FnMut() -> usize) -> f64 {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

pub fn measure(pages: &[&Page], rounds: usize) -> Speed {
    // The evidence of a domain that has seen every page: each page's blocks are looked up.
    let mut evidence = DomainEvidence::default();
    for p in pages {
        if let Ok(a) = analyze(&p.html, None, DEFAULT_MAX_BYTES, None) {
            evidence.add_page(a.fingerprints);
        }
    }
    let parse_s = timed(rounds, || {
        pages
            .iter()
            .filter_map(|p| decode(&p.html, None, DEFAULT_MAX_BYTES).ok())
            .map(|d| parse_only(&d.text))
            .sum()
    });
    let e = Evidence {
        domain: &evidence,
        includes_page: true,
    };
    let analysis_s = timed(rounds, || {
        pages
            .iter()
            .filter_map(|p| analyze(&p.html, None, DEFAULT_MAX_BYTES, Some(e)).ok())
            .map(|a| a.main_text.len())
            .sum()
    });
    let mut ratios: Vec<f64> = Vec::with_capacity(pages.len());
    let (mut peaks, mut bytes) = (0usize, 0usize);
    for p in pages {
        let base = LIVE.load(Relaxed);
        PEAK.store(base, Relaxed);
        let a = analyze(&p.html, None, DEFAULT_MAX_BYTES, Some(e));
        let peak = PEAK.load(Relaxed).saturating_sub(base);
        drop(a);
        ratios.push(peak as f64 / p.html.len().max(1) as f64);
        peaks += peak;
        bytes += p.html.len();
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| {
        ratios
            .get(((ratios.len() as f64 - 1.0) * q) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    Speed {
        pages: pages.len(),
        bytes,
        parse_s,
        analysis_s,
        memory: [at(0.5), at(0.95), at(1.0)],
        memory_total: peaks as f64 / bytes.max(1) as f64,
    }
}
