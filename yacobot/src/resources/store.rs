//! The resources' segment stores and the emission half of the write protocol
//! (docs/formats.md "Resources write protocol"): items are appended after their `vr_data`
//! changes are committed with `status = 0`, fsynced, and only then marked emitted; recovery
//! finds in the store what a crashed run had already emitted, so that nothing is emitted twice.
//! The items of multi-hit classes go to a store of their own (`Resources.MultiHitDir`,
//! docs/formats.md "Multi-hit classes"), opened when first needed.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use anyhow::Context;
use focuser_formats::segment::{
    now_ms, Cursor, ItemRef, Origin, Position, Status, Writer, WriterOptions,
};
use focuser_schema::models::{
    DataStatus, ProcessTimestamp, ProcessTimestampChanges, UpdateType, VrData,
};
use md5::{Digest, Md5};

use super::digests::DigestDir;
use crate::worker::Ctx;

/// One item to emit.
pub struct Emit<'a> {
    pub status: Status,
    pub doc_id: &'a str,
    pub url: &'a str,
    /// The canonical form for an `UPDATE`, empty for a `DELETE`.
    pub content: &'a str,
}

/// The first class of the multi-hit path (the source's `class_id > 70000000`).
pub const MULTI_HIT_CLASS: u32 = 70_000_000;

/// The folder in each store where resend snapshots are asked for and written.
pub const SNAPSHOTS: &str = "snapshots";

pub fn is_multi_hit(class_id: u32) -> bool {
    class_id >= MULTI_HIT_CLASS
}

pub struct Store {
    dir: PathBuf,
    writer: Mutex<Writer>,
    /// `digests/` in the store's folder: what was emitted, per resource, for the next diff.
    digests: DigestDir,
    multi_dir: PathBuf,
    multi: Mutex<Option<Writer>>,
    opts: WriterOptions,
}

impl Store {
    /// Opens the store, cutting a torn tail a crash left; the multi-hit store (`multi_dir`)
    /// likewise if it exists.
    pub fn open(dir: &Path, multi_dir: &Path, opts: WriterOptions) -> anyhow::Result<Store> {
        let writer = open_writer(dir, &opts)?;
        let digests = dir.join("digests");
        let digests = DigestDir::open(digests.clone())
            .with_context(|| format!("creating {}", digests.display()))?;
        let multi = if multi_dir.exists() {
            Some(open_writer(multi_dir, &opts)?)
        } else {
            None
        };
        Ok(Store {
            dir: dir.to_path_buf(),
            writer: Mutex::new(writer),
            digests,
            multi_dir: multi_dir.to_path_buf(),
            multi: Mutex::new(multi),
            opts,
        })
    }

    pub fn digests(&self) -> &DigestDir {
        &self.digests
    }

    /// Each store's folder of resend snapshots ([`super::snapshot`]) and the classes whose
    /// items it holds.
    pub fn snapshot_dirs(&self) -> [(PathBuf, Range<i64>); 2] {
        let multi = i64::from(MULTI_HIT_CLASS);
        [
            (self.dir.join(SNAPSHOTS), 0..multi),
            (
                self.multi_dir.join(SNAPSHOTS),
                multi..i64::from(u32::MAX) + 1,
            ),
        ]
    }

    pub fn writer_options(&self) -> WriterOptions {
        self.opts
    }

