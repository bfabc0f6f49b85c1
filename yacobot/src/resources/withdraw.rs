//! Withdrawing a resource (the source's DeleteTask; docs/formats.md "Withdrawing a resource").
//! A claimed resource whose `res_status` asks for its withdrawal (2, `resource disable`) or
//! its removal (3, `resource remove`) gets a `DELETE` item for every live item, written with
//! the protocol of its runs ([`super::changes`]), batch by batch:
//!
//! 1. one transaction under the claim: the previous batch's rows marked emitted, the next
//!    `Resources.WithdrawBatch` live rows marked deleted with `status = 0` ("not yet emitted"),
//!    and where their items will start (`process_timestamp.emit_file`/`emit_item`);
//! 2. their `DELETE` items appended to the store and fsynced.
//!
//! With no live row left, one transaction marks the last batch emitted, accounts the
//! withdrawal and sets `res_status` 0, releasing the claim; a removal marks it and deletes
//! the resource's rows instead. A crash (or a stop) anywhere leaves at most one batch with `status = 0`, and
//! the resource still asks for its withdrawal: it is claimed again, and
//! [`super::store::Store::recover`] emits the rows of that batch the store does not hold yet
//! before the withdrawal goes on. So every live item gets its `DELETE` exactly once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use diesel::mysql::MysqlConnection;
use diesel::{Connection, QueryResult};
use focuser_daemon::clock;
use focuser_formats::segment::Status;
use focuser_schema::models::{
    ClaimedRun, FetchStatus, LiveItem, NewVrUpdateInfo, ProcessTimestamp, ProcessTimestampChanges,
    ResStatus, ResourceStatus, RunWrite, VrData, VrResource,
};

use super::changes::Writer;
use super::stats::RunRow;
use super::store::Emit;
use crate::status::add;

/// `vr_data` rows a removal deletes per transaction.
const REMOVE_CHUNK: i64 = 1000;

/// How the batches ended.
enum End {
    /// No live item left; the `res_status` the resource has.
    Withdrawn(ResStatus),
    /// `res_status` no longer asks for a withdrawal (enabled again meanwhile): the items not
    /// withdrawn yet stay.
    Cancelled(ResStatus),
    /// Another worker holds the claim: nothing more is written.
    Lost,
    /// yacobot stops: the next start goes on from here.
    Stopped,
}

/// One step-1 transaction's outcome.
enum Batch {
    Items(Vec<LiveItem>),
    End(End),
}

/// Withdraws (or removes) the claimed resource.
pub fn withdraw(w: &Writer<'_>, claimed: &ClaimedRun, stop: &AtomicBool) -> anyhow::Result<()> {
    let res = &claimed.resource;
    let (res_id, run_id) = (res.id, claimed.run.id);
    let before = w.ctx.db.run("counting a resource's live items", |c| {
        VrData::count_live(c, res_id)
    })? as u32;
    let (end, withdrawn, last) = batches(w, claimed, stop)?;
    let detail = match &end {
        End::Withdrawn(ResStatus::Removing) => {
            return remove(w, claimed, withdrawn, &last);
        }
        End::Withdrawn(_) => format!(
            "withdrawn: {withdrawn} live items deleted downstream (a DELETE item each); `resource enable` brings them back"
        ),
        End::Cancelled(s) => format!(
            "withdrawal stopped after {withdrawn} items: res_status is {} now",
            s.code()
        ),
        End::Lost => {
            log::warn!("resource {res_id}: withdrawal {run_id} lost its claim: nothing more written");
            return Ok(());
        }
        End::Stopped => {
            log::info!(
                "resource {res_id}: withdrawal {run_id} interrupted by the stop after {withdrawn} items; it goes on at the next start"
            );
            return Ok(());
        }
    };
    let now = clock::db_now();
    let owner = w.owner;
    let done = matches!(end, End::Withdrawn(_));
    let kept = w.ctx.db.run("accounting a withdrawal", |c| {
        c.transaction(|c| {
            ProcessTimestamp::update(c, run_id, &stamp(now, withdrawn))?;
            if VrResource::lock_claim_status(c, res_id, owner)?.is_none() {
                return Ok(false);
            }
            VrData::mark_rows_emitted(c, &last)?;
            let after = VrData::count_live(c, res_id)? as u32;
            if after != before {
                NewVrUpdateInfo {
                    res_id,
                    status: FetchStatus::Ok,
                    item_count: after,
                    last_item_count: before,
                    detail: &detail,
                }
                .insert(c)?;
            }
            if done {
                VrResource::switch_status(
                    c,
                    res_id,
                    ResStatus::Withdrawing,
                    ResStatus::Disabled,
                    false,
                )?;
            }
            VrResource::finish_run(c, res_id, owner, FetchStatus::Ok, &detail, now, false)
        })
    })?;
    if !kept {
        log::warn!("resource {res_id}: the claim was lost before the withdrawal ended");
        return Ok(());
    }
    if done {
        forget_digests(w, res_id);
    }
    ended(w, claimed, withdrawn, &detail);
    Ok(())
}

