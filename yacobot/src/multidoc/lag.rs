//! How far the analysis is behind the archive: the items at or after its position, and the
//! age of the first of them (focuser_formats::segment::lag over the whole archive).

use std::path::Path;

use focuser_formats::segment::{now_ms, Partition, Position, SegmentError};

/// (items at or after `from`, seconds since the first of them was archived).
pub fn lag(dir: &Path, from: Position) -> Result<(u64, u64), SegmentError> {
    let all = Partition { count: 1, index: 0 };
    let lag = focuser_formats::segment::lag(dir, from, all)?;
    Ok((lag.items, lag.seconds(now_ms()) as u64))
}
