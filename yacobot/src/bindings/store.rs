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
use focuser_formats::segment::record::record_len;
use focuser_formats::segment::{
    item_path, now_ms, Cursor, ItemRef, Origin, Position, Status, Writer, WriterOptions,
};
use focuser_schema::models::{BindingPage, BindingPosition, NewBindingPage};

use super::page::Outcome;

/// A binding to append: its outcome, its MD5 (`None`: a withdrawal) and its item.
struct Change<'a> {
    outcome: &'a Outcome,
    md5: Option<String>,
    content: String,
}

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
    opts: WriterOptions,
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

/// Opens an ad-server item store's writer (cutting a torn tail, said in the log) and reads
/// its committed place (`binding_position`, keyed by node and the folder as the config
/// resolves it). `what` names the store in messages: `bindings`, `stubs`.
pub fn open_writer(
    dir: &Path,
    opts: WriterOptions,
    db: &Database,
    node: &str,
    what: &str,
) -> anyhow::Result<(Writer, String, Position)> {
    let (writer, rec) = Writer::open(dir, opts)
        .with_context(|| format!("opening the {what} store {}", dir.display()))?;
    if rec.cut_bytes > 0 || rec.index_rebuilt {
        log::warn!(
            "{what} store {}: recovered segment {}: cut {} bytes, index rebuilt: {}",
            dir.display(),
            rec.file_id,
            rec.cut_bytes,
            rec.index_rebuilt
        );
    }
    let name = dir.display().to_string();
    let row = db.run(&format!("reading the {what} position"), |c| {
        BindingPosition::find(c, node, &name)
    })?;
    let committed = row.map_or(Position::START, |r| Position {
        file_id: r.file_id,
        item_idx: r.item_idx,
    });
    Ok((writer, name, committed))
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
        let (writer, name, committed) = open_writer(dir, opts, db, node, "bindings")?;
        let mut store = Store {
            dir: dir.to_path_buf(),
            opts,
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
        for t in read_tail(&self.dir, self.committed, &self.name)? {
            self.pending.insert(
                t.key,
                Pending {
                    md5: t.md5,
                    from: t.from,
                },
            );
        }
        Ok(())
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
        let mut changes: Vec<Change<'_>> = Vec::new();
        for id in ids {
            let Some(o) = last.get(&id) else { continue };
            out.done.push(id);
            let (want, content) = match &o.binding {
                Some(b) => {
                    out.bound += 1;
                    out.tragic += u64::from(b.tragic);
                    out.phrases += b
                        .bindings
                        .iter()
                        .map(|t| t.phrases.len() as u64)
                        .sum::<u64>();
                    let item = b.canonical();
                    (Some(md5_hex(item.as_bytes())), item)
                }
                None => (None, String::new()),
            };
            let shipped = match self.pending.get(&id) {
                Some(p) => p.md5.as_ref(),
                None => stored.get(&id),
            };
            match (&o.binding, &want) {
                (Some(b), Some(md5)) if stored.get(&id) != Some(md5) => {
                    out.rows.push(row(b, md5.clone(), content.clone(), now));
                }
                (None, _) if stored.contains_key(&id) => out.gone.push(id),
                _ => {}
            }
            if want.as_ref() == shipped {
                out.unchanged += u64::from(want.is_some());
            } else {
                changes.push(Change {
                    outcome: o,
                    md5: want,
                    content,
                });
            }
        }
        self.append(&changes)?;
        out.appended = changes.len() as u64;
        out.withdrawn = changes.iter().filter(|c| c.md5.is_none()).count() as u64;
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

    /// Appends a batch's changes and syncs them; they are pending from now on, committed or
    /// not. They go into one segment (the active one, or a new one if they would not fit):
    /// the segments a reader may delete once shipped never hold part of a batch that is not
    /// committed, so recovery always finds a crashed batch's items whole in the tail.
    fn append(&mut self, changes: &[Change<'_>]) -> anyhow::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let need: u64 = changes
            .iter()
            .map(|c| {
                let url = c.outcome.binding.as_ref().map_or(0, |b| b.url.len());
                record_len(16, url, c.content.len()).unwrap_or(usize::MAX) as u64
            })
            .sum();
        make_room(&mut self.writer, &self.dir, &self.opts, changes.len(), need)?;
        let time_ms = now_ms();
        for c in changes {
            let o = c.outcome;
            let doc = doc_id(o.id);
            let url = o.binding.as_ref().map_or("", |b| b.url.as_str());
            self.writer.append_ref(&ItemRef {
                status: if c.md5.is_some() {
                    Status::Update
                } else {
                    Status::Delete
                },
                doc_id: doc.as_bytes(),
                url: url.as_bytes(),
                content: c.content.as_bytes(),
                time_ms,
                origin: Origin {
                    stream: 0,
                    file_id: o.place.file_id,
                    item_idx: o.place.item_idx,
                },
            })?;
            self.pending.insert(
                o.id,
                Pending {
                    md5: c.md5.clone(),
                    from: o.place,
                },
            );
        }
        self.writer.sync().context("syncing the bindings store")?;
        Ok(())
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

/// An item of a store's tail: its key (the record's doc id), its MD5 (`None`: a withdrawal)
/// and the place it was made from (the record's origin).
pub(crate) struct TailItem {
    pub key: u64,
    pub md5: Option<String>,
    pub from: Position,
}

/// The items of the store in `dir` from `from` on (what a batch that was not committed may
/// have appended), damaged records logged and passed over.
pub(crate) fn read_tail(dir: &Path, from: Position, name: &str) -> anyhow::Result<Vec<TailItem>> {
    let mut cursor = Cursor::new(dir, from, None);
    let mut out = Vec::new();
    loop {
        let s = match cursor.next() {
            Ok(Some(s)) => s,
            Ok(None) => return Ok(out),
            Err(e) if e.is_damage() => {
                log::warn!("store {name}: reading its tail: {e}");
                continue;
            }
            Err(e) => return Err(e).with_context(|| format!("reading the tail of {name}")),
        };
        let key = std::str::from_utf8(&s.item.doc_id)
            .ok()
            .and_then(|d| u64::from_str_radix(d, 16).ok());
        let Some(key) = key else { continue };
        out.push(TailItem {
            key,
            md5: (s.item.status == Status::Update).then(|| md5_hex(&s.item.content)),
            from: Position {
                file_id: s.item.origin.file_id,
                item_idx: s.item.origin.item_idx,
            },
        });
    }
}

/// Seals the active segment when `items` records of `need` bytes in all would not fit in it:
/// a batch's items go into one segment (the segments a reader may delete once shipped never
/// hold part of a batch that is not committed, so recovery finds a crashed batch whole in the
/// tail).
pub(crate) fn make_room(
    writer: &mut Writer,
    dir: &Path,
    opts: &WriterOptions,
    items: usize,
    need: u64,
) -> anyhow::Result<()> {
    let at = writer.position();
    let held = u64::from(at.item_idx.saturating_sub(1));
    let bytes = std::fs::metadata(item_path(dir, at.file_id)).map_or(0, |m| m.len());
    if held > 0
        && (held + items as u64 > u64::from(opts.max_items)
            || bytes.saturating_add(need) > opts.max_bytes)
    {
        writer
            .rotate()
            .with_context(|| format!("sealing the active segment of {}", dir.display()))?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use focuser_bind::PageBinding;
    use focuser_formats::segment::SyncPolicy;

    use super::*;

    fn outcome(id: u64) -> Outcome {
        Outcome {
            id,
            place: Position {
                file_id: 1,
                item_idx: id as u32,
            },
            binding: Some(PageBinding::new(
                id,
                &format!("http://a.test/{id}"),
                false,
                vec![],
            )),
        }
    }

    #[test]
    fn a_batch_never_straddles_two_segments() {
        let dir = tempfile::tempdir().unwrap();
        let opts = WriterOptions {
            max_age_s: 3600,
            max_items: 5,
            max_bytes: 1 << 30,
            sync: SyncPolicy {
                every_items: 1000,
                every_ms: 1000,
            },
        };
        let (writer, _) = Writer::open(dir.path(), opts).unwrap();
        let mut store = Store {
            dir: dir.path().to_path_buf(),
            opts,
            name: "test".into(),
            writer,
            committed: Position::START,
            pending: HashMap::new(),
        };
        let batch = |ids: std::ops::Range<u64>| -> Vec<Outcome> { ids.map(outcome).collect() };
        let changes = |o: &[Outcome]| -> Vec<(u64, String)> {
            o.iter()
                .map(|o| (o.id, o.binding.as_ref().unwrap().canonical()))
                .collect()
        };
        // (batch, the segments its items go to): a batch that does not fit in the active
        // segment starts a new one; one larger than a segment cannot help straddling.
        let batches = [
            (0..3, vec![1]),
            (3..6, vec![2]),
            (6..8, vec![2]),
            (8..14, vec![3, 4]),
            (14..15, vec![4]),
        ];
        for (ids, _) in &batches {
            let outcomes = batch(ids.clone());
            let c = changes(&outcomes);
            let list: Vec<Change<'_>> = outcomes
                .iter()
                .zip(&c)
                .map(|(o, (_, item))| Change {
                    outcome: o,
                    md5: Some(md5_hex(item.as_bytes())),
                    content: item.clone(),
                })
                .collect();
            store.append(&list).unwrap();
        }
        let mut segment_of = HashMap::new();
        let mut cursor = Cursor::new(dir.path(), Position::START, None);
        while let Some(s) = cursor.next().unwrap() {
            let doc = u64::from_str_radix(std::str::from_utf8(&s.item.doc_id).unwrap(), 16);
            segment_of.insert(doc.unwrap(), s.file_id);
        }
        for (ids, segments) in batches {
            let mut got: Vec<u64> = ids.clone().map(|id| segment_of[&id]).collect();
            got.dedup();
            assert_eq!(got, segments, "{ids:?}");
        }
        assert_eq!(store.pending.len(), 15);
    }
}
