//! How far behind a sender's position is (focuser_formats::segment::lag), with the sender's
//! own rule first: a position that cannot be this store's lags by everything it holds.

use std::path::Path;

pub use focuser_formats::segment::Lag;
use focuser_formats::segment::{Partition, Position, SegmentError};

/// The lag of `from` in `store` for `partition`.
pub fn lag(store: &Path, from: Position, partition: Partition) -> Result<Lag, SegmentError> {
    let from = super::identity::trusted(store, from);
    focuser_formats::segment::lag(store, from, partition)
}
