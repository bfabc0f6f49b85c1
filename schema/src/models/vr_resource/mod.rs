use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use super::{DataFrom, FetchStatus, ResStatus};
use crate::db::last_insert_id;
use crate::schema::vr_resource;

mod claim;
mod health;
mod withdraw;

pub use claim::ClaimedRun;

/// A partner data feed.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = vr_resource, check_for_backend(Mysql))]
pub struct VrResource {
    pub id: u32,
    pub class_id: u32,
    pub res_name: String,
    pub data_group: String,
    pub data_from: DataFrom,
    pub frequency: u32,
    pub is_manual: bool,
    pub manual_update: bool,
    pub res_status: ResStatus,
    pub priority: i32,
    pub fetch_status: FetchStatus,
    pub fetch_detail: Option<String>,
    pub fetch_time: Option<NaiveDateTime>,
    pub last_fetch_time: Option<NaiveDateTime>,
    pub max_items: u32,
    pub claimed_by: Option<String>,
    pub claim_expires: Option<NaiveDateTime>,
    pub created_at: NaiveDateTime,
}

/// What an operator says when adding a resource.
#[derive(Debug, Clone, Insertable, AsChangeset)]
#[diesel(table_name = vr_resource)]
pub struct NewVrResource<'a> {
    pub class_id: u32,
    pub res_name: &'a str,
    pub data_group: &'a str,
    pub data_from: DataFrom,
    pub frequency: u32,
    pub is_manual: bool,
    pub res_status: ResStatus,
    pub priority: i32,
    pub max_items: u32,
}

#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = vr_resource)]
pub struct VrResourceChanges<'a> {
    pub class_id: Option<u32>,
    pub res_name: Option<&'a str>,
    pub data_group: Option<&'a str>,
    pub frequency: Option<u32>,
    pub is_manual: Option<bool>,
    pub manual_update: Option<bool>,
    pub res_status: Option<ResStatus>,
    pub priority: Option<i32>,
    pub fetch_status: Option<FetchStatus>,
    pub fetch_detail: Option<Option<&'a str>>,
    pub fetch_time: Option<Option<NaiveDateTime>>,
    pub last_fetch_time: Option<Option<NaiveDateTime>>,
    pub max_items: Option<u32>,
    pub claimed_by: Option<Option<&'a str>>,
    pub claim_expires: Option<Option<NaiveDateTime>>,
}

impl VrResource {
    pub fn find(conn: &mut MysqlConnection, id: u32) -> QueryResult<Self> {
        vr_resource::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
    }

    pub fn find_by_name(conn: &mut MysqlConnection, name: &str) -> QueryResult<Self> {
        vr_resource::table
            .filter(vr_resource::res_name.eq(name))
            .select(Self::as_select())
            .first(conn)
    }

    /// Every resource, by id.
    pub fn all(conn: &mut MysqlConnection) -> QueryResult<Vec<Self>> {
        vr_resource::table
            .order(vr_resource::id)
            .select(Self::as_select())
            .load(conn)
    }

    pub fn update(
        conn: &mut MysqlConnection,
        id: u32,
        changes: &VrResourceChanges<'_>,
    ) -> QueryResult<usize> {
        diesel::update(vr_resource::table.find(id))
            .set(changes)
            .execute(conn)
    }
}

impl NewVrResource<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<VrResource> {
        diesel::insert_into(vr_resource::table)
            .values(self)
            .execute(conn)?;
        let id = last_insert_id(conn)?;
        VrResource::find(conn, id)
    }

    /// Inserts the resource, or rewrites the settings of the resource with this name
    /// (its run state is left alone).
    pub fn upsert(&self, conn: &mut MysqlConnection) -> QueryResult<VrResource> {
        diesel::insert_into(vr_resource::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set(self)
            .execute(conn)?;
        VrResource::find_by_name(conn, self.res_name)
    }
}
