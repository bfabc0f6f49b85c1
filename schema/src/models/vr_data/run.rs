//! What one run of a resource writes to `vr_data` (SPEC §6 resources, docs/formats.md
//! "Resources write protocol"): every change is written with `status = 0` ("not yet emitted
//! to the segments"); once the items are in the segments and fsynced, [`VrData::mark_emitted`]
//! sets `status = 1`.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::{NewVrData, VrData};
use crate::schema::vr_data;

/// Rows per multi-row statement.
const CHUNK: usize = 500;

/// A stored item as the diff needs it: live or deleted.
#[derive(Debug, Clone, PartialEq, Eq, Queryable)]
pub struct KnownItem {
    pub id: u64,
    pub keyword: String,
    pub md5_sum: String,
    pub status_id: Option<u64>,
    pub data_status: u8,
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

    /// The rows of a resource whose last change is not yet emitted (`status = 0`), by id.
    pub fn pending(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<Vec<VrData>> {
        vr_data::table
            .filter(vr_data::res_id.eq(res_id))
            .filter(vr_data::status.eq(0))
            .order(vr_data::id)
            .select(VrData::as_select())
            .load(conn)
    }

    /// Writes a run's changes, each with `status = 0`. Call inside the run's transaction.
    pub fn apply_run(
        conn: &mut MysqlConnection,
        res_id: u32,
        run: &RunWrite<'_>,
        now: NaiveDateTime,
    ) -> QueryResult<()> {
        for chunk in run.inserts.chunks(CHUNK) {
            let rows: Vec<NewVrData<'_>> = chunk
                .iter()
                .map(|i| NewVrData {
                    res_id,
                    status_id: i.status_id,
                    data_source_id: i.data_source_id,
                    keyword: i.keyword,
                    optword: "",
                    synonym: "",
                    md5_sum: i.md5,
                    doc_id: i.doc_id,
                    data_status: 1,
                    status: 0,
                    update_type: 1,
                    content: Some(i.content),
                    update_date: now,
                })
                .collect();
            diesel::insert_into(vr_data::table)
                .values(&rows)
                .execute(conn)?;
        }
        for (update_type, rows) in [(2u8, &run.updates), (1u8, &run.revivals)] {
            for (id, i) in rows {
                diesel::update(vr_data::table.find(*id))
                    .set((
                        vr_data::status_id.eq(i.status_id),
                        vr_data::data_source_id.eq(i.data_source_id),
                        vr_data::md5_sum.eq(i.md5),
                        vr_data::doc_id.eq(i.doc_id),
                        vr_data::content.eq(Some(i.content)),
                        vr_data::data_status.eq(1u8),
                        vr_data::status.eq(0u8),
                        vr_data::update_type.eq(update_type),
                        vr_data::update_date.eq(now),
                    ))
                    .execute(conn)?;
            }
        }
        for chunk in run.deletes.chunks(CHUNK) {
            diesel::update(vr_data::table.filter(vr_data::id.eq_any(chunk)))
                .set((
                    vr_data::data_status.eq(0u8),
                    vr_data::status.eq(0u8),
                    vr_data::update_type.eq(3u8),
                    vr_data::update_date.eq(now),
                ))
                .execute(conn)?;
        }
        Ok(())
    }

    /// Every change of the resource is in the segments: `status = 1`.
    pub fn mark_emitted(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<usize> {
        diesel::update(
            vr_data::table
                .filter(vr_data::res_id.eq(res_id))
                .filter(vr_data::status.eq(0)),
        )
        .set(vr_data::status.eq(1u8))
        .execute(conn)
    }
}
