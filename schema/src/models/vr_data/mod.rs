use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use super::{DataStatus, EmitStatus, UpdateType, ValidStatus};
use crate::db::last_insert_id;
use crate::schema::vr_data;

mod run;
mod snapshot;
mod write;

pub use run::{ItemWrite, KnownItem, LiveItem, RunWrite};
pub use snapshot::SnapshotItem;

/// One item of a partner feed.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = vr_data, check_for_backend(Mysql))]
pub struct VrData {
    pub id: u64,
    pub res_id: u32,
    pub status_id: Option<u64>,
    pub data_source_id: Option<u32>,
    pub keyword: String,
    pub optword: String,
    pub synonym: String,
    pub md5_sum: String,
    pub doc_id: String,
    pub data_status: DataStatus,
    pub status: EmitStatus,
    pub update_type: UpdateType,
    pub valid_status: ValidStatus,
    pub valid_info: String,
    pub content: Option<String>,
    pub loc_id: Option<u32>,
    pub location: String,
    pub hit_field: Option<String>,
    pub create_date: NaiveDateTime,
    pub update_date: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable, AsChangeset)]
#[diesel(table_name = vr_data)]
pub struct NewVrData<'a> {
    pub res_id: u32,
    pub status_id: Option<u64>,
    pub data_source_id: Option<u32>,
    pub keyword: &'a str,
    pub optword: &'a str,
    pub synonym: &'a str,
    pub md5_sum: &'a str,
    pub doc_id: &'a str,
    pub data_status: DataStatus,
    pub status: EmitStatus,
    pub update_type: UpdateType,
    pub content: Option<&'a str>,
    pub update_date: NaiveDateTime,
}

impl VrData {
    pub fn find(conn: &mut MysqlConnection, id: u64) -> QueryResult<Self> {
        vr_data::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
    }

    pub fn find_by_keyword(
        conn: &mut MysqlConnection,
        res_id: u32,
        keyword: &str,
    ) -> QueryResult<Self> {
        vr_data::table
            .filter(vr_data::res_id.eq(res_id))
            .filter(vr_data::keyword.eq(keyword))
            .select(Self::as_select())
            .first(conn)
    }

    /// Every item of a resource, live or deleted, by id.
    pub fn for_resource(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<Vec<Self>> {
        vr_data::table
            .filter(vr_data::res_id.eq(res_id))
            .order(vr_data::id)
            .select(Self::as_select())
            .load(conn)
    }

    /// Live items of a resource.
    pub fn count_live(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<i64> {
        vr_data::table
            .filter(vr_data::res_id.eq(res_id))
            .filter(vr_data::data_status.eq(DataStatus::Live))
            .count()
            .get_result(conn)
    }
}

impl NewVrData<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<VrData> {
        diesel::insert_into(vr_data::table)
            .values(self)
            .execute(conn)?;
        let id = last_insert_id(conn)?;
        VrData::find(conn, id)
    }

    /// Inserts the item, or overwrites the item with the same `(res_id, keyword)`.
    pub fn upsert(&self, conn: &mut MysqlConnection) -> QueryResult<VrData> {
        diesel::insert_into(vr_data::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set(self)
            .execute(conn)?;
        VrData::find_by_keyword(conn, self.res_id, self.keyword)
    }
}
