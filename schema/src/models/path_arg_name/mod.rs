use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use crate::schema::path_arg_name;

mod rules;

pub use rules::ArgRule;

/// Whether a query argument of one path changes the page (docs/design.md#yacobot-query-arguments).
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = path_arg_name, primary_key(path_hash, name), check_for_backend(Mysql))]
pub struct PathArgName {
    pub path_hash: u64,
    pub name: String,
    pub significant: bool,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = path_arg_name)]
pub struct NewPathArgName<'a> {
    pub path_hash: u64,
    pub name: &'a str,
    pub significant: bool,
    pub updated_at: NaiveDateTime,
}

impl PathArgName {
    pub fn find(conn: &mut MysqlConnection, path_hash: u64, name: &str) -> QueryResult<Self> {
        path_arg_name::table
            .find((path_hash, name))
            .select(Self::as_select())
            .first(conn)
    }

    /// Every rule of one path, by argument name.
    pub fn for_path(conn: &mut MysqlConnection, path_hash: u64) -> QueryResult<Vec<Self>> {
        path_arg_name::table
            .filter(path_arg_name::path_hash.eq(path_hash))
            .order(path_arg_name::name)
            .select(Self::as_select())
            .load(conn)
    }
}

impl NewPathArgName<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<PathArgName> {
        diesel::insert_into(path_arg_name::table)
            .values(self)
            .execute(conn)?;
        PathArgName::find(conn, self.path_hash, self.name)
    }

    /// Writes the rule, always replacing an existing one (the qargfilter import).
    pub fn upsert(&self, conn: &mut MysqlConnection) -> QueryResult<PathArgName> {
        diesel::insert_into(path_arg_name::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set((
                path_arg_name::significant.eq(self.significant),
                path_arg_name::updated_at.eq(self.updated_at),
            ))
            .execute(conn)?;
        PathArgName::find(conn, self.path_hash, self.name)
    }
}
