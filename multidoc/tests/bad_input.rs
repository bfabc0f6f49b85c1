//! Bad input gets a clear error or an empty analysis, never a panic, in bounded memory: empty
//! bodies, binary data, a 50 MB page, 10 000 nested tags, invalid bytes, broken markup. The
//! peak of live heap bytes is measured with a counting global allocator.
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use focuser_multidoc::decode::{DecodeError, DEFAULT_MAX_BYTES};
use focuser_multidoc::{analyze, Analysis};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// The tests run one at a time: the counters are global, and another test's allocations
/// would count in this one's peak.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

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

/// The analysis of `body` and the peak of heap bytes it added.
fn measured(body: &[u8], max: usize) -> (Result<Analysis, DecodeError>, usize) {
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let a = analyze(body, None, max, None);
    (a, PEAK.load(Relaxed) - base)
}

#[test]
fn empty_and_binary_bodies_are_errors() {
    let _one = one_at_a_time();
    assert_eq!(
        measured(b"", DEFAULT_MAX_BYTES).0.unwrap_err(),
        DecodeError::Empty
    );
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0..10_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    assert!(matches!(
        measured(&png, DEFAULT_MAX_BYTES).0,
        Err(DecodeError::Binary { .. })
    ));
    let nuls = b"<html>\0\0\0\x01\x02binary".to_vec();
    assert!(matches!(
        measured(&nuls, DEFAULT_MAX_BYTES).0,
        Err(DecodeError::Binary { .. })
    ));
}

#[test]
fn a_50_mb_page_is_refused_without_being_copied() {
    let _one = one_at_a_time();
    let page = "<p>All work and no play makes Jack a dull boy.</p>\n".repeat((50 << 20) / 51 + 1);
    assert!(page.len() > 50 << 20);
    let (a, peak) = measured(page.as_bytes(), DEFAULT_MAX_BYTES);
    assert!(matches!(a, Err(DecodeError::TooLarge { .. })));
    assert!(peak < 1 << 20, "{peak}");
}

#[test]
fn a_page_of_tiny_blocks_stays_within_twice_its_size() {
    let _one = one_at_a_time();
    // The worst case of overhead per byte: a block every 12 bytes, 4 MiB of them.
    let limit = 4 << 20;
    let page = "<p>ab cd</p>".repeat(limit / 12);
    let (a, peak) = measured(page.as_bytes(), limit);
    let a = a.unwrap();
    assert_eq!(a.blocks.len(), 20_000, "blocks are capped, the rest merged");
    assert!(peak < 2 * page.len(), "{peak} for {}", page.len());
}

#[test]
fn ten_thousand_nested_tags() {
    let _one = one_at_a_time();
    for (open, close) in [
        ("<div>", "</div>"),
        ("<b>", "</b>"),
        ("<td><table><tr>", ""),
        ("<p><li>", ""),
    ] {
        let page = format!("{}deep text{}", open.repeat(10_000), close.repeat(10_000));
        let (a, peak) = measured(page.as_bytes(), DEFAULT_MAX_BYTES);
        let a = a.unwrap();
        assert!(a.blocks.iter().any(|b| b.text == "deep text"), "{open}");
        assert!(peak < 4 * page.len() + (1 << 20), "{open}: {peak}");
    }
    // Closing tags only, and nested ones that never close.
    let page = "</div></p></table>".repeat(10_000) + "<div><span>" + &"<i>".repeat(10_000);
    assert!(measured(page.as_bytes(), DEFAULT_MAX_BYTES)
        .0
        .unwrap()
        .blocks
        .is_empty());
}

#[test]
fn invalid_bytes_and_broken_markup_give_an_analysis() {
    let _one = one_at_a_time();
    let (a, _) = measured(b"<p>caf\xE9 \xFF\xFE ok</p>", DEFAULT_MAX_BYTES);
    assert!(a.unwrap().blocks[0].text.ends_with(" ok"));
    let (a, _) = measured("<p>ok \u{FFFD}</p>".as_bytes(), DEFAULT_MAX_BYTES);
    assert_eq!(a.unwrap().blocks.len(), 1);
    for broken in [
        "<",
        "<div class='never closed",
        "<!--",
        "<script>never closed",
        "</",
        "<p>a &#99999999999; b &; &#x; &#xD800; c",
        "<a href=x>link<a href=y>link</b></a></a>",
        "text only, no markup at all",
        "<<<>>><//><p <p>x</p>",
    ] {
        let (a, _) = measured(broken.as_bytes(), DEFAULT_MAX_BYTES);
        let a = a.unwrap();
        assert!(
            a.weights.iter().all(|w| (0.0..=1.0).contains(w)),
            "{broken}"
        );
    }
}

#[test]
fn random_markup_never_panics() {
    let _one = one_at_a_time();
    const ALPHABET: &[u8] = b"<>/=\"' abcdivpscrtyle!-&#;x0123\n\xC3\xA9\xFF";
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..2_000 {
        let len = (x % 300) as usize;
        let page: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ALPHABET[x as usize % ALPHABET.len()]
            })
            .collect();
        let _ = analyze(&page, None, DEFAULT_MAX_BYTES, None);
    }
}
