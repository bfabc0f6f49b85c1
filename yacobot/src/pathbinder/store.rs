//! The stubs store: a segment store of ad-server items (`stub` and `query_args`, `UPDATE`
//! keyed by the item's key, `DELETE` when it is withdrawn) that a reader ships to the
//! ad-server receivers, beside the bindings store; the same rule as the bindings store's
//! (docs/formats.md "Bindings archive") makes every change arrive once across `kill -9`:
//!
//! 1. a domain's changed items are appended and synced BEFORE its transaction;
//! 2. the transaction writes `path_stub` and the store's committed place (`binding_position`,
//!    keyed by `PathBinder.Dir`).
//!
//! At open the items after the committed place (appended by a domain that was not committed)
//! are read: for each key, its last one is what the ad server last got and wins over
//! `path_stub` (the *pending* items). A pending item is resolved when its domain is done
//! again; one no domain claims by the end of a pass (its section's pages went away meanwhile)
//! is withdrawn. The committed place moves to the store's end only when none is pending.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use focuser_bind::binding::md5_hex;
use focuser_bind::Item;
use focuser_daemon::db::Database;
use focuser_formats::segment::record::record_len;
use focuser_formats::segment::{now_ms, ItemRef, Origin, Position, Status, Writer, WriterOptions};

use crate::bindings::store::{doc_id, make_room, open_writer, read_tail};

/// A change to append: a new or changed item, or the withdrawal of a key.
pub enum Change {
    Ship(Item),
    Withdraw(u64),
}

impl Change {
    pub fn key(&self) -> u64 {
        match self {
            Change::Ship(i) => i.key(),
            Change::Withdraw(k) => *k,
        }
    }
}

pub struct StubStore {
    dir: PathBuf,
    opts: WriterOptions,
    /// `binding_position.store`: the folder as the config resolves it.
    pub name: String,
    writer: Writer,
    committed: Position,
    /// What the ad server last got and `path_stub` does not say yet: MD5, `None` a withdrawal.
    pending: HashMap<u64, Option<String>>,
}

impl StubStore {
    /// Opens the store (cutting a torn tail) and reads its tail after the committed place.
    pub fn open(
        dir: &Path,
        opts: WriterOptions,
        db: &Database,
        node: &str,
    ) -> anyhow::Result<StubStore> {
        let (writer, name, committed) = open_writer(dir, opts, db, node, "stubs")?;
        let mut pending = HashMap::new();
        for t in read_tail(dir, committed, &name)? {
            pending.insert(t.key, t.md5);
        }
        if !pending.is_empty() {
            log::info!(
                "stubs store {name}: {} items after {committed} were appended by a pass that was not committed; they are not appended again",
                pending.len()
            );
        }
        Ok(StubStore {
            dir: dir.to_path_buf(),
            opts,
            name,
            writer,
            committed,
            pending,
        })
    }

    /// What the ad server last got for `key` when it differs from `path_stub`: `Some(None)` a
    /// withdrawal, `Some(Some(md5))` an item.
    pub fn pending(&self, key: u64) -> Option<Option<&str>> {
        self.pending.get(&key).map(Option::as_deref)
    }

    /// The pending keys that are items, not withdrawals.
    pub fn pending_items(&self) -> Vec<u64> {
        let mut keys: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, m)| m.is_some())
            .map(|(k, _)| *k)
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Every pending key.
    pub fn pending_keys(&self) -> Vec<u64> {
        self.pending.keys().copied().collect()
    }

    /// Appends `changes` and syncs them, in one segment; they are pending from now on.
    pub fn append(&mut self, changes: &[Change]) -> anyhow::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let rendered: Vec<(u64, String, String)> = changes
            .iter()
            .map(|c| match c {
                Change::Ship(i) => (i.key(), label(i), i.render()),
                Change::Withdraw(k) => (*k, String::new(), String::new()),
            })
            .collect();
        let need: u64 = rendered
            .iter()
            .map(|(_, url, content)| {
                record_len(16, url.len(), content.len()).unwrap_or(usize::MAX) as u64
            })
            .sum();
        make_room(&mut self.writer, &self.dir, &self.opts, changes.len(), need)?;
        let time_ms = now_ms();
        for (key, url, content) in &rendered {
            let doc = doc_id(*key);
            self.writer.append_ref(&ItemRef {
                status: if content.is_empty() {
                    Status::Delete
                } else {
                    Status::Update
                },
                doc_id: doc.as_bytes(),
                url: url.as_bytes(),
                content: content.as_bytes(),
                time_ms,
                origin: Origin::default(),
            })?;
            let md5 = (!content.is_empty()).then(|| md5_hex(content.as_bytes()));
            self.pending.insert(*key, md5);
        }
        self.writer.sync().context("syncing the stubs store")?;
        Ok(())
    }

    /// The place the transaction that resolves `keys` writes: the store's end when nothing
    /// else is pending, the committed place otherwise.
    pub fn place_after(&self, keys: &[u64]) -> Position {
        if self.pending.keys().all(|k| keys.contains(k)) {
            self.writer.position()
        } else {
            self.committed
        }
    }

    /// The transaction that resolves `keys` and writes `place` committed.
    pub fn committed(&mut self, keys: &[u64], place: Position) {
        for k in keys {
            self.pending.remove(k);
        }
        self.committed = place;
    }

    pub fn housekeeping(&mut self) -> anyhow::Result<()> {
        self.writer.rotate_if_due()?;
        Ok(())
    }

    pub fn close(self) -> anyhow::Result<()> {
        self.writer.close()?;
        Ok(())
    }
}

/// The record's URL field: the section, or the host.
fn label(item: &Item) -> String {
    match item {
        Item::Binding(b) => b.url.clone(),
        Item::Stub(s) => s.section.clone(),
        Item::QueryArgs(q) => q.host.clone(),
    }
}
