//! How far the analysis is behind the archive: the items at or after its position, and the
//! age of the first of them.

use std::path::Path;

use focuser_formats::segment::{list_segments, Position, SegmentError, SegmentIndex};

/// (items at or after `from`, seconds since the first of them was archived).
pub fn lag(dir: &Path, from: Position) -> Result<(u64, u64), SegmentError> {
    let mut items = 0u64;
    let mut oldest_ms = None;
    if !dir.is_dir() {
        return Ok((0, 0));
    }
    for id in list_segments(dir)? {
        if id < from.file_id {
            continue;
        }
        let seg = match SegmentIndex::open(dir, id) {
            Ok(Some(seg)) => seg,
            Ok(None) => continue,
            // Damaged beyond reading: none of it will be analysed.
            Err(e) if e.is_damage() => continue,
            Err(e) => return Err(e),
        };
        let first = if id == from.file_id {
            from.item_idx.max(1)
        } else {
            1
        };
        let n = (seg.len() + 1).saturating_sub(first);
        if n > 0 && oldest_ms.is_none() {
            oldest_ms = seg.read(first).ok().map(|s| s.item.time_ms);
        }
        items += u64::from(n);
    }
    let now = focuser_formats::segment::now_ms();
    let seconds = oldest_ms.map_or(0, |t| now.saturating_sub(t) / 1000);
    Ok((items, seconds))
}