    fn writer(&self) -> anyhow::Result<MutexGuard<'_, Writer>> {
        self.writer
            .lock()
            .map_err(|_| anyhow::anyhow!("resources store lock poisoned"))
    }

    fn multi(&self) -> anyhow::Result<MutexGuard<'_, Option<Writer>>> {
        self.multi
            .lock()
            .map_err(|_| anyhow::anyhow!("multi-hit store lock poisoned"))
    }

    /// Runs `f` on the writer of the store of `class_id`'s items.
    fn with_writer<R>(
        &self,
        class_id: u32,
        f: impl FnOnce(&mut Writer) -> anyhow::Result<R>,
    ) -> anyhow::Result<R> {
        if !is_multi_hit(class_id) {
            return f(&mut *self.writer()?);
        }
        let mut multi = self.multi()?;
        if multi.is_none() {
            *multi = Some(open_writer(&self.multi_dir, &self.opts)?);
        }
        match multi.as_mut() {
            Some(w) => f(w),
            None => Err(anyhow::anyhow!("the multi-hit store is not open")),
        }
    }

    /// The folder of the store of `class_id`'s items.
    fn dir_of(&self, class_id: u32) -> &Path {
        if is_multi_hit(class_id) {
            &self.multi_dir
        } else {
            &self.dir
        }
    }

    /// Where the next item of class `class_id` will go: a run records it before it emits.
    pub fn position(&self, class_id: u32) -> anyhow::Result<Position> {
        self.with_writer(class_id, |w| Ok(w.position()))
    }

    /// Appends the items of a resource of class `class_id` to its store and makes them
    /// durable.
    pub fn emit(&self, class_id: u32, items: &[Emit<'_>]) -> anyhow::Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        self.with_writer(class_id, |w| append(w, items))
    }

    /// Seals the active segments on SIGUSR1 or when they are due.
    pub fn housekeeping(&self, rotate: bool) -> anyhow::Result<()> {
        seal(&mut *self.writer()?, rotate)?;
        if let Some(w) = self.multi()?.as_mut() {
            seal(w, rotate)?;
        }
        Ok(())
    }

    pub fn close(self) -> anyhow::Result<()> {
        let poisoned = || anyhow::anyhow!("resources store lock poisoned");
        let w = self.writer.into_inner().map_err(|_| poisoned())?;
        w.close()?;
        if let Some(m) = self.multi.into_inner().map_err(|_| poisoned())? {
            m.close()?;
        }
        Ok(())
    }

    /// What the store holds from `from` on for these doc ids: the last status and content MD5
    /// emitted for each.
    fn last_emitted(
        &self,
        class_id: u32,
        from: Position,
        doc_ids: &HashSet<&str>,
    ) -> anyhow::Result<HashMap<String, (Status, String)>> {
        let mut cursor = Cursor::new(self.dir_of(class_id), from, None);
        let mut last = HashMap::new();
        loop {
            match cursor.next() {
                Ok(Some(s)) => {
                    let Ok(doc) = std::str::from_utf8(&s.item.doc_id) else {
                        continue;
                    };
                    if doc_ids.contains(doc) {
                        let md5 = hex_md5(&s.item.content);
                        last.insert(doc.to_string(), (s.item.status, md5));
                    }
                }
                Ok(None) => break,
                Err(e) => log::warn!("resources store: recovery skips a bad item: {e}"),
            }
        }
        Ok(last)
    }

    /// Finishes the emission a crashed run of `res_id` (of class `class_id`) left: emits the
    /// pending changes (`vr_data.status = 0`) the store does not hold yet, then marks them
    /// emitted. A pending row whose `update_type` is none of a pending change's (1, 2, 3) is
    /// an error, logged with its row and counted, and emitted as its `data_status` says.
    pub fn recover(&self, ctx: &Ctx, res_id: u32, class_id: u32) -> anyhow::Result<Recovered> {
        let pending = ctx
            .db
            .run("reading pending vr_data", |c| VrData::pending(c, res_id))?;
        let runs = ctx.db.run("reading unfinished runs", |c| {
            ProcessTimestamp::unfinished_emissions(c, res_id)
        })?;
        if pending.is_empty() && runs.is_empty() {
            return Ok(Recovered::default());
        }
        // The earliest position an unfinished run recorded; none known: the whole store.
        let from = runs
            .iter()
            .filter_map(|r| {
                Some(Position {
                    file_id: r.emit_file?,
                    item_idx: r.emit_item?,
                })
            })
            .min()
            .unwrap_or(Position::START);
        let ids: HashSet<&str> = pending.iter().map(|r| r.doc_id.as_str()).collect();
        // The multi-hit store is made when first needed: it exists before it is read.
        self.with_writer(class_id, |_| Ok(()))?;
        let last = self
            .last_emitted(class_id, from, &ids)
            .context("reading the resources store for recovery")?;
        let urls = ctx.db.run("reading feed URLs", |c| {
            focuser_schema::models::ResourceStatus::for_resource(c, res_id)
        })?;
        let url_of: HashMap<u64, &str> = urls.iter().map(|u| (u.id, u.url.as_str())).collect();
        let mut todo = Vec::new();
        let mut unknown_types = 0;
        for r in &pending {
            if !matches!(
                r.update_type,
                UpdateType::Insert | UpdateType::Update | UpdateType::Delete
            ) {
                unknown_types += 1;
                log::error!(
                    "resource {res_id}: vr_data row {} (key \"{}\") is pending with update_type {}, which is no pending change's (1 INSERT, 2 UPDATE1, 3 delete): emitted as its data_status {} says",
                    r.id,
                    r.keyword,
                    r.update_type.code(),
                    r.data_status.code()
                );
            }
            let content = r.content.as_deref().unwrap_or("");
            let want = if r.data_status == DataStatus::Live {
                (Status::Update, r.md5_sum.as_str())
            } else {
                (Status::Delete, EMPTY_MD5)
            };
            let done = last
                .get(&r.doc_id)
                .is_some_and(|(s, m)| *s == want.0 && m == want.1);
            if !done {
                todo.push(Emit {
                    status: want.0,
                    doc_id: &r.doc_id,
                    url: r
                        .status_id
                        .and_then(|s| url_of.get(&s))
                        .copied()
                        .unwrap_or(""),
                    content: if want.0 == Status::Update {
                        content
                    } else {
                        ""
                    },
                });
            }
        }
        self.emit(class_id, &todo)?;
        let now = focuser_daemon::clock::db_now();
        let run_ids: Vec<u64> = runs.iter().map(|r| r.id).collect();
        // By id: the rows checked above, and only their rows locked.
        let rows: Vec<u64> = pending.iter().map(|r| r.id).collect();
        ctx.db.run("marking recovered items emitted", |c| {
            diesel::Connection::transaction(c, |c| {
                VrData::mark_rows_emitted(c, &rows)?;
                for id in &run_ids {
                    ProcessTimestamp::update(
                        c,
                        *id,
                        &ProcessTimestampChanges {
                            write_end: Some(Some(now)),
                            ..Default::default()
                        },
                    )?;
                }
                Ok(())
            })
        })?;
        Ok(Recovered {
            pending: pending.len(),
            emitted: todo.len(),
            unknown_types,
        })
    }
}

