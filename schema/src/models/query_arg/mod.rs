use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Datetime, Double, Integer, Text, Unsigned};

use crate::models::sql;
use crate::schema::query_args;

/// Rows per statement, far below the protocol's 65 535 parameters.
const MAX_ROWS: usize = 2000;

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
    /// The evidence: pairs of pages that differ only in the argument, and of those the pairs
    /// with the same main text.
    pub pairs: u32,
    pub equal_pairs: u32,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = query_args)]
pub struct NewQueryArg<'a> {
    pub path_hash: u64,
    pub name: &'a str,
    pub score: f64,
    pub computed_at: NaiveDateTime,
    pub pairs: u32,
    pub equal_pairs: u32,
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

    /// Every score of the paths in `paths`.
    pub fn for_paths(conn: &mut MysqlConnection, paths: &[u64]) -> QueryResult<Vec<Self>> {
        let mut out = Vec::new();
        for chunk in paths.chunks(MAX_ROWS) {
            out.extend(
                query_args::table
                    .filter(query_args::path_hash.eq_any(chunk))
                    .select(Self::as_select())
                    .load(conn)?,
            );
        }
        Ok(out)
    }

    /// Writes the scores, replacing older ones (qargfilter's batch); returns the affected-rows
    /// count.
    pub fn write_scores(
        conn: &mut MysqlConnection,
        scores: &[NewQueryArg<'_>],
    ) -> QueryResult<usize> {
        let mut written = 0;
        for chunk in scores.chunks(MAX_ROWS) {
            let text = sql::statement(include_str!("write_scores.sql"));
            let mut q = diesel::sql_query(sql::repeat(&text, chunk.len())).into_boxed::<Mysql>();
            for s in chunk {
                q = q
                    .bind::<Unsigned<BigInt>, _>(s.path_hash)
                    .bind::<Text, _>(s.name)
                    .bind::<Double, _>(s.score)
                    .bind::<Datetime, _>(s.computed_at)
                    .bind::<Unsigned<Integer>, _>(s.pairs)
                    .bind::<Unsigned<Integer>, _>(s.equal_pairs);
            }
            written += q.execute(conn)?;
        }
        Ok(written)
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
                query_args::pairs.eq(self.pairs),
                query_args::equal_pairs.eq(self.equal_pairs),
            ))
            .execute(conn)?;
        QueryArg::find(conn, self.path_hash, self.name)
    }
}
