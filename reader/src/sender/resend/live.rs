//! The live set of a store as a resend sees it: per document, its last item so far, and which
//! of them before the snapshot are live UPDATEs (the items the resend sends). From the owner's
//! snapshot (`Store.SnapshotDir`), its items are the candidates, and a document with an item
//! in the store from the resend's snapshot position on is left to the normal stream.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::Ordering;

use focuser_formats::segment::record::RecordHeader;
use focuser_formats::segment::{Cursor, Partition, Position, Status, Take};

use super::super::session::{fail, SessionError};
use super::super::SenderState;

/// Past every position: every item of an owner's snapshot is before it.
const END: Position = Position {
    file_id: u64::MAX,
    item_idx: u32::MAX,
};

pub(super) struct Live {
    /// Reads the whole store (or the owner's snapshot) once, then what the writer adds.
    scan: Cursor,
    snapshot: Position,
    /// From the owner's snapshot: the store from the resend's snapshot position on; the
    /// documents found there, whose newer items the normal stream sends.
    newer: Option<(Cursor, HashSet<Vec<u8>>)>,
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
            newer: None,
            updates: statuses.contains(&Status::Update),
            last: HashMap::new(),
            keep: HashSet::new(),
        }
    }

    /// The items of the owner's snapshot in `folder`, but for the documents with an item in
    /// `store` from `snapshot` on.
    pub fn of_owner(
        folder: &Path,
        store: &Path,
        partition: Partition,
        snapshot: Position,
        statuses: &[Status],
    ) -> Live {
        let mut live = Live::new(folder, partition, END, statuses);
        live.newer = Some((
            Cursor::new(store, snapshot, Some(partition)),
            HashSet::new(),
        ));
        live
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
                    let newer = self
                        .newer
                        .as_ref()
                        .is_some_and(|(_, docs)| docs.contains(&s.item.doc_id));
                    if let Some(old) = self.last.insert(s.item.doc_id, at) {
                        self.keep.remove(&old);
                    }
                    if at < self.snapshot
                        && self.updates
                        && s.item.status == Status::Update
                        && !newer
                    {
                        self.keep.insert(at);
                    }
                }
                Ok(None) => return self.catch_up_newer(st),
                Err(e) if e.is_damage() => {
                    log::error!("resend to {}: skipping {e}", st.spec.address);
                    st.corrupt_items
                        .fetch_add(e.items_skipped(), Ordering::Relaxed);
                }
                Err(e) => return Err(fail(format!("reading the store: {e}"))),
            }
        }
    }

    /// Reads the store from the snapshot position on: each document found there is not sent
    /// from the owner's snapshot.
    fn catch_up_newer(&mut self, st: &SenderState) -> Result<(), SessionError> {
        let Some((cursor, docs)) = self.newer.as_mut() else {
            return Ok(());
        };
        loop {
            match cursor.next() {
                Ok(Some(s)) => {
                    if let Some(at) = self.last.get(&s.item.doc_id) {
                        self.keep.remove(at);
                    }
                    docs.insert(s.item.doc_id);
                }
                Ok(None) => return Ok(()),
                // Passed over like the normal stream does: it sends nothing of that item.
                Err(e) if e.is_damage() => {
                    log::error!("resend to {}: skipping {e}", st.spec.address);
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
