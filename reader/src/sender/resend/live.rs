//! The live set of a store as a resend sees it: per document, its last item so far, and which
//! of them before the snapshot are live UPDATEs (the items the resend sends).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::Ordering;

use focuser_formats::segment::record::RecordHeader;
use focuser_formats::segment::{Cursor, Partition, Position, Status, Take};

use super::super::session::{fail, SessionError};
use super::super::SenderState;

pub(super) struct Live {
    /// Reads the whole store once, then what the writer adds.
    scan: Cursor,
    snapshot: Position,
    /// The group ships UPDATEs at all.
    updates: bool,
    /// Each document's last item read so far.
    last: HashMap<Vec<u8>, Position>,
    /// The items before the snapshot that are their document's last, and UPDATEs.
    keep: HashSet<Position>,
}

impl Live {
    pub fn new(
        store: &Path,
        partition: Partition,
        snapshot: Position,
        statuses: &[Status],
    ) -> Live {
        Live {
            scan: Cursor::new(store, Position::START, Some(partition)),
            snapshot,
            updates: statuses.contains(&Status::Update),
            last: HashMap::new(),
            keep: HashSet::new(),
        }
    }

    /// Reads what the store holds now that was not read yet. A damaged item is passed over
    /// (logged, counted): a resend cannot know that document's state, its last good item
    /// goes.
    pub fn catch_up(&mut self, st: &SenderState) -> Result<(), SessionError> {
        loop {
            match self.scan.next() {
                Ok(Some(s)) => {
                    let at = Position {
                        file_id: s.file_id,
                        item_idx: s.item_idx,
                    };
                    if let Some(old) = self.last.insert(s.item.doc_id, at) {
                        self.keep.remove(&old);
                    }
                    if at < self.snapshot && self.updates && s.item.status == Status::Update {
                        self.keep.insert(at);
                    }
                }
                Ok(None) => return Ok(()),
                Err(e) if e.is_damage() => {
                    log::error!("resend to {}: skipping {e}", st.spec.address);
                    st.corrupt_items
                        .fetch_add(e.items_skipped(), Ordering::Relaxed);
                }
                Err(e) => return Err(fail(format!("reading the store: {e}"))),
            }
        }
    }

    /// Whether the batcher takes the item of header `h`.
    pub fn pick(&self, h: &RecordHeader) -> Take {
        let at = Position {
            file_id: h.file_id,
            item_idx: h.item_idx,
        };
        super::pick_at(self.keep.contains(&at), at, self.snapshot)
    }
}
