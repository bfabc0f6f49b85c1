use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use crate::schema::query_args;

/// From this score on, an argument is taken not to change the page: the import writes it to
/// `path_arg_name` as insignificant.
pub const INSIGNIFICANT_SCORE: f64 = 0.95;

/// A score computed by the query-argument analysis (qargfilter).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = query_args, primary_key(path_hash, name), check_for_backend(Mysql))]
pub struct QueryArg {
    pub path_hash: u64,
    pub name: String,
    pub score: f64,
    pub computed_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = query_args)]
pub struct NewQueryArg<'a> {
    pub path_hash: u64,
    pub name: &'a str,
    pub score: f64,
    pub computed_at: NaiveDateTime,
}

impl QueryArg {
    pub fn find(conn: &mut MysqlConnection, path_hash: u64, name: &str) -> QueryResult<Self> {
        query_args::table
            .find((path_hash, name))
            .select(Self::as_select())
            .first(conn)
    }

    /// Scores computed at or after `since`, oldest first (what an import has not seen yet).
    pub fn computed_since(
        conn: &mut MysqlConnection,
        since: NaiveDateTime,
    ) -> QueryResult<Vec<Self>> {
        query_args::table
            .filter(query_args::computed_at.ge(since))
            .order((
                query_args::computed_at,
                query_args::path_hash,
                query_args::name,
            ))
            .select(Self::as_select())
            .load(conn)
    }

    /// The newest `computed_at`; `None` while the table is empty.
    pub fn newest(conn: &mut MysqlConnection) -> QueryResult<Option<NaiveDateTime>> {
        query_args::table
            .select(diesel::dsl::max(query_args::computed_at))
            .first(conn)
    }

    /// Whether the argument is significant by the 0.95 rule.
    pub fn significant(&self) -> bool {
        self.score < INSIGNIFICANT_SCORE
    }
}

impl NewQueryArg<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<QueryArg> {
        diesel::insert_into(query_args::table)
            .values(self)
            .execute(conn)?;
        QueryArg::find(conn, self.path_hash, self.name)
    }

    /// Writes the score, replacing an older one.
    pub fn upsert(&self, conn: &mut MysqlConnection) -> QueryResult<QueryArg> {
        diesel::insert_into(query_args::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set((
                query_args::score.eq(self.score),
                query_args::computed_at.eq(self.computed_at),
            ))
            .execute(conn)?;
        QueryArg::find(conn, self.path_hash, self.name)
    }
}
