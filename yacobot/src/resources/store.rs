//! The resources' segment store and the emission half of the write protocol
//! (docs/formats.md "Resources write protocol"): items are appended after their `vr_data`
//! changes are committed with `status = 0`, fsynced, and only then marked emitted; recovery
//! finds in the store what a crashed run had already emitted, so that nothing is emitted twice.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use anyhow::Context;
use focuser_formats::segment::{
    now_ms, Cursor, ItemRef, Origin, Position, Status, Writer, WriterOptions,
};
use focuser_schema::models::{DataStatus, ProcessTimestamp, ProcessTimestampChanges, VrData};
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

pub struct Store {
    dir: PathBuf,
    writer: Mutex<Writer>,
    /// `digests/` in the store's folder: what was emitted, per resource, for the next diff.
    digests: DigestDir,
}

impl Store {
    /// Opens the store, cutting a torn tail a crash left.
    pub fn open(dir: &Path, opts: WriterOptions) -> anyhow::Result<Store> {
        let (writer, rec) = Writer::open(dir, opts)?;
        if rec.cut_bytes > 0 || rec.index_rebuilt {
            log::warn!(
                "resources store {}: recovered segment {}: cut {} bytes, index rebuilt: {}",
                dir.display(),
                rec.file_id,
                rec.cut_bytes,
                rec.index_rebuilt
            );
        }
        let digests = dir.join("digests");
        let digests = DigestDir::open(digests.clone())
            .with_context(|| format!("creating {}", digests.display()))?;
        Ok(Store {
            dir: dir.to_path_buf(),
            writer: Mutex::new(writer),
            digests,
        })
    }

    pub fn digests(&self) -> &DigestDir {
        &self.digests
    }

    fn writer(&self) -> anyhow::Result<MutexGuard<'_, Writer>> {
        self.writer
            .lock()
            .map_err(|_| anyhow::anyhow!("resources store lock poisoned"))
    }

    /// Where the next item will go: a run records it before it emits.
    pub fn position(&self) -> anyhow::Result<Position> {
        Ok(self.writer()?.position())
    }

    /// Appends the items and makes them durable.
    pub fn emit(&self, items: &[Emit<'_>]) -> anyhow::Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        let mut w = self.writer()?;
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

    /// Seals the active segment on SIGUSR1 or when it is due.
    pub fn housekeeping(&self, rotate: bool) -> anyhow::Result<()> {
        let mut w = self.writer()?;
        if rotate {
            w.rotate()?;
        } else {
            w.rotate_if_due()?;
        }
        Ok(())
    }

    pub fn close(self) -> anyhow::Result<()> {
        let w = self
            .writer
            .into_inner()
            .map_err(|_| anyhow::anyhow!("resources store lock poisoned"))?;
        w.close()?;
        Ok(())
    }

    /// What the store holds from `from` on for these doc ids: the last status and content MD5
    /// emitted for each.
    fn last_emitted(
        &self,
        from: Position,
        doc_ids: &HashSet<&str>,
    ) -> anyhow::Result<HashMap<String, (Status, String)>> {
        let mut cursor = Cursor::new(&self.dir, from, None);
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

    /// Finishes the emission a crashed run of `res_id` left: emits the pending changes
    /// (`vr_data.status = 0`) the store does not hold yet, then marks them emitted. Returns
    /// (pending rows, items emitted now).
    pub fn recover(&self, ctx: &Ctx, res_id: u32) -> anyhow::Result<(usize, usize)> {
        let pending = ctx
            .db
            .run("reading pending vr_data", |c| VrData::pending(c, res_id))?;
        let runs = ctx.db.run("reading unfinished runs", |c| {
            ProcessTimestamp::unfinished_emissions(c, res_id)
        })?;
        if pending.is_empty() && runs.is_empty() {
            return Ok((0, 0));
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
        let last = self
            .last_emitted(from, &ids)
            .context("reading the resources store for recovery")?;
        let urls = ctx.db.run("reading feed URLs", |c| {
            focuser_schema::models::ResourceStatus::for_resource(c, res_id)
        })?;
        let url_of: HashMap<u64, &str> = urls.iter().map(|u| (u.id, u.url.as_str())).collect();
        let mut todo = Vec::new();
        for r in &pending {
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
        self.emit(&todo)?;
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
        Ok((pending.len(), todo.len()))
    }
}

/// The MD5 of nothing: what a `DELETE` item's content hashes to.
const EMPTY_MD5: &str = "d41d8cd98f00b204e9800998ecf8427e";

fn hex_md5(b: &[u8]) -> String {
    focuser_feed::hex::encode(&Md5::digest(b))
}
