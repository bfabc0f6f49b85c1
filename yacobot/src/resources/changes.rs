//! Steps 1 and 2 of the resources write protocol for one run (docs/formats.md "Resources
//! write protocol"): the diff against the stored items, the `vr_data` changes committed with
//! `status = 0`, the items appended to the store and fsynced; and the resource's items as
//! they stand after the run, for its next item digest file.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use focuser_feed::detail::{Counts, FetchDetail};
use focuser_feed::diff::{self, Current, Plan, Previous, Valve};
use focuser_feed::doc_id::item_doc_id;
use focuser_feed::items::md5_hex;
use focuser_formats::segment::Status;
use focuser_schema::models::{
    DataStatus, ItemWrite, ProcessTimestamp, ProcessTimestampChanges, ResourceStatus, RunWrite,
    VrData, VrResource,
};

use focuser_daemon::clock;

use super::digests::Entry;
use super::known::{Reading, Stored};
use super::locations::relocations;
use super::run::{Acc, GoodItem, RunShared};
use super::stats::ResourceStats;
use super::store::{Emit, Store};
use crate::status::add;
use crate::worker::Ctx;

/// A thread of the write stage: what it writes with, and the claim its writes must hold.
pub struct Writer<'a> {
    pub ctx: &'a Ctx,
    pub stats: &'a ResourceStats,
    pub store: &'a Store,
    /// `node/pid`, as in `vr_resource.claimed_by`.
    pub owner: &'a str,
}

impl Writer<'_> {
    /// How the run's stored items are read.
    pub fn reading(&self) -> Reading<'_> {
        Reading {
            ctx: self.ctx,
            stats: self.stats,
            digests: self.store.digests(),
        }
    }
}

/// What a run's write came to.
pub struct Written {
    /// Live items before and after.
    pub before: u32,
    pub after: u32,
    pub unchanged: u64,
    /// Every item of the resource after the run (its next digest file); `None` when the
    /// claim was lost before the write, which then wrote nothing.
    pub next: Option<Vec<Entry>>,
}

/// Diffs the run's items against the stored ones and writes the changes (steps 1 and 2).
pub fn write_items(
    w: &Writer<'_>,
    run: &RunShared,
    acc: &mut Acc,
    valve: Valve,
    stamp: &mut ProcessTimestampChanges,
) -> anyhow::Result<Written> {
    let t0 = Instant::now();
    let known = run.known.take(&w.reading(), &run.claimed)?;
    let read_ms = t0.elapsed().as_millis();
    let live: Vec<usize> = (0..known.items.len())
        .filter(|&n| known.items[n].entry.data_status == DataStatus::Live)
        .collect();
    let plan = plan(&known.items, &live, acc, valve);
    let mut detail = FetchDetail::new();
    std::mem::swap(&mut detail, &mut acc.detail);
    detail.counts(Counts::of(&plan, acc.failed));
    if let Some(v) = &plan.valve {
        detail.valve(v);
    }
    acc.detail = detail;
    stamp.inserted = Some(plan.inserts.len() as u32);
    stamp.updated = Some(plan.updates.len() as u32);
    stamp.deleted = Some(plan.deletes.len() as u32);
    let before = live.len() as u32;
    let after = before + plan.inserts.len() as u32 - plan.deletes.len() as u32;
    let unchanged = plan.unchanged as u64;
    if !(plan.inserts.is_empty() && plan.updates.is_empty() && plan.deletes.is_empty()) {
        let deleted: Vec<usize> = plan.deletes.iter().map(|&d| live[d]).collect();
        let first = ProcessTimestampChanges {
            write_start: stamp.write_start,
            fetch_end: stamp.fetch_end,
            ..Default::default()
        };
        let stored = Known {
            items: &known.items,
            from_file: known.from_file,
            deleted: &deleted,
            timer: (read_ms, t0),
        };
        if !write_changes(w, run, acc, &stored, &plan, first)? {
            acc.detail
                .failure("the run's claim was lost before its write: nothing written".into());
            stamp.inserted = Some(0);
            stamp.updated = Some(0);
            stamp.deleted = Some(0);
            return Ok(Written {
                before,
                after: before,
                unchanged,
                next: None,
            });
        }
    }
    relocate(w, run, acc, &plan)?;
    let next = Some(next_entries(known.items, &acc.items, &plan, &live));
    Ok(Written {
        before,
        after,
        unchanged,
        next,
    })
}

