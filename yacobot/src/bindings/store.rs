//! The bindings store: a segment store of ad-server items (`UPDATE` keyed by the URL's doc
//! id, `DELETE` when the page has no binding any more) that a reader ships to the ad-server
//! receivers; and the rule that makes every change arrive once across `kill -9`
//! (docs/formats.md "Bindings archive"):
//!
//! 1. a batch's changed bindings are appended to the store and synced, BEFORE its
//!    transaction;
//! 2. the transaction writes `binding_page` and `binding_position`: the store's items before
//!    that place are reflected in `binding_page`.
//!
//! A crash between the two leaves items after the committed place (the tail) that no row
//! records. At open the tail is read: for each doc id, its last item is what the ad server
//! last got (its MD5, or a withdrawal), and it wins over `binding_page` (the *pending*
//! items). The batch is done again from the analysis position, and a binding equal to what
//! the ad server last got is not appended again. The committed place moves to the store's
//! end only when no pending item is left (each is resolved when its page is bound again, or
//! dropped once the analysis has gone past the archive item it came from without binding
//! it: its archive copy was gone), so a second crash reads the same tail again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use focuser_bind::binding::md5_hex;
use focuser_daemon::db::Database;
use focuser_formats::segment::{
    now_ms, Cursor, ItemRef, Origin, Position, Status, Writer, WriterOptions,
};
use focuser_schema::models::{BindingPage, BindingPosition, NewBindingPage};

use super::page::Outcome;

/// What the ad server last got for a doc id and was not committed yet.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    /// The item's MD5; `None`: a withdrawal.
    md5: Option<String>,
    /// The crawl archive item it was made from (the item's origin).
    from: Position,
}

pub struct Store {
    dir: PathBuf,
    /// `binding_position.store`: the folder as the config resolves it.
    pub name: String,
    writer: Writer,
    committed: Position,
    pending: HashMap<u64, Pending>,
}

/// What a batch's transaction writes for the bindings, and what to do once it is committed.
#[derive(Default)]
pub struct Shipment {
    pub rows: Vec<NewBindingPage>,
    pub gone: Vec<u64>,
    /// The committed place to write.
    pub place: (u64, u32),
    /// Items appended (changes shipped), of them withdrawals, and bindings unchanged.
    pub appended: u64,
    pub withdrawn: u64,
    pub unchanged: u64,
    /// Pages bound, their phrases, and of them tragic.
    pub bound: u64,
    pub phrases: u64,
    pub tragic: u64,
    /// The doc ids bound or withdrawn by the batch, and the crawl position it reached.
    done: Vec<u64>,
    reached: Position,
}

/// An item's doc id: 16 lower-case hex digits.
pub fn doc_id(id: u64) -> String {
    format!("{id:016x}")
}

impl Store {
    /// Opens the store (cutting a torn tail) and reads its tail after the committed place.
    pub fn open(
        dir: &Path,
        opts: WriterOptions,
        db: &Database,
        node: &str,
    ) -> anyhow::Result<Store> {
        let (writer, rec) = Writer::open(dir, opts)
            .with_context(|| format!("opening the bindings store {}", dir.display()))?;
        if rec.cut_bytes > 0 || rec.index_rebuilt {
            log::warn!(
                "bindings store {}: recovered segment {}: cut {} bytes, index rebuilt: {}",
                dir.display(),
                rec.file_id,
                rec.cut_bytes,
                rec.index_rebuilt
            );
        }
        let name = dir.display().to_string();
        let row = db.run("reading the bindings position", |c| {
            BindingPosition::find(c, node, &name)
        })?;
        let committed = row.map_or(Position::START, |r| Position {
            file_id: r.file_id,
            item_idx: r.item_idx,
        });
        let mut store = Store {
            dir: dir.to_path_buf(),
            name,
            writer,
            committed,
            pending: HashMap::new(),
        };
        store.read_tail()?;
        if !store.pending.is_empty() {
            log::info!(
                "bindings store {}: {} items after {committed} were appended by a batch that was not committed; they are not appended again",
                store.name,
                store.pending.len()
            );
        }
        Ok(store)
    }

    fn read_tail(&mut self) -> anyhow::Result<()> {
        let mut cursor = Cursor::new(&self.dir, self.committed, None);
        loop {
            let s = match cursor.next() {
                Ok(Some(s)) => s,
                Ok(None) => return Ok(()),
                Err(e) if e.is_damage() => {
                    log::warn!("bindings store {}: reading its tail: {e}", self.name);
                    continue;
                }
                Err(e) => return Err(e).context("reading the bindings store's tail"),
            };
            let id = std::str::from_utf8(&s.item.doc_id)
                .ok()
                .and_then(|d| u64::from_str_radix(d, 16).ok());
            let Some(id) = id else { continue };
            let md5 = (s.item.status == Status::Update).then(|| md5_hex(&s.item.content));
            let from = Position {
                file_id: s.item.origin.file_id,
                item_idx: s.item.origin.item_idx,
            };
            self.pending.insert(id, Pending { md5, from });
        }
    }

