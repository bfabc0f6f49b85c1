//! What one run of a resource writes to `vr_data` (docs/design.md#yacobot-resources,
//! docs/formats.md "Resources write protocol"): every change is written with `status = 0` ("not yet
//! emitted to the segments"); once the items are in the segments and fsynced,
//! [`VrData::mark_emitted`] sets `status = 1`.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::write::{self, Row};
use super::VrData;
use crate::models::{DataStatus, EmitStatus, UpdateType};
use crate::schema::vr_data;

/// Ids per `UPDATE … WHERE id IN (…)` of deleted items, keys per look-up of ids.
const CHUNK: usize = 500;

/// Every `data_status`, named so that a search for `status = 0` rows reads two ranges of
/// `ix_vr_data_res_status (res_id, data_status, status)` instead of all the resource's rows.
const DATA_STATUSES: [DataStatus; 2] = [DataStatus::Deleted, DataStatus::Live];

/// A stored item as the diff needs it: live or deleted.
#[derive(Debug, Clone, PartialEq, Eq, Queryable)]
pub struct KnownItem {
    pub id: u64,
    pub keyword: String,
    pub md5_sum: String,
    pub status_id: Option<u64>,
    pub data_status: DataStatus,
}

/// A live item as a withdrawal needs it: its row, its doc id, its feed URL's id.
#[derive(Debug, Clone, PartialEq, Eq, Queryable)]
pub struct LiveItem {
    pub id: u64,
    pub doc_id: String,
    pub status_id: Option<u64>,
}

/// One item to write.
#[derive(Debug, Clone, Copy)]
pub struct ItemWrite<'a> {
    pub keyword: &'a str,
    pub md5: &'a str,
    pub content: &'a str,
    pub doc_id: &'a str,
    pub status_id: Option<u64>,
    pub data_source_id: Option<u32>,
}

/// The changes of one run.
#[derive(Debug, Clone, Default)]
pub struct RunWrite<'a> {
    /// Keys never seen before.
    pub inserts: Vec<ItemWrite<'a>>,
    /// Rows to overwrite, by id: changed items (`update_type = 2`) ...
    pub updates: Vec<(u64, ItemWrite<'a>)>,
    /// ... and deleted ones that came back (`update_type = 1`, live again).
    pub revivals: Vec<(u64, ItemWrite<'a>)>,
    /// Live rows gone from the feed: marked deleted (`data_status = 0`, `update_type = 3`).
    pub deletes: Vec<u64>,
}

impl VrData {
    /// Every item of a resource, live and deleted, for the diff of its next run.
    pub fn known_items(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<Vec<KnownItem>> {
        vr_data::table
            .filter(vr_data::res_id.eq(res_id))
            .select((
                vr_data::id,
                vr_data::keyword,
                vr_data::md5_sum,
                vr_data::status_id,
                vr_data::data_status,
            ))
            .load(conn)
    }

    /// The row ids of some of a resource's keys (read from `uq_vr_data_item` alone), for a run
    /// that diffed against its item digest file. A key without a row is left out.
    pub fn ids_of(
        conn: &mut MysqlConnection,
        res_id: u32,
        keywords: &[&str],
    ) -> QueryResult<Vec<(String, u64)>> {
        let mut out = Vec::with_capacity(keywords.len());
        for chunk in keywords.chunks(CHUNK) {
            out.extend(
                vr_data::table
                    .filter(vr_data::res_id.eq(res_id))
                    .filter(vr_data::keyword.eq_any(chunk))
                    .select((vr_data::keyword, vr_data::id))
                    .load::<(String, u64)>(conn)?,
            );
        }
        Ok(out)
    }

    /// The rows of a resource whose last change is not yet emitted (`status = 0`), by id.
    pub fn pending(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<Vec<VrData>> {
        vr_data::table
            .filter(vr_data::res_id.eq(res_id))
            .filter(vr_data::data_status.eq_any(DATA_STATUSES))
            .filter(vr_data::status.eq(EmitStatus::Pending))
            .order(vr_data::id)
            .select(VrData::as_select())
            .load(conn)
    }

    /// The next `limit` live items of a resource whose last change is emitted, by id: a
    /// withdrawal's next batch (docs/formats.md "Withdrawing a resource"). Read from
    /// `ix_vr_data_res_status` in id order.
    pub fn live_batch(
        conn: &mut MysqlConnection,
        res_id: u32,
        limit: i64,
    ) -> QueryResult<Vec<LiveItem>> {
        vr_data::table
            .filter(vr_data::res_id.eq(res_id))
            .filter(vr_data::data_status.eq(DataStatus::Live))
            .filter(vr_data::status.eq(EmitStatus::Emitted))
            .order(vr_data::id)
            .limit(limit)
            .select((vr_data::id, vr_data::doc_id, vr_data::status_id))
            .load(conn)
    }

    /// Writes a run's changes, each with `status = 0`. Call inside the run's transaction.
    pub fn apply_run(
        conn: &mut MysqlConnection,
        res_id: u32,
        run: &RunWrite<'_>,
        now: NaiveDateTime,
    ) -> QueryResult<()> {
        // New items first, then the known rows in id order (their pages in turn).
        let mut known: Vec<Row<'_>> = run
            .updates
            .iter()
            .map(|(id, item)| (id, item, UpdateType::Update))
            .chain(
                run.revivals
                    .iter()
                    .map(|(id, item)| (id, item, UpdateType::Insert)),
            )
            .map(|(&id, item, update_type)| Row {
                id: Some(id),
                item,
                update_type,
            })
            .collect();
        known.sort_unstable_by_key(|r| r.id);
        let rows: Vec<Row<'_>> = run
            .inserts
            .iter()
            .map(|item| Row {
                id: None,
                item,
                update_type: UpdateType::Insert,
            })
            .chain(known)
            .collect();
        write::write_rows(conn, res_id, &rows, now)?;
        for chunk in run.deletes.chunks(CHUNK) {
            diesel::update(vr_data::table.filter(vr_data::id.eq_any(chunk)))
                .set((
                    vr_data::data_status.eq(DataStatus::Deleted),
                    vr_data::status.eq(EmitStatus::Pending),
                    vr_data::update_type.eq(UpdateType::Delete),
                    vr_data::update_date.eq(now),
                ))
                .execute(conn)?;
        }
        Ok(())
    }

    /// These rows' changes are in the segments: `status = 1`, by id (a withdrawal's batch:
    /// only those rows are read and locked).
    pub fn mark_rows_emitted(conn: &mut MysqlConnection, ids: &[u64]) -> QueryResult<usize> {
        let mut n = 0;
        for chunk in ids.chunks(CHUNK) {
            n += diesel::update(vr_data::table.filter(vr_data::id.eq_any(chunk)))
                .set(vr_data::status.eq(EmitStatus::Emitted))
                .execute(conn)?;
        }
        Ok(n)
    }

    /// Every change of the resource is in the segments: `status = 1`.
    pub fn mark_emitted(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<usize> {
        diesel::update(
            vr_data::table
                .filter(vr_data::res_id.eq(res_id))
                .filter(vr_data::data_status.eq_any(DATA_STATUSES))
                .filter(vr_data::status.eq(EmitStatus::Pending)),
        )
        .set(vr_data::status.eq(EmitStatus::Emitted))
        .execute(conn)
    }
}
