//! The end of a run in the write stage: its diff written (steps 1 and 2, [`super::changes`]),
//! then step 3 of the write protocol (docs/formats.md "Resources write protocol"): one
//! transaction with `status = 1`, the run's accounting and the claim released (all but the
//! run's own `process_timestamp` row only while the run holds its claim); then its item digest
//! file, its figures and its log line.

use std::time::Instant;

use chrono::NaiveDateTime;
use focuser_daemon::clock;
use focuser_feed::detail::MAX_DETAIL_BYTES;
use focuser_feed::diff::Valve;
use focuser_schema::models::{
    DataFrom, FetchStatus, NewVrUpdateInfo, ProcessTimestamp, ProcessTimestampChanges,
    ResourceStatus, ResourceStatusChanges, VrData, VrResource,
};

use super::changes::{self, Writer};
use super::customer;
use super::digests::DigestFile;
use super::run::{Acc, FeedResult, RunShared};
use super::stats::RunRow;
use crate::status::add;

/// The priority of a large resource (the source's `is large vr`).
const LARGE_PRIORITY: i32 = 2;

/// How a run ended, as step 3 writes it.
struct Ending<'a> {
    now: NaiveDateTime,
    stamp: &'a ProcessTimestampChanges,
    results: &'a [FeedResult],
    /// Live items before and after.
    live: (u32, u32),
    status: FetchStatus,
    detail: &'a str,
}

/// The run's diff, written with the protocol above, and its accounting. `acc` is all the
/// run gathered.
pub fn finish(w: &Writer<'_>, run: &RunShared, mut acc: Acc) -> anyhow::Result<()> {
    let res_id = run.res_id();
    let run_id = run.claimed.run.id;
    let now = clock::db_now();
    let cfg = w.ctx.config();
    let valve = Valve {
        min_kept_percent: cfg.daemon.resources.min_kept_percent,
        max_failed_percent: cfg.daemon.resources.max_failed_percent,
    };
    let mut stamp = ProcessTimestampChanges {
        fetch_end: Some(Some(now)),
        write_start: Some(Some(now)),
        items: Some(acc.items.len() as u32),
        failed_keys: Some(acc.failed as u32),
        ..Default::default()
    };
    let mut live = (0u32, 0u32);
    let mut unchanged = 0;
    let mut next = None;
    if !acc.aborted {
        let written = changes::write_items(w, run, &mut acc, valve, &mut stamp)?;
        live = (written.before, written.after);
        unchanged = written.unchanged;
        next = written.next;
    }
    add(
        &w.stats.unknown_locations,
        acc.detail.unknown_location_count(),
    );
    if run.claimed.resource.data_from == DataFrom::CUSTOMER {
        let items = (!acc.aborted).then_some(live.1);
        customer::report(w, run, &mut acc.detail, items);
    }
    let status = if acc.detail.is_error() {
        FetchStatus::Error
    } else {
        FetchStatus::Ok
    };
    let detail = acc.detail.render(MAX_DETAIL_BYTES);
    stamp.status = Some(status);
    stamp.write_end = Some(Some(clock::db_now()));
    let ending = Ending {
        now,
        stamp: &stamp,
        results: &acc.results,
        live,
        status,
        detail: &detail,
    };
    let (kept, raised) = account(w, run, &ending)?;
    if raised {
        add(&w.stats.raised_priority, 1);
        log::info!(
            "resource {res_id}: large ({} live items, Resources.LargeItems {}): priority raised to {LARGE_PRIORITY}",
            live.1,
            cfg.daemon.resources.large_items
        );
    }
    if !kept {
        log::warn!("resource {res_id}: the claim was lost before the run ended");
    } else if let Some(entries) = next {
        // After the run is accounted: a file is trusted only for the run that wrote it.
        let file = DigestFile {
            res_id,
            run_id,
            run_start: run.claimed.run.fetch_start,
            entries,
        };
        if let Err(e) = w.store.digests().save(&file) {
            log::warn!("resource {res_id}: its item digest file could not be saved: {e}");
        }
    }
    let started = run.claimed.run.fetch_start.unwrap_or(now);
    w.stats.run_done(
        RunRow {
            time: clock::db_now().format("%Y-%m-%d %H:%M:%S").to_string(),
            resource: run.claimed.resource.res_name.clone(),
            ok: status == FetchStatus::Ok,
            inserted: stamp.inserted.unwrap_or(0).into(),
            updated: stamp.updated.unwrap_or(0).into(),
            deleted: stamp.deleted.unwrap_or(0).into(),
            seconds: (clock::db_now() - started).num_milliseconds() as f64 / 1000.0,
            detail: detail.replace('\n', " | "),
        },
        unchanged,
        acc.failed,
    );
    log::info!(
        "resource {res_id}: run {run_id} ended {}: {}",
        if status == FetchStatus::Ok {
            "ok"
        } else {
            "in error"
        },
        detail.replace('\n', " | ")
    );
    Ok(())
}

/// Step 3, in one transaction; `false` when the run no longer held its claim (its own row is
/// written all the same); and whether the resource was found large and raised to priority 2
/// (the source's OTHER update type).
fn account(w: &Writer<'_>, run: &RunShared, end: &Ending<'_>) -> anyhow::Result<(bool, bool)> {
    let res_id = run.res_id();
    let run_id = run.claimed.run.id;
    let manual = run.claimed.manual;
    let (owner, now, live, status) = (w.owner, end.now, end.live, end.status);
    let large_items = w.ctx.config().daemon.resources.large_items;
    let large = large_items > 0 && u64::from(live.1) >= large_items;
    let t3 = Instant::now();
    let kept = w.ctx.db.run("finishing a resource run", |c| {
        diesel::Connection::transaction(c, |c| {
            // The run's own row always; the resource's rows only under its claim: another
            // worker that took the resource may be between its own steps 1 and 3.
            ProcessTimestamp::update(c, run_id, end.stamp)?;
            if !VrResource::lock_claim(c, res_id, owner)? {
                return Ok((false, false));
            }
            let raised = large && VrResource::raise_priority(c, res_id, LARGE_PRIORITY)?;
            VrData::mark_emitted(c, res_id)?;
            for r in end.results {
                ResourceStatus::update(
                    c,
                    r.status_id,
                    &ResourceStatusChanges {
                        last_fetch: Some(Some(now)),
                        http_status: Some(r.http_status),
                        items: Some(r.items),
                        error: Some(r.error.as_deref().map(|e| cut(e, 255))),
                        ..Default::default()
                    },
                )?;
            }
            if live.0 != live.1 {
                NewVrUpdateInfo {
                    res_id,
                    status,
                    item_count: live.1,
                    last_item_count: live.0,
                    detail: cut(end.detail, 1024),
                }
                .insert(c)?;
            }
            let kept = VrResource::finish_run(
                c,
                res_id,
                owner,
                status,
                end.detail,
                clock::db_now(),
                manual,
            )?;
            Ok((kept, raised))
        })
    })?;
    log::debug!(
        "resource {res_id}: run {run_id} accounted in {} ms",
        t3.elapsed().as_millis()
    );
    Ok(kept)
}

/// At most `max` bytes, on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut at = max;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[..at]
}