/// The diff of the run's items against the live stored ones (`live`: their indices in
/// `items`), with the MD5s it needs and those of the items it writes.
fn plan(items: &[Stored], live: &[usize], acc: &mut Acc, valve: Valve) -> Plan {
    // The diff compares by digest where the stored item has one, else by MD5: compute the
    // MD5s it needs, and only those.
    let undigested: HashSet<&str> = live
        .iter()
        .map(|&n| &items[n].entry)
        .filter(|e| e.digest.is_none())
        .map(|e| e.keyword.as_str())
        .collect();
    if !undigested.is_empty() {
        for it in acc.items.iter_mut() {
            if undigested.contains(it.keyword.as_str()) {
                it.md5 = md5_hex(&it.canonical);
            }
        }
    }
    drop(undigested);
    let plan = {
        let previous: Vec<Previous<'_>> = live
            .iter()
            .map(|&n| {
                let e = &items[n].entry;
                Previous {
                    keyword: &e.keyword,
                    md5: &e.md5,
                    digest: e.digest,
                    status_id: e.status_id,
                }
            })
            .collect();
        let current: Vec<Current<'_>> = acc
            .items
            .iter()
            .map(|i| Current {
                keyword: &i.keyword,
                md5: &i.md5,
                digest: Some(i.digest),
            })
            .collect();
        let protected = &acc.protected;
        diff::plan(&previous, &current, acc.failed, valve, |p| {
            p.status_id.is_some_and(|s| protected.contains(&s))
        })
    };
    for &i in plan.inserts.iter().chain(&plan.updates) {
        let it = &mut acc.items[i];
        if it.md5.is_empty() {
            it.md5 = md5_hex(&it.canonical);
        }
    }
    plan
}

/// The stored items as `write_changes` needs them.
struct Known<'a> {
    items: &'a [Stored],
    from_file: bool,
    /// Indices into `items` of the live items gone from this run.
    deleted: &'a [usize],
    /// Milliseconds the read took, and when it began.
    timer: (u128, Instant),
}

/// Writes the plan (steps 1 and 2); `false` when the run no longer holds its claim: another
/// worker may have taken the resource and read `vr_data` already, so nothing is written.
fn write_changes(
    w: &Writer<'_>,
    run: &RunShared,
    acc: &Acc,
    stored: &Known<'_>,
    plan: &Plan,
    first: ProcessTimestampChanges,
) -> anyhow::Result<bool> {
    let res_id = run.res_id();
    let (known, deleted) = (stored.items, stored.deleted);
    let by_key: HashMap<&str, &Stored> = known
        .iter()
        .map(|k| (k.entry.keyword.as_str(), k))
        .collect();
    let ids = row_ids(w, res_id, acc, stored, plan, &by_key)?;
    let id_of = |k: &Stored| k.id.or_else(|| ids.get(&k.entry.keyword).copied());
    let urls: HashMap<u64, String> = w
        .ctx
        .db
        .run("reading feed URLs", |c| {
            ResourceStatus::for_resource(c, res_id)
        })?
        .into_iter()
        .map(|r| (r.id, r.url))
        .collect();
    let doc_of = |kw: &str| item_doc_id(res_id, kw);
    let changed: Vec<(usize, String)> = plan
        .inserts
        .iter()
        .chain(&plan.updates)
        .map(|&i| (i, doc_of(&acc.items[i].keyword)))
        .collect();
    let gone: Vec<(Option<u64>, String, Option<u64>)> = deleted
        .iter()
        .map(|&n| {
            let k = &known[n];
            (id_of(k), doc_of(&k.entry.keyword), k.entry.status_id)
        })
        .collect();
    let mut write = RunWrite::default();
    let mut emits = Vec::with_capacity(changed.len() + gone.len());
    let n_inserts = plan.inserts.len();
    for (n, (i, doc)) in changed.iter().enumerate() {
        let it: &GoodItem = &acc.items[*i];
        let item = ItemWrite {
            keyword: &it.keyword,
            md5: &it.md5,
            content: &it.canonical,
            doc_id: doc,
            status_id: Some(it.status_id),
            data_source_id: Some(it.ds_id),
            loc_id: it.place.loc_id,
            location: &it.place.location,
            hit_field: it.place.hit_field.as_deref(),
        };
        // A row an operator removed by hand since the digest file: inserted again.
        match by_key.get(it.keyword.as_str()).and_then(|k| id_of(k)) {
            Some(id) if n < n_inserts => write.revivals.push((id, item)),
            Some(id) => write.updates.push((id, item)),
            None => write.inserts.push(item),
        }
        emits.push(Emit {
            status: Status::Update,
            doc_id: doc,
            url: urls.get(&it.status_id).map_or("", String::as_str),
            content: &it.canonical,
        });
    }
    for (id, doc, status_id) in &gone {
        write.deletes.extend(*id);
        emits.push(Emit {
            status: Status::Delete,
            doc_id: doc,
            url: status_id
                .and_then(|s| urls.get(&s))
                .map_or("", String::as_str),
            content: "",
        });
    }
    commit_and_emit(w, run, stored, &write, &emits, first)
}

