//! Deleting segments: only those every shipper has passed — every item sender by its saved
//! position, and every whole-file `sendfile` shipper of this store's segments by the last pair
//! it shipped (the source's `min_file_id` rule); past `Store.MaxBytes`, the oldest anyway, with
//! the items senders had not sent counted as lost (and the segments a sendfile shipper had not
//! shipped logged).
//! A saved position that cannot be this store's (a stream identity mismatch) counts as the
//! oldest segment: nothing is deleted on its account.
//!
//! A store whose owner keeps a retention of its own (`Store.FloorFile`: yacobot's archive,
//! which it re-indexes pages from) loses nothing at or above the floor the owner publishes,
//! not even past `Store.MaxBytes`: the owner's cap bounds the store. A floor file that
//! cannot be read deletes nothing (fail safe).

use std::io::ErrorKind;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use focuser_formats::segment::{
    delete_segment, list_segments, read_position, store_bytes, PositionError, SegmentError,
    SegmentIndex,
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

#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    #[error("{}: the store's owner publishes no retention floor (yet): nothing is deleted", .0.display())]
    Missing(PathBuf),
    #[error("{}: a symbolic link, not the owner's floor file: nothing is deleted", .0.display())]
    Symlink(PathBuf),
    #[error("{0}: nothing is deleted")]
    Bad(#[from] PositionError),
}

impl FloorError {
    /// What kind of trouble: a new kind is logged as a new episode.
    pub fn kind(&self) -> &'static str {
        match self {
            FloorError::Missing(_) => "missing",
            FloorError::Symlink(_) => "symlink",
            FloorError::Bad(_) => "bad",
        }
    }
}

/// The oldest segment the store's owner still needs, from its floor file (a position file
/// written atomically by the owner).
pub fn read_floor(file: &Path) -> Result<u64, FloorError> {
    match std::fs::symlink_metadata(file) {
        Ok(m) if m.file_type().is_symlink() => return Err(FloorError::Symlink(file.into())),
        Err(e) if e.kind() == ErrorKind::NotFound => return Err(FloorError::Missing(file.into())),
        _ => {}
    }
    match read_position(file)? {
        Some(p) => Ok(p.file_id),
        None => Err(FloorError::Missing(file.into())),
    }
}

pub fn enforce(
    store: &Path,
    senders: &[Arc<SenderState>],
    max_bytes: u64,
) -> Result<Retention, SegmentError> {
    enforce_below(store, senders, &[], max_bytes, u64::MAX)
}

/// A whole-file shipper of this store's sealed segments, as retention sees it: its name (for
/// the log) and the first segment it has not shipped whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileShipperNeed {
    pub name: String,
    pub first_needed: u64,
}

/// [`enforce`], also waiting for the whole-file shippers of this store, and deleting only
/// segments below `floor`.
pub fn enforce_below(
    store: &Path,
    senders: &[Arc<SenderState>],
    shippers: &[FileShipperNeed],
    max_bytes: u64,
    floor: u64,
) -> Result<Retention, SegmentError> {
    let mut r = Retention::default();
    if senders.is_empty() && shippers.is_empty() {
        return Ok(r);
    }
    let ids = list_segments(store)?;
    // The active segment (the last one) is never deleted, nor what the owner keeps.
    let Some((_, sealed)) = ids.split_last() else {
        return Ok(r);
    };
    let sealed: Vec<u64> = sealed.iter().copied().filter(|&id| id < floor).collect();
    let positions: Vec<Position> = senders
        .iter()
        .map(|s| trusted(store, s.store_position()))
        .collect();
    let min = positions
        .iter()
        .map(|p| p.file_id)
        .chain(shippers.iter().map(|s| s.first_needed))
        .min()
        .unwrap_or(0);
    let mut left: Vec<u64> = Vec::new();
    for &id in &sealed {
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
        for s in shippers.iter().filter(|s| s.first_needed <= id) {
            log::error!(
                "Store.MaxBytes ({max_bytes}) exceeded: deleted segment {id} before {} shipped it",
                s.name
            );
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
