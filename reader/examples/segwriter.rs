//! A writer that appends deterministic items to a segment store, as yacobot will: item n has
//! url `http://site<n % 50>.example/doc/<n>`, a doc id hashed from n, content of a size drawn
//! from n, status DELETE for every tenth. Restarted, it goes on after the last durable item,
//! so a store it writes holds items 1..=n, each once, however often it is killed.
//!
//! segwriter DIR TOTAL [--rate ITEMS_PER_S] [--min BYTES] [--max BYTES] [--max-items K]
//!           [--sync-items S] [--sync-ms MS]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use focuser_formats::segment::{
    list_segments, Item, Origin, SegmentIndex, Status, SyncPolicy, Writer, WriterOptions,
};

pub fn item(n: u64, min: usize, max: usize) -> Item {
    let mix = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (n >> 7);
    let size = min + (mix as usize % (max - min + 1));
    let mut content = Vec::with_capacity(size);
    let mut x = mix | 1;
    while content.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        content.extend_from_slice(&x.to_le_bytes());
    }
    content.truncate(size);
    Item {
        status: if n.is_multiple_of(10) {
            Status::Delete
        } else {
            Status::Update
        },
        doc_id: format!("{mix:016x}").into_bytes(),
        url: format!("http://site{}.example/doc/{n}", n % 50).into_bytes(),
        content,
        time_ms: focuser_formats::segment::now_ms(),
        origin: Origin::default(),
    }
}

/// n of the last durable item, from its url.
fn last_n(dir: &Path) -> u64 {
    for id in list_segments(dir).unwrap().into_iter().rev() {
        let seg = SegmentIndex::open(dir, id).unwrap().unwrap();
        if !seg.is_empty() {
            let it = seg.read(seg.len()).unwrap().item;
            let url = String::from_utf8(it.url).unwrap();
            return url.rsplit('/').next().unwrap().parse().unwrap();
        }
    }
    0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = Path::new(&args[1]);
    let total: u64 = args[2].parse().unwrap();
    let opt = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .map(|i| args[i + 1].parse().unwrap())
            .unwrap_or(default)
    };
    let rate = opt("--rate", 0);
    let (min, max) = (opt("--min", 100) as usize, opt("--max", 2000) as usize);
    let opts = WriterOptions {
        max_age_s: 0,
        max_items: opt("--max-items", 500) as u32,
        max_bytes: 1 << 30,
        sync: SyncPolicy {
            every_items: opt("--sync-items", 50) as u32,
            every_ms: opt("--sync-ms", 20),
        },
    };
    let (mut w, rec) = Writer::open(dir, opts).unwrap();
    if rec.cut_bytes > 0 || rec.index_rebuilt || rec.left_behind.is_some() {
        eprintln!("segwriter: recovered {rec:?}");
    }
    let start = last_n(dir) + 1;
    let t0 = Instant::now();
    for n in start..=total {
        w.append(&item(n, min, max)).unwrap();
        if rate > 0 {
            let due = Duration::from_secs_f64((n - start + 1) as f64 / rate as f64);
            if let Some(wait) = due.checked_sub(t0.elapsed()) {
                w.sync_if_due().unwrap();
                std::thread::sleep(wait);
            }
        }
    }
    w.rotate().unwrap();
    w.close().unwrap();
}