/// What a recovery found and did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Recovered {
    /// Rows pending (`status = 0`).
    pub pending: usize,
    /// Items emitted now (the others were in the store).
    pub emitted: usize,
    /// Pending rows whose `update_type` is no pending change's.
    pub unknown_types: usize,
}

fn open_writer(dir: &Path, opts: &WriterOptions) -> anyhow::Result<Writer> {
    let (writer, rec) = Writer::open(dir, *opts)?;
    let snapshots = dir.join(SNAPSHOTS);
    std::fs::create_dir_all(&snapshots)
        .with_context(|| format!("creating {}", snapshots.display()))?;
    if rec.cut_bytes > 0 || rec.index_rebuilt {
        log::warn!(
            "resources store {}: recovered segment {}: cut {} bytes, index rebuilt: {}",
            dir.display(),
            rec.file_id,
            rec.cut_bytes,
            rec.index_rebuilt
        );
    }
    Ok(writer)
}

fn append(w: &mut Writer, items: &[Emit<'_>]) -> anyhow::Result<()> {
    let time_ms = now_ms();
    for e in items {
        w.append_ref(&ItemRef {
            status: e.status,
            doc_id: e.doc_id.as_bytes(),
            url: e.url.as_bytes(),
            content: e.content.as_bytes(),
            time_ms,
            origin: Origin::default(),
        })?;
    }
    w.sync()?;
    Ok(())
}

fn seal(w: &mut Writer, rotate: bool) -> anyhow::Result<()> {
    if rotate {
        w.rotate()?;
    } else {
        w.rotate_if_due()?;
    }
    Ok(())
}

/// The MD5 of nothing: what a `DELETE` item's content hashes to.
const EMPTY_MD5: &str = "d41d8cd98f00b204e9800998ecf8427e";

fn hex_md5(b: &[u8]) -> String {
    focuser_feed::hex::encode(&Md5::digest(b))
}
