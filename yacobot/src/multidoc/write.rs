//! The batch's one transaction (its pages counted into the evidence, the URLs' rows, the
//! position), and the bounds kept after it: the cap of fingerprints per domain and the ageing,
//! each a bounded batch of deletes.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::result::Error;
use diesel::Connection;
use focuser_daemon::db::{Database, DbError};
use focuser_formats::segment::Position;
use focuser_schema::models::{
    BindingPage, BindingPosition, MultidocDomain, MultidocFingerprint, MultidocGroup, MultidocPage,
    MultidocPosition,
};

use super::stats::MultiDocStats;
use super::weigh::Plan;
use crate::bindings::Shipment;
use crate::status::add;

/// Rows a cap or an ageing statement deletes at most.
const DELETE_BATCH: u32 = 10_000;

/// Where the batch moves the position: from where it was read to past its items, and the end
/// of what is counted.
pub struct Move<'a> {
    pub node: &'a str,
    pub store: &'a str,
    pub from: Position,
    pub to: Position,
    pub counted: Position,
    pub now: NaiveDateTime,
    /// The batch's bindings and the bindings store's name, with `Bindings.Enable`.
    pub bindings: Option<(&'a Shipment, &'a str)>,
}

fn place(p: Position) -> (u64, u32) {
    (p.file_id, p.item_idx)
}

/// Writes `plan` (and the batch's bindings) and moves the position in one transaction; the
/// duplicate groups it deleted (no page left) and gave a new representative. `Ok(None)`:
/// nothing written, the position was no longer where the batch was read from (an operator's
/// rewind meanwhile).
pub fn commit(
    db: &Database,
    plan: &Plan,
    expired: NaiveDate,
    m: &Move<'_>,
) -> Result<Option<(usize, usize)>, DbError> {
    db.run("writing a batch of page analyses", |c| {
        let done = c.transaction(|c| {
            MultidocDomain::count_pages(c, &plan.domains, expired)?;
            MultidocFingerprint::count_pages(c, &plan.fingerprints, expired)?;
            MultidocGroup::write(c, &plan.groups)?;
            MultidocPage::delete(c, &plan.gone)?;
            MultidocPage::write(c, &plan.pages)?;
            let settled = MultidocGroup::settle(c, &plan.touched)?;
            if let Some((s, store)) = m.bindings {
                BindingPage::delete(c, &s.gone)?;
                BindingPage::write(c, &s.rows)?;
                BindingPosition::set(c, m.node, store, s.place, m.now)?;
            }
            let moved = MultidocPosition::advance(
                c,
                m.node,
                m.store,
                place(m.from),
                place(m.to),
                place(m.counted),
                m.now,
            )?;
            if moved {
                Ok(settled)
            } else {
                Err(Error::RollbackTransaction)
            }
        });
        match done {
            Ok(settled) => Ok(Some(settled)),
            Err(Error::RollbackTransaction) => Ok(None),
            Err(e) => Err(e),
        }
    })
}

/// Brings the domains of `over_cap` back under `cap` fingerprints (a bounded batch each).
pub fn cap(
    db: &Database,
    over_cap: &[u64],
    cap: u32,
    stats: &MultiDocStats,
) -> Result<(), DbError> {
    for &key in over_cap {
        let (left, deleted) = db.run("capping a domain's template fingerprints", |c| {
            MultidocFingerprint::cap(c, key, cap, DELETE_BATCH)
        })?;
        if deleted > 0 {
            log::debug!("multidoc: domain {key:016x}: {deleted} fingerprints over the cap dropped, {left} left");
        }
        add(&stats.fingerprints_capped, deleted);
    }
    Ok(())
}

/// One bounded batch of ageing: fingerprints last seen before `expired`, then (when none is
/// left) domains with no page since. Returns whether more may be left.
pub fn age(db: &Database, expired: NaiveDate, stats: &MultiDocStats) -> Result<bool, DbError> {
    let n = db.run("forgetting expired template fingerprints", |c| {
        MultidocFingerprint::expire(c, expired, DELETE_BATCH)
    })?;
    add(&stats.fingerprints_expired, n as u64);
    if n as u32 >= DELETE_BATCH {
        return Ok(true);
    }
    let d = db.run("forgetting expired domains", |c| {
        MultidocDomain::expire(c, expired, DELETE_BATCH)
    })?;
    add(&stats.domains_expired, d as u64);
    if n + d > 0 {
        log::info!("multidoc: forgot {n} template fingerprints and {d} domains not seen since before {expired}");
    }
    Ok(d as u32 >= DELETE_BATCH)
}
