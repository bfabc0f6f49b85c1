use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use super::FeedUrlStatus;
use crate::db::last_insert_id;
use crate::schema::resource_status;

mod sync;

pub use sync::SyncCounts;

/// A feed URL of a resource, as listed by one of its sitemaps.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = resource_status, check_for_backend(Mysql))]
pub struct ResourceStatus {
    pub id: u64,
    pub res_id: u32,
    pub data_source_id: u32,
    pub url: String,
    pub res_status: FeedUrlStatus,
    pub last_fetch: Option<NaiveDateTime>,
    pub http_status: Option<u16>,
    pub items: u32,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = resource_status)]
pub struct NewResourceStatus<'a> {
    pub res_id: u32,
    pub data_source_id: u32,
    pub url: &'a str,
    pub res_status: FeedUrlStatus,
}

#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = resource_status)]
pub struct ResourceStatusChanges<'a> {
    pub data_source_id: Option<u32>,
    pub res_status: Option<FeedUrlStatus>,
    pub last_fetch: Option<Option<NaiveDateTime>>,
    pub http_status: Option<Option<u16>>,
    pub items: Option<u32>,
    pub error: Option<Option<&'a str>>,
}

impl ResourceStatus {
    pub fn find(conn: &mut MysqlConnection, id: u64) -> QueryResult<Self> {
        resource_status::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
    }

    pub fn find_by_url(conn: &mut MysqlConnection, res_id: u32, url: &str) -> QueryResult<Self> {
        resource_status::table
            .filter(resource_status::res_id.eq(res_id))
            .filter(resource_status::url.eq(url))
            .select(Self::as_select())
            .first(conn)
    }

    /// Every URL of a resource, listed or retired, by id.
    pub fn for_resource(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<Vec<Self>> {
        resource_status::table
            .filter(resource_status::res_id.eq(res_id))
            .order(resource_status::id)
            .select(Self::as_select())
            .load(conn)
    }

    pub fn update(
        conn: &mut MysqlConnection,
        id: u64,
        changes: &ResourceStatusChanges<'_>,
    ) -> QueryResult<usize> {
        diesel::update(resource_status::table.find(id))
            .set(changes)
            .execute(conn)
    }
}

impl NewResourceStatus<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<ResourceStatus> {
        diesel::insert_into(resource_status::table)
            .values(self)
            .execute(conn)?;
        let id = last_insert_id(conn)?;
        ResourceStatus::find(conn, id)
    }

    /// Inserts the URL, or moves a known one to this data source and status (a sitemap that
    /// lists it again, or under another source).
    pub fn upsert(&self, conn: &mut MysqlConnection) -> QueryResult<ResourceStatus> {
        diesel::insert_into(resource_status::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set((
                resource_status::data_source_id.eq(self.data_source_id),
                resource_status::res_status.eq(self.res_status),
            ))
            .execute(conn)?;
        ResourceStatus::find_by_url(conn, self.res_id, self.url)
    }
}