    /// Compares the batch's outcomes with what the ad server last got, appends and syncs the
    /// changes, and says what the batch's transaction writes. `reached`: the crawl archive
    /// position after the batch.
    pub fn ship(
        &mut self,
        db: &Database,
        outcomes: &[Outcome],
        reached: Position,
        now: chrono::NaiveDateTime,
    ) -> anyhow::Result<Shipment> {
        // The last outcome of each URL counts (a page archived twice in one batch).
        let mut last: HashMap<u64, &Outcome> = HashMap::new();
        for o in outcomes {
            last.insert(o.id, o);
        }
        let mut ids: Vec<u64> = last.keys().copied().collect();
        ids.sort_unstable();
        let stored: HashMap<u64, String> = db
            .run("reading the stored bindings", |c| {
                BindingPage::md5s(c, &ids)
            })?
            .into_iter()
            .collect();
        let mut out = Shipment {
            reached,
            ..Shipment::default()
        };
        let time_ms = now_ms();
        for id in ids {
            let Some(o) = last.get(&id) else { continue };
            let shipped: Option<String> = match self.pending.get(&id) {
                Some(p) => p.md5.clone(),
                None => stored.get(&id).cloned(),
            };
            let (want, content) = match &o.binding {
                Some(b) => {
                    let item = b.canonical();
                    (Some(md5_hex(item.as_bytes())), item)
                }
                None => (None, String::new()),
            };
            out.done.push(id);
            if let Some(b) = &o.binding {
                out.bound += 1;
                out.tragic += u64::from(b.tragic);
                out.phrases += b
                    .bindings
                    .iter()
                    .map(|t| t.phrases.len() as u64)
                    .sum::<u64>();
            }
            if want == shipped {
                out.unchanged += u64::from(want.is_some());
            } else {
                let doc = doc_id(id);
                let url = o.binding.as_ref().map_or("", |b| b.url.as_str());
                self.writer.append_ref(&ItemRef {
                    status: if want.is_some() {
                        Status::Update
                    } else {
                        Status::Delete
                    },
                    doc_id: doc.as_bytes(),
                    url: url.as_bytes(),
                    content: content.as_bytes(),
                    time_ms,
                    origin: Origin {
                        stream: 0,
                        file_id: o.place.file_id,
                        item_idx: o.place.item_idx,
                    },
                })?;
                out.appended += 1;
                out.withdrawn += u64::from(want.is_none());
                // In the store from now on, committed or not.
                self.pending.insert(
                    id,
                    Pending {
                        md5: want.clone(),
                        from: o.place,
                    },
                );
            }
            match (&o.binding, want) {
                (Some(b), Some(md5)) if stored.get(&id) != Some(&md5) => {
                    out.rows.push(row(b, md5, content, now));
                }
                (None, _) if stored.contains_key(&id) => out.gone.push(id),
                _ => {}
            }
        }
        if out.appended > 0 {
            self.writer.sync().context("syncing the bindings store")?;
        }
        let left = self
            .pending
            .iter()
            .any(|(id, p)| out.done.binary_search(id).is_err() && p.from >= reached);
        let place = if left {
            self.committed
        } else {
            self.writer.position()
        };
        out.place = (place.file_id, place.item_idx);
        Ok(out)
    }

    /// The batch's transaction committed: its pending items are resolved.
    pub fn committed(&mut self, s: &Shipment) {
        for id in &s.done {
            self.pending.remove(id);
        }
        self.pending.retain(|_, p| p.from >= s.reached);
        self.committed = Position {
            file_id: s.place.0,
            item_idx: s.place.1,
        };
    }

    /// Seals the active segment when it is due (a reader ships sealed and active segments
    /// alike; this bounds a segment's age and size).
    pub fn housekeeping(&mut self) -> anyhow::Result<()> {
        self.writer.rotate_if_due()?;
        Ok(())
    }

    pub fn close(self) -> anyhow::Result<()> {
        self.writer.close()?;
        Ok(())
    }
}

fn row(
    b: &focuser_bind::PageBinding,
    md5: String,
    item: String,
    now: chrono::NaiveDateTime,
) -> NewBindingPage {
    NewBindingPage {
        id: b.doc,
        md5,
        item,
        tragic: b.tragic,
        phrases: b.bindings.iter().map(|t| t.phrases.len() as u32).sum(),
        dict_versions: b
            .dict_versions()
            .iter()
            .map(|(k, v)| format!("{}:{v:016x}", k.name()))
            .collect::<Vec<_>>()
            .join(","),
        bound_at: now,
    }
}