/// Steps 1 and 2, batch after batch, until no live item is left; returns how they ended,
/// how many `DELETE` items they emitted, and the rows of the last batch, not yet marked
/// emitted.
fn batches(
    w: &Writer<'_>,
    claimed: &ClaimedRun,
    stop: &AtomicBool,
) -> anyhow::Result<(End, u64, Vec<u64>)> {
    let (res_id, run_id) = (claimed.resource.id, claimed.run.id);
    let urls: HashMap<u64, String> = w
        .ctx
        .db
        .run("reading feed URLs", |c| {
            ResourceStatus::for_resource(c, res_id)
        })?
        .into_iter()
        .map(|r| (r.id, r.url))
        .collect();
    let mut withdrawn = 0u64;
    // The rows of the batch emitted last, marked emitted with the next batch.
    let mut previous: Vec<u64> = Vec::new();
    loop {
        if stop.load(Ordering::SeqCst) || w.ctx.stop.is_set() {
            return Ok((End::Stopped, withdrawn, previous));
        }
        // Read at each batch: a reload takes effect in a withdrawal in hand.
        let limit = i64::from(w.ctx.config().daemon.resources.withdraw_batch);
        let pos = w.store.position()?;
        let now = clock::db_now();
        let at = ProcessTimestampChanges {
            write_start: Some(Some(now)),
            emit_file: Some(Some(pos.file_id)),
            emit_item: Some(Some(pos.item_idx)),
            ..Default::default()
        };
        let owner = w.owner;
        let batch = w.ctx.db.run("withdrawing a resource's items", |c| {
            c.transaction(|c| {
                let Some(status) = VrResource::lock_claim_status(c, res_id, owner)? else {
                    return Ok(Batch::End(End::Lost));
                };
                if !matches!(status, ResStatus::Withdrawing | ResStatus::Removing) {
                    return Ok(Batch::End(End::Cancelled(status)));
                }
                let items = VrData::live_batch(c, res_id, limit)?;
                if items.is_empty() {
                    // The last batch is marked emitted with the withdrawal's end.
                    return Ok(Batch::End(End::Withdrawn(status)));
                }
                // The previous batch's items are durable in the store.
                VrData::mark_rows_emitted(c, &previous)?;
                let write = RunWrite {
                    deletes: items.iter().map(|i| i.id).collect(),
                    ..Default::default()
                };
                VrData::apply_run(c, res_id, &write, now)?;
                ProcessTimestamp::update(c, run_id, &at)?;
                Ok(Batch::Items(items))
            })
        })?;
        let items = match batch {
            Batch::Items(items) => items,
            Batch::End(end) => return Ok((end, withdrawn, previous)),
        };
        previous = items.iter().map(|i| i.id).collect();
        let emits: Vec<Emit<'_>> = items
            .iter()
            .map(|i| Emit {
                status: Status::Delete,
                doc_id: &i.doc_id,
                url: i
                    .status_id
                    .and_then(|s| urls.get(&s))
                    .map_or("", String::as_str),
                content: "",
            })
            .collect();
        w.store.emit(&emits)?;
        add(&w.stats.emitted, emits.len() as u64);
        withdrawn += emits.len() as u64;
    }
}

