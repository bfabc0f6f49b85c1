//! Whether a position can belong to this store: a receiver's WELCOME, or a position file, that
//! names an item the store never had is another store's (a store rebuilt with its file ids
//! starting at 1 again, a receiver confused about who is who). Trusting it would skip items
//! never sent and let retention delete them: such a position is a stream identity mismatch.

use std::path::Path;

use focuser_formats::segment::{list_segments, Position, SegmentError, SegmentIndex};

/// Why `next` (the next item to read) cannot be a position of the store in `dir`, if it
/// cannot. Positions in segments already deleted, or that cannot be read, are given the
/// benefit of the doubt: only what the store shows to be impossible is refused.
pub fn impossible(dir: &Path, next: Position) -> Result<Option<String>, SegmentError> {
    if next.file_id == 0 {
        return Ok(None);
    }
    let ids = match list_segments(dir) {
        Ok(ids) => ids,
        Err(SegmentError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    let Some(&last) = ids.last() else {
        return Ok(Some(format!(
            "{next} is beyond the store's end: the store holds no segment"
        )));
    };
    if next.file_id > last {
        let end = end_of(dir, last)?;
        return Ok(Some(format!("{next} is beyond the store's end ({end})")));
    }
    if ids.binary_search(&next.file_id).is_err() {
        return Ok(None);
    }
    let seg = match SegmentIndex::open(dir, next.file_id) {
        Ok(Some(seg)) => seg,
        Ok(None) | Err(SegmentError::BadHeader { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    // The next item after a segment's last one is where a reader stands once past it.
    if u64::from(next.item_idx) > u64::from(seg.len()) + 1 {
        return Ok(Some(format!(
            "{next} is past the end of segment {}, which holds {} items",
            next.file_id,
            seg.len()
        )));
    }
    Ok(None)
}

/// The position after the last item of segment `last` (the store's end), for messages.
fn end_of(dir: &Path, last: u64) -> Result<Position, SegmentError> {
    let len = match SegmentIndex::open(dir, last) {
        Ok(Some(seg)) => seg.len(),
        Ok(None) | Err(SegmentError::BadHeader { .. }) => 0,
        Err(e) => return Err(e),
    };
    Ok(Position {
        file_id: last,
        item_idx: len.saturating_add(1),
    })
}

/// Where a sender really stands for retention and lag: its saved position, or the oldest
/// segment if that position cannot be this store's (nothing it claims can be trusted).
pub fn trusted(dir: &Path, saved: Position) -> Position {
    match impossible(dir, saved) {
        Ok(Some(_)) => Position::START,
        _ => saved,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use focuser_formats::segment::{Item, Origin, Status, Writer, WriterOptions};

    fn at(file_id: u64, item_idx: u32) -> Position {
        Position { file_id, item_idx }
    }

    /// Segments 1 and 2 sealed with 3 items each, 3 active with 2.
    fn store(dir: &Path) {
        let (mut w, _) = Writer::open(dir, WriterOptions::default()).unwrap();
        for n in 0..8u8 {
            if n == 3 || n == 6 {
                w.rotate().unwrap();
            }
            w.append(&Item {
                status: Status::Update,
                doc_id: vec![b'd', n],
                url: b"http://x/".to_vec(),
                content: vec![n; 10],
                time_ms: 1,
                origin: Origin::default(),
            })
            .unwrap();
        }
        w.sync().unwrap();
    }

    #[test]
    fn only_positions_the_store_cannot_have_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        store(dir.path());
        for ok in [
            Position::START,
            at(1, 1),
            at(1, 4),
            at(2, 2),
            at(3, 1),
            at(3, 3),
        ] {
            assert_eq!(impossible(dir.path(), ok).unwrap(), None, "{ok}");
        }
        for bad in [
            at(1, 5),
            at(3, 4),
            at(4, 1),
            at(1 << 40, 8),
            at(2, u32::MAX),
        ] {
            let why = impossible(dir.path(), bad).unwrap();
            assert!(why.is_some(), "{bad}");
            assert_eq!(trusted(dir.path(), bad), Position::START);
        }
        let why = impossible(dir.path(), at(9, 1)).unwrap().unwrap();
        assert!(why.contains("beyond the store's end (3:3)"), "{why}");
        // A deleted segment's positions are the past, not an impossibility.
        focuser_formats::segment::delete_segment(dir.path(), 1).unwrap();
        assert_eq!(impossible(dir.path(), at(1, 9)).unwrap(), None);
        // An empty or missing store holds nothing anyone can be past.
        let empty = dir.path().join("none");
        assert!(impossible(&empty, at(1, 1)).unwrap().is_some());
        assert_eq!(impossible(&empty, Position::START).unwrap(), None);
    }
}
