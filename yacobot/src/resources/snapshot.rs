//! Resend snapshots (docs/formats.md "Resend snapshots"): a reader rebuilding a receiver of a
//! resources store cannot read the live set from the store (its shipped segments are gone),
//! so it asks for it with `<name>.ask` in the store's `snapshots/` folder; a thread of the
//! resources worker writes every live `vr_data` item of that store's classes as an `UPDATE`
//! item into `<name>.tmp/`, with a manifest, and renames it `<name>/`.
//!
//! Why it is whole: the store's position `P` is taken before the rows are read, and a change
//! is committed to `vr_data` before its item is appended (docs/formats.md "Resources write
//! protocol"). So any row that changes after its read here has an item at or after `P` in
//! the store, which the reader sends in the snapshot's place; any other row is read as its
//! last item before `P` left it. A crash leaves `<name>.tmp/`, done again at the next start.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use focuser_formats::fsutil;
use focuser_formats::segment::{now_ms, ItemRef, Origin, Status, Writer};
use focuser_formats::snapshot::{valid_name, Ask, Manifest, ASK_SUFFIX, MANIFEST};
use focuser_schema::models::VrData;

use super::stats::ResourceStats;
use super::store::Store;
use crate::status::add;
use crate::worker::Ctx;

/// Rows read per query.
const CHUNK: i64 = 2000;

/// The thread that answers asks, until `stop` (or the daemon's stop).
pub struct Snapshots {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Snapshots {
    pub fn start(
        ctx: &Arc<Ctx>,
        store: &Arc<Store>,
        stats: &Arc<ResourceStats>,
    ) -> anyhow::Result<Snapshots> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ctx, store, stats, flag) = (
            Arc::clone(ctx),
            Arc::clone(store),
            Arc::clone(stats),
            Arc::clone(&stop),
        );
        let thread = std::thread::Builder::new()
            .name("vr-snapshots".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) && !ctx.stop.is_set() {
                    for (dir, classes) in store.snapshot_dirs() {
                        answer(&ctx, &store, &stats, &dir, &classes, &flag);
                    }
                    ctx.stop.sleep(Duration::from_secs(1));
                }
            })?;
        Ok(Snapshots { stop, thread })
    }

    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
    }
}

/// Answers the asks in `dir`: each one without its snapshot gets it; a bad one is refused.
fn answer(
    ctx: &Ctx,
    store: &Store,
    stats: &ResourceStats,
    dir: &Path,
    classes: &Range<i64>,
    stop: &AtomicBool,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .collect();
    for file in &names {
        let Some(name) = file.strip_suffix(ASK_SUFFIX) else {
            // A snapshot begun for an ask that is gone (the resend was cancelled).
            if let Some(name) = file.strip_suffix(".tmp") {
                if !names.contains(&format!("{name}{ASK_SUFFIX}")) {
                    let _ = std::fs::remove_dir_all(dir.join(file));
                }
            }
            continue;
        };
        if names.iter().any(|n| n == name) {
            continue;
        }
        let ask = dir.join(file);
        let checked = if valid_name(name) {
            Ask::read(&ask).map_err(|e| e.to_string())
        } else {
            Err(format!(
                "{}: not a snapshot name (1 to 200 of A-Z a-z 0-9 . _ -, not starting with a dot)",
                ask.display()
            ))
        };
        let who = match checked {
            Ok(a) => a,
            Err(e) => {
                refuse(stats, &ask, &e);
                continue;
            }
        };
        log::info!(
            "resources: writing the live items for the resend to {} (stream {}) into {}",
            who.receiver,
            who.stream,
            dir.join(name).display()
        );
        match write(ctx, store, dir, name, classes, stop) {
            Ok(Some(m)) => {
                add(&stats.snapshots, 1);
                add(&stats.snapshot_items, m.items);
                log::info!(
                    "resources: snapshot {name} written: {} live items, the store at {}",
                    m.items,
                    m.position
                );
            }
            Ok(None) => return,
            Err(e) => {
                add(&stats.snapshot_errors, 1);
                log::error!("resources: snapshot {name}: {e:#}; tried again in a second");
            }
        }
    }
}

/// A bad ask: logged, counted, moved aside so that it is not tried again.
fn refuse(stats: &ResourceStats, ask: &Path, why: &str) {
    add(&stats.snapshot_asks_refused, 1);
    let aside = PathBuf::from(format!("{}.bad", ask.display()));
    match std::fs::rename(ask, &aside) {
        Ok(()) => log::error!(
            "resources: snapshot request refused: {why}; moved to {}",
            aside.display()
        ),
        Err(e) => log::error!("resources: snapshot request refused: {why}; moving it aside: {e}"),
    }
}

/// Writes and publishes snapshot `name`; `None` if stopped first.
fn write(
    ctx: &Ctx,
    store: &Store,
    dir: &Path,
    name: &str,
    classes: &Range<i64>,
    stop: &AtomicBool,
) -> anyhow::Result<Option<Manifest>> {
    let tmp = dir.join(format!("{name}.tmp"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
    }
    std::fs::create_dir(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    // Before any row is read: every later change has its item from here on.
    let class = u32::try_from(classes.start).unwrap_or(u32::MAX);
    let position = store.position(class)?;
    let (mut w, _) = Writer::open(&tmp, store.writer_options())?;
    let (mut after, mut items) = (0u64, 0u64);
    loop {
        if stop.load(Ordering::SeqCst) || ctx.stop.is_set() {
            return Ok(None);
        }
        let rows = ctx
            .db
            .run("reading live vr_data for a resend snapshot", |c| {
                VrData::snapshot_items(c, classes.clone(), after, CHUNK)
            })?;
        let Some(last) = rows.last() else { break };
        after = last.id;
        let time_ms = now_ms();
        for r in &rows {
            w.append_ref(&ItemRef {
                status: Status::Update,
                doc_id: r.doc_id.as_bytes(),
                url: r.url.as_bytes(),
                content: r.content.as_deref().unwrap_or("").as_bytes(),
                time_ms,
                origin: Origin::default(),
            })?;
            w.rotate_if_due()?;
        }
        items += rows.len() as u64;
    }
    w.sync()?;
    w.close()?;
    let m = Manifest { items, position };
    fsutil::write_atomically(&tmp.join(MANIFEST), |f| {
        std::io::Write::write_all(f, m.encode().as_bytes())
    })
    .with_context(|| format!("writing {}", tmp.join(MANIFEST).display()))?;
    let published = dir.join(name);
    fsutil::publish(&tmp, &published)
        .with_context(|| format!("publishing {}", published.display()))?;
    Ok(Some(m))
}