/// The withdrawal's `process_timestamp` row at its end.
fn stamp(now: chrono::NaiveDateTime, withdrawn: u64) -> ProcessTimestampChanges {
    ProcessTimestampChanges {
        status: Some(FetchStatus::Ok),
        fetch_end: Some(Some(now)),
        write_end: Some(Some(now)),
        deleted: Some(u32::try_from(withdrawn).unwrap_or(u32::MAX)),
        ..Default::default()
    }
}

/// A removal whose items are withdrawn: its `vr_data` rows deleted in pieces, then the
/// resource and its other rows in one transaction, each under the claim and while
/// `res_status` still asks for the removal (otherwise the run ends there, claim released).
fn remove(
    w: &Writer<'_>,
    claimed: &ClaimedRun,
    withdrawn: u64,
    last: &[u64],
) -> anyhow::Result<()> {
    let (res_id, run_id) = (claimed.resource.id, claimed.run.id);
    let owner = w.owner;
    let now = clock::db_now();
    let removing = |c: &mut MysqlConnection| -> QueryResult<bool> {
        match VrResource::lock_claim_status(c, res_id, owner)? {
            Some(ResStatus::Removing) => Ok(true),
            Some(other) => {
                let detail = format!(
                    "removal stopped after {withdrawn} items withdrawn: res_status is {} now",
                    other.code()
                );
                ProcessTimestamp::update(c, run_id, &stamp(now, withdrawn))?;
                VrResource::finish_run(c, res_id, owner, FetchStatus::Ok, &detail, now, false)?;
                Ok(false)
            }
            None => Ok(false),
        }
    };
    // The rows in pieces; `false` once the removal stops.
    let mut going = true;
    while going {
        let deleted = w.ctx.db.run("deleting a removed resource's items", |c| {
            c.transaction(|c| {
                if !removing(c)? {
                    return Ok(None);
                }
                // The last batch's items are durable in the store (should the removal stop
                // before its rows are deleted).
                VrData::mark_rows_emitted(c, last)?;
                VrResource::delete_items(c, res_id, REMOVE_CHUNK).map(Some)
            })
        })?;
        match deleted {
            Some(0) => break,
            Some(_) => {}
            None => going = false,
        }
    }
    let gone = going
        && w.ctx.db.run("deleting a removed resource", |c| {
            c.transaction(|c| {
                if !removing(c)? {
                    return Ok(false);
                }
                VrResource::delete_with_rows(c, res_id)?;
                Ok(true)
            })
        })?;
    if gone {
        forget_digests(w, res_id);
        let detail = format!(
            "removed: {withdrawn} live items deleted downstream (a DELETE item each), then the resource and its rows"
        );
        ended(w, claimed, withdrawn, &detail);
    } else {
        log::warn!("resource {res_id}: removal stopped: its claim was lost or it is no longer to be removed");
    }
    Ok(())
}

/// A withdrawn resource's digest file describes items that are no longer live.
fn forget_digests(w: &Writer<'_>, res_id: u32) {
    if let Err(e) = w.store.digests().remove(res_id) {
        log::warn!("resource {res_id}: {e}");
    }
}

/// The figures and the log line of a withdrawal that ended.
fn ended(w: &Writer<'_>, claimed: &ClaimedRun, withdrawn: u64, detail: &str) {
    let res = &claimed.resource;
    let started = claimed.run.fetch_start.unwrap_or_else(clock::db_now);
    w.stats.run_done(
        RunRow {
            time: clock::db_now().format("%Y-%m-%d %H:%M:%S").to_string(),
            resource: res.res_name.clone(),
            ok: true,
            inserted: 0,
            updated: 0,
            deleted: withdrawn,
            seconds: (clock::db_now() - started).num_milliseconds() as f64 / 1000.0,
            detail: detail.to_string(),
        },
        0,
        0,
    );
    log::info!(
        "resource {} \"{}\": withdrawal {} ended: {detail}",
        res.id,
        res.res_name,
        claimed.run.id
    );
}
