//! Deleting segments: only those every sender has passed (by its saved position); past
//! `Store.MaxBytes`, the oldest anyway, with the items senders had not sent counted as lost.
//! A saved position that cannot be this store's (a stream identity mismatch) counts as the
//! oldest segment: nothing is deleted on its account.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use focuser_formats::segment::{
    delete_segment, list_segments, store_bytes, SegmentError, SegmentIndex,
};

use super::identity::trusted;
use super::{Position, SenderState};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    pub deleted: u64,
    /// Segments deleted by `Store.MaxBytes` while a sender still needed them.
    pub overflowed: u64,
    pub lost_items: u64,
}

pub fn enforce(
    store: &Path,
    senders: &[Arc<SenderState>],
    max_bytes: u64,
) -> Result<Retention, SegmentError> {
    let mut r = Retention::default();
    if senders.is_empty() {
        return Ok(r);
    }
    let ids = list_segments(store)?;
    // The active segment (the last one) is never deleted.
    let Some((_, sealed)) = ids.split_last() else {
        return Ok(r);
    };
    let positions: Vec<Position> = senders.iter().map(|s| trusted(store, s.saved())).collect();
    let min = positions.iter().map(|p| p.file_id).min().unwrap_or(0);
    let mut left: Vec<u64> = Vec::new();
    for &id in sealed {
        if id < min {
            delete_segment(store, id)?;
            r.deleted += 1;
        } else {
            left.push(id);
        }
    }
    if max_bytes == 0 {
        return Ok(r);
    }
    for id in left {
        if store_bytes(store)? <= max_bytes {
            break;
        }
        let mut lost = 0;
        if let Some(seg) = SegmentIndex::open(store, id)? {
            for (s, &pos) in senders.iter().zip(&positions) {
                if pos.file_id > id {
                    continue;
                }
                let first = if pos.file_id == id {
                    pos.item_idx.max(1)
                } else {
                    1
                };
                let n = (first..=seg.len())
                    .filter(|&k| seg.doc_hash(k).is_some_and(|h| s.spec.partition.wants(h)))
                    .count() as u64;
                if n > 0 {
                    let total = s.lost_items.fetch_add(n, Ordering::Relaxed) + n;
                    if let Err(e) = s.spec.save_lost(total) {
                        log::error!("{}: {e}", s.spec.lost_file.display());
                    }
                }
                lost += n;
            }
        }
        delete_segment(store, id)?;
        r.deleted += 1;
        r.overflowed += 1;
        r.lost_items += lost;
        log::error!(
            "Store.MaxBytes ({max_bytes}) exceeded: deleted segment {id} before every sender had it; {lost} items lost"
        );
    }
    Ok(r)
}
