//! How far behind a position in a store is: the items at or after it (of one partition), and
//! when the oldest of them was written. Senders, the page analysis and the tools all ask.

use std::path::Path;

use super::{list_segments, Partition, Position, SegmentError, SegmentIndex};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lag {
    /// Durable items of the partition at or after the position (both statuses).
    pub items: u64,
    /// Milliseconds since the epoch of the oldest of them, if any.
    pub oldest_ms: Option<u64>,
}

impl Lag {
    pub fn seconds(&self, now_ms: u64) -> f64 {
        self.oldest_ms
            .map(|t| now_ms.saturating_sub(t) as f64 / 1000.0)
            .unwrap_or(0.0)
    }
}

/// The lag of `from` in the store `dir` (none when the folder is not there yet). Segments
/// gone or damaged beyond reading are passed over: no item of them will be read.
pub fn lag(dir: &Path, from: Position, partition: Partition) -> Result<Lag, SegmentError> {
    let mut out = Lag::default();
    if !dir.is_dir() {
        return Ok(out);
    }
    for id in list_segments(dir)? {
        if id < from.file_id {
            continue;
        }
        let seg = match SegmentIndex::open(dir, id) {
            Ok(Some(seg)) => seg,
            Ok(None) => continue,
            Err(e) if e.is_damage() => continue,
            Err(e) => return Err(e),
        };
        let first = if id == from.file_id {
            from.item_idx.max(1)
        } else {
            1
        };
        for k in first..=seg.len() {
            if seg.doc_hash(k).is_some_and(|h| partition.wants(h)) {
                if out.items == 0 {
                    out.oldest_ms = seg.read(k).ok().map(|s| s.item.time_ms);
                }
                out.items += 1;
            }
        }
    }
    Ok(out)
}