/// UPDATE2 and UPDATE3 (docs/formats.md "Update types"): the unchanged items of a class with
/// a location field whose row's `loc_id` is not the one the location list now gives, brought
/// to it under the run's claim; nothing is emitted (their content did not change).
fn relocate(w: &Writer<'_>, run: &RunShared, acc: &mut Acc, plan: &Plan) -> anyhow::Result<()> {
    if run.paths.location_field.is_none() {
        return Ok(());
    }
    let res_id = run.res_id();
    let changed: HashSet<usize> = plan
        .inserts
        .iter()
        .chain(&plan.updates)
        .chain(&plan.duplicates)
        .copied()
        .collect();
    let by_loc = relocations(
        acc.items
            .iter()
            .enumerate()
            .filter(|(i, _)| !changed.contains(i))
            .map(|(_, it)| (it.keyword.as_str(), it.place.loc_id)),
    );
    let now = clock::db_now();
    let counts = w.ctx.db.run("bringing items' loc_id up to date", |c| {
        diesel::Connection::transaction(c, |c| {
            if !VrResource::lock_claim(c, res_id, w.owner)? {
                return Ok(None);
            }
            let (mut dropped, mut moved) = (0, 0);
            for (loc, keys) in &by_loc {
                let n = VrData::relocate(c, res_id, *loc, keys, now)?;
                match loc {
                    None => dropped += n,
                    Some(_) => moved += n,
                }
            }
            Ok(Some((dropped, moved)))
        })
    })?;
    if let Some((dropped, moved)) = counts.filter(|&(d, m)| d + m > 0) {
        add(&w.stats.relocated, (dropped + moved) as u64);
        acc.detail.note(format!(
            "locations: {dropped} dropped (UPDATE2), {moved} changed (UPDATE3)"
        ));
    }
    Ok(())
}

/// The ids of the rows a write changes, when the stored items came from a digest file (which
/// has none): looked up, by index only.
fn row_ids(
    w: &Writer<'_>,
    res_id: u32,
    acc: &Acc,
    stored: &Known<'_>,
    plan: &Plan,
    by_key: &HashMap<&str, &Stored>,
) -> anyhow::Result<HashMap<String, u64>> {
    Ok(if stored.from_file {
        let keys: Vec<&str> = plan
            .inserts
            .iter()
            .chain(&plan.updates)
            .map(|&i| acc.items[i].keyword.as_str())
            .filter(|k| by_key.contains_key(k))
            .chain(
                stored
                    .deleted
                    .iter()
                    .map(|&n| stored.items[n].entry.keyword.as_str()),
            )
            .collect();
        w.ctx
            .db
            .run("reading the ids of changed items", |c| {
                VrData::ids_of(c, res_id, &keys)
            })?
            .into_iter()
            .collect()
    } else {
        HashMap::new()
    })
}

