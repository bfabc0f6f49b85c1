use chrono::NaiveDateTime;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use super::FetchStatus;
use crate::db::last_insert_id;
use crate::schema::vr_update_info;

/// A change in a resource's item count. An append-only log, so no upsert.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = vr_update_info, check_for_backend(Mysql))]
pub struct VrUpdateInfo {
    pub id: u64,
    pub res_id: u32,
    pub created_at: NaiveDateTime,
    pub status: FetchStatus,
    pub item_count: u32,
    pub last_item_count: u32,
    pub detail: String,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = vr_update_info)]
pub struct NewVrUpdateInfo<'a> {
    pub res_id: u32,
    pub status: FetchStatus,
    pub item_count: u32,
    pub last_item_count: u32,
    pub detail: &'a str,
}

impl VrUpdateInfo {
    pub fn find(conn: &mut MysqlConnection, id: u64) -> QueryResult<Self> {
        vr_update_info::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
    }

    /// The last `limit` changes of a resource, newest first.
    pub fn recent(conn: &mut MysqlConnection, res_id: u32, limit: i64) -> QueryResult<Vec<Self>> {
        vr_update_info::table
            .filter(vr_update_info::res_id.eq(res_id))
            .order(vr_update_info::id.desc())
            .limit(limit)
            .select(Self::as_select())
            .load(conn)
    }
}

impl NewVrUpdateInfo<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<VrUpdateInfo> {
        diesel::insert_into(vr_update_info::table)
            .values(self)
            .execute(conn)?;
        let id = last_insert_id(conn)?;
        VrUpdateInfo::find(conn, id)
    }
}
