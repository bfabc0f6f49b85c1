//! The resources scan's claims (the source's "fetch map" for resources): a resource is run by
//! whoever holds its claim (`claimed_by`, `claim_expires`, `fetch_status` running); a claim lapses
//! at `claim_expires`, so a worker that died leaves its resource to the next scan.

use chrono::NaiveDateTime;
use diesel::mysql::Mysql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Datetime, Integer, TinyInt, Unsigned};

use super::VrResource;
use crate::models::process_timestamp::{NewProcessTimestamp, ProcessTimestamp};
use crate::models::{FetchStatus, ResStatus};
use crate::schema::vr_resource;

#[derive(Debug, Clone, Copy, QueryableByName)]
#[diesel(check_for_backend(Mysql))]
struct DueRow {
    #[diesel(sql_type = Unsigned<Integer>)]
    id: u32,
    #[diesel(sql_type = Bool)]
    manual_update: bool,
    #[diesel(sql_type = Unsigned<TinyInt>)]
    res_status: ResStatus,
}

/// One run a scan started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedRun {
    /// The resource as it is after the claim (`fetch_status` running, the claim set).
    pub resource: VrResource,
    /// Asked for by an operator (`manual_update` was 1): an unchanged sitemap is not skipped,
    /// and `manual_update` is cleared at the end. Never set for a withdrawal.
    pub manual: bool,
    /// The run's `process_timestamp` row (`fetch_start` set).
    pub run: ProcessTimestamp,
}

impl VrResource {
    /// Claims up to `limit` resources that are due (see `claim_due.sql`) for `owner` until
    /// `expires`: withdrawals and removals first (`res_status` 2 or 3, whether due or not), then
    /// asked-for runs, then by priority. Sets `fetch_status` running, `fetch_time = now`, and
    /// inserts one `process_timestamp` row per run (a withdrawal is one), all in one
    /// transaction.
    pub fn claim_due(
        conn: &mut MysqlConnection,
        now: NaiveDateTime,
        owner: &str,
        expires: NaiveDateTime,
        limit: i64,
    ) -> QueryResult<Vec<ClaimedRun>> {
        conn.transaction(|conn| {
            let due: Vec<DueRow> = diesel::sql_query(include_str!("claim_due.sql"))
                .bind::<Datetime, _>(now)
                .bind::<Datetime, _>(now)
                .bind::<BigInt, _>(limit)
                .load(conn)?;
            let mut out = Vec::with_capacity(due.len());
            for d in due {
                // A withdrawal leaves a run asked for (`manual_update`) to the enable after it.
                let manual = d.manual_update && d.res_status == ResStatus::Enabled;
                diesel::update(vr_resource::table.find(d.id))
                    .set((
                        vr_resource::claimed_by.eq(owner),
                        vr_resource::claim_expires.eq(expires),
                        vr_resource::fetch_status.eq(FetchStatus::Running),
                        vr_resource::fetch_time.eq(now),
                    ))
                    .execute(conn)?;
                let run = NewProcessTimestamp {
                    res_id: d.id,
                    is_manual: manual,
                    status: FetchStatus::Running,
                    fetch_start: Some(now),
                }
                .insert(conn)?;
                out.push(ClaimedRun {
                    resource: VrResource::find(conn, d.id)?,
                    manual,
                    run,
                });
            }
            Ok(out)
        })
    }

    /// Pushes `owner`'s claim on resource `id` to `expires` (a long run); `false` when the
    /// claim was lost (it lapsed and another worker took the resource).
    pub fn extend_claim(
        conn: &mut MysqlConnection,
        id: u32,
        owner: &str,
        expires: NaiveDateTime,
    ) -> QueryResult<bool> {
        let n = diesel::update(
            vr_resource::table
                .filter(vr_resource::id.eq(id))
                .filter(vr_resource::claimed_by.eq(owner)),
        )
        .set(vr_resource::claim_expires.eq(expires))
        .execute(conn)?;
        Ok(n == 1)
    }

    /// Whether `owner` holds the claim on resource `id`, the row locked until the end of the
    /// caller's transaction: a run that writes under this check cannot interleave with a
    /// claim by another worker (that claim waits for the lock).
    pub fn lock_claim(conn: &mut MysqlConnection, id: u32, owner: &str) -> QueryResult<bool> {
        Ok(VrResource::lock_claim_status(conn, id, owner)?.is_some())
    }

    /// Ends `owner`'s run of resource `id`: its result (`fetch_status` ok or error, `fetch_detail`,
    /// `last_fetch_time = now`), `manual_update` cleared after a manual run, the claim
    /// released. Only while `owner` holds the claim; `false` otherwise.
    pub fn finish_run(
        conn: &mut MysqlConnection,
        id: u32,
        owner: &str,
        status: FetchStatus,
        detail: &str,
        now: NaiveDateTime,
        manual: bool,
    ) -> QueryResult<bool> {
        let target = vr_resource::table
            .filter(vr_resource::id.eq(id))
            .filter(vr_resource::claimed_by.eq(owner));
        let result = (
            vr_resource::fetch_status.eq(status),
            vr_resource::fetch_detail.eq(detail),
            vr_resource::last_fetch_time.eq(now),
            vr_resource::claimed_by.eq(None::<String>),
            vr_resource::claim_expires.eq(None::<NaiveDateTime>),
        );
        let n = if manual {
            diesel::update(target)
                .set((result, vr_resource::manual_update.eq(false)))
                .execute(conn)?
        } else {
            diesel::update(target).set(result).execute(conn)?
        };
        Ok(n == 1)
    }

    /// Gives back every claim `owner` holds (a graceful stop before its runs ended): the
    /// runs count as errors saying so, and the resources are due again as they were
    /// (`last_fetch_time` and `manual_update` untouched).
    pub fn release_claims(
        conn: &mut MysqlConnection,
        owner: &str,
        detail: &str,
    ) -> QueryResult<usize> {
        diesel::update(vr_resource::table.filter(vr_resource::claimed_by.eq(owner)))
            .set((
                vr_resource::fetch_status.eq(FetchStatus::Error),
                vr_resource::fetch_detail.eq(detail),
                vr_resource::claimed_by.eq(None::<String>),
                vr_resource::claim_expires.eq(None::<NaiveDateTime>),
            ))
            .execute(conn)
    }

    /// Takes back the claims an earlier process of node `node` left (`node/<pid>`, any pid
    /// but `owner`'s): at most one process runs a node (its pidfile), so they are a crashed
    /// process's. The runs count as errors saying `detail`, and the resources are due again as
    /// they were.
    pub fn release_node_claims(
        conn: &mut MysqlConnection,
        node: &str,
        owner: &str,
        detail: &str,
    ) -> QueryResult<usize> {
        let pattern = format!(
            "{}/%",
            node.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        diesel::update(
            vr_resource::table
                .filter(vr_resource::claimed_by.like(pattern))
                .filter(vr_resource::claimed_by.ne(owner)),
        )
        .set((
            vr_resource::fetch_status.eq(FetchStatus::Error),
            vr_resource::fetch_detail.eq(detail),
            vr_resource::claimed_by.eq(None::<String>),
            vr_resource::claim_expires.eq(None::<NaiveDateTime>),
        ))
        .execute(conn)
    }
}
