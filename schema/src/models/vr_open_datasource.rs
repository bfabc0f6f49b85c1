use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use crate::db::last_insert_id;
use crate::schema::vr_open_datasource;

/// A data source (sitemap) of a resource.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = vr_open_datasource, check_for_backend(Mysql))]
pub struct VrOpenDatasource {
    pub id: u32,
    pub res_id: u32,
    pub name: String,
    pub priority: i32,
    pub sitemap_url: String,
    pub sitemap_md5: Option<String>,
    pub created_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = vr_open_datasource)]
pub struct NewVrOpenDatasource<'a> {
    pub res_id: u32,
    pub name: &'a str,
    pub priority: i32,
    pub sitemap_url: &'a str,
}

#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = vr_open_datasource)]
pub struct VrOpenDatasourceChanges<'a> {
    pub name: Option<&'a str>,
    pub priority: Option<i32>,
    pub sitemap_url: Option<&'a str>,
    pub sitemap_md5: Option<Option<&'a str>>,
}

impl VrOpenDatasource {
    pub fn find(conn: &mut MysqlConnection, id: u32) -> QueryResult<Self> {
        vr_open_datasource::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
    }

    pub fn find_by_name(conn: &mut MysqlConnection, res_id: u32, name: &str) -> QueryResult<Self> {
        vr_open_datasource::table
            .filter(vr_open_datasource::res_id.eq(res_id))
            .filter(vr_open_datasource::name.eq(name))
            .select(Self::as_select())
            .first(conn)
    }

    /// The sources of a resource in processing order: highest priority first, then by id.
    pub fn for_resource(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<Vec<Self>> {
        vr_open_datasource::table
            .filter(vr_open_datasource::res_id.eq(res_id))
            .order((vr_open_datasource::priority.desc(), vr_open_datasource::id))
            .select(Self::as_select())
            .load(conn)
    }

    pub fn update(
        conn: &mut MysqlConnection,
        id: u32,
        changes: &VrOpenDatasourceChanges<'_>,
    ) -> QueryResult<usize> {
        diesel::update(vr_open_datasource::table.find(id))
            .set(changes)
            .execute(conn)
    }
}

impl NewVrOpenDatasource<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<VrOpenDatasource> {
        diesel::insert_into(vr_open_datasource::table)
            .values(self)
            .execute(conn)?;
        let id = last_insert_id(conn)?;
        VrOpenDatasource::find(conn, id)
    }

    /// Inserts the source, or updates priority and sitemap URL of the resource's source with
    /// this name.
    pub fn upsert(&self, conn: &mut MysqlConnection) -> QueryResult<VrOpenDatasource> {
        diesel::insert_into(vr_open_datasource::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set((
                vr_open_datasource::priority.eq(self.priority),
                vr_open_datasource::sitemap_url.eq(self.sitemap_url),
            ))
            .execute(conn)?;
        VrOpenDatasource::find_by_name(conn, self.res_id, self.name)
    }
}