/// Step 1, the changes under the run's claim with where their items will start (`false`
/// when the claim was lost), then step 2, the items made durable.
fn commit_and_emit(
    w: &Writer<'_>,
    run: &RunShared,
    stored: &Known<'_>,
    write: &RunWrite<'_>,
    emits: &[Emit<'_>],
    mut first: ProcessTimestampChanges,
) -> anyhow::Result<bool> {
    let (read_ms, t0) = stored.timer;
    let res_id = run.res_id();
    // 1: the changes, not yet emitted, and where their items will start.
    let t1 = Instant::now();
    let class_id = run.claimed.resource.class_id;
    let pos = w.store.position(class_id)?;
    let now = clock::db_now();
    let run_id = run.claimed.run.id;
    first.emit_file = Some(Some(pos.file_id));
    first.emit_item = Some(Some(pos.item_idx));
    let held = w.ctx.db.run("writing a resource's items", |c| {
        diesel::Connection::transaction(c, |c| {
            if !VrResource::lock_claim(c, res_id, w.owner)? {
                return Ok(false);
            }
            VrData::apply_run(c, res_id, write, now)?;
            ProcessTimestamp::update(c, run_id, &first)?;
            Ok(true)
        })
    })?;
    if !held {
        log::warn!(
            "resource {res_id}: run {run_id} lost its claim before its write: nothing written"
        );
        return Ok(false);
    }
    // 2: the items, durable.
    let t2 = Instant::now();
    w.store.emit(class_id, emits)?;
    add(&w.stats.emitted, emits.len() as u64);
    log::debug!(
        "resource {res_id}: {} items emitted; items read in {read_ms} ms{}, diffed in {} ms, vr_data written in {} ms, emitted in {} ms",
        emits.len(),
        if stored.from_file { " (digest file)" } else { "" },
        (t1 - t0).as_millis() - read_ms,
        (t2 - t1).as_millis(),
        t2.elapsed().as_millis()
    );
    Ok(true)
}

/// The stored items after the run: written items take their new MD5, digest and feed URL,
/// unchanged ones gain their digest, deleted ones are marked so, new keys are added.
fn next_entries(known: Vec<Stored>, items: &[GoodItem], plan: &Plan, live: &[usize]) -> Vec<Entry> {
    let written: HashSet<usize> = plan.inserts.iter().chain(&plan.updates).copied().collect();
    let dropped: HashSet<usize> = plan.duplicates.iter().copied().collect();
    let mut current: HashMap<&str, usize> = HashMap::with_capacity(items.len());
    for (i, it) in items.iter().enumerate() {
        if !dropped.contains(&i) {
            current.entry(it.keyword.as_str()).or_insert(i);
        }
    }
    let mut entries: Vec<Entry> = known.into_iter().map(|s| s.entry).collect();
    for &d in &plan.deletes {
        entries[live[d]].data_status = DataStatus::Deleted;
    }
    for e in &mut entries {
        let Some(i) = current.remove(e.keyword.as_str()) else {
            continue;
        };
        let it = &items[i];
        if written.contains(&i) {
            e.md5.clone_from(&it.md5);
            e.status_id = Some(it.status_id);
            e.data_status = DataStatus::Live;
            e.digest = Some(it.digest);
        } else if e.data_status == DataStatus::Live {
            // Unchanged: same canonical form, so its digest is this one.
            e.digest = Some(it.digest);
        }
    }
    let mut new: Vec<usize> = current.into_values().collect();
    new.sort_unstable();
    entries.extend(new.into_iter().map(|i| {
        let it = &items[i];
        Entry {
            keyword: it.keyword.clone(),
            md5: it.md5.clone(),
            digest: Some(it.digest),
            status_id: Some(it.status_id),
            data_status: DataStatus::Live,
        }
    }));
    entries
}
