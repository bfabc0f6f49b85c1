//! The loader's multi-row upsert (`load.sql`).
//!
//! The statement is the loader's hot path, so it is a query type of its own rather than a
//! boxed `sql_query`: its SQL text depends only on the number of rows, which lets the
//! connection prepare it once per row count and reuse it for every full batch.

use chrono::NaiveDateTime;
use diesel::mysql::{Mysql, MysqlConnection};
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Datetime, Integer, Text, Unsigned};

use super::Url;
use crate::models::sql;

/// A new URL's priority is its hits times this, until it is downloaded once
/// (docs/design.md#yacobot-loader: NEW_URL_BOOST = 3).
pub const NEW_URL_BOOST: u64 = 3;

/// Rows per statement: ten parameters a row stay far below the protocol's 65 535.
const MAX_ROWS: usize = 2000;

/// One queue record as the loader upserts it (query arguments already applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadRow<'a> {
    pub id: u64,
    pub url: &'a str,
    pub domain: &'a str,
    pub path_hash: u64,
    pub hits: u32,
    pub updatetag: &'a str,
    pub last_hit: NaiveDateTime,
}

/// `load.sql` for some rows, with everything it binds.
struct LoadStatement<'a> {
    /// The SQL cut at its placeholders: one piece more than there are binds.
    pieces: Vec<&'a str>,
    rows: Vec<(&'a LoadRow<'a>, u64)>,
    now: NaiveDateTime,
    boost: u64,
}

impl QueryFragment<Mysql> for LoadStatement<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Mysql>) -> QueryResult<()> {
        let mut pieces = self.pieces.iter();
        let mut sql = |out: &mut AstPass<'_, 'b, Mysql>| {
            out.push_sql(pieces.next().copied().unwrap_or_default());
        };
        for (r, prio) in &self.rows {
            sql(&mut out);
            out.push_bind_param::<Unsigned<BigInt>, _>(&r.id)?;
            sql(&mut out);
            out.push_bind_param::<Text, _>(r.url)?;
            sql(&mut out);
            out.push_bind_param::<Text, _>(r.domain)?;
            sql(&mut out);
            out.push_bind_param::<Unsigned<BigInt>, _>(&r.path_hash)?;
            sql(&mut out);
            out.push_bind_param::<Unsigned<Integer>, _>(&r.hits)?;
            sql(&mut out);
            out.push_bind_param::<Unsigned<BigInt>, _>(prio)?;
            sql(&mut out);
            out.push_bind_param::<Text, _>(r.updatetag)?;
            sql(&mut out);
            out.push_bind_param::<Datetime, _>(&self.now)?;
            sql(&mut out);
            out.push_bind_param::<Datetime, _>(&r.last_hit)?;
            sql(&mut out);
            out.push_bind_param::<Datetime, _>(&self.now)?;
        }
        sql(&mut out);
        out.push_bind_param::<Unsigned<BigInt>, _>(&self.boost)?;
        sql(&mut out);
        Ok(())
    }
}

impl QueryId for LoadStatement<'_> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl RunQueryDsl<MysqlConnection> for LoadStatement<'_> {}

/// Binds of `load.sql` per row, and once at the end.
const BINDS_PER_ROW: usize = 10;

impl Url {
    /// Upserts `rows` by the loader's rules (see `load.sql`), `now` being the load's clock.
    /// Rows are written in id order, which keeps two concurrent loads from deadlocking on
    /// each other; an id twice in `rows` simply accumulates. Returns the affected-rows count.
    pub fn load_batch(
        conn: &mut MysqlConnection,
        rows: &[LoadRow<'_>],
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        let mut sorted: Vec<&LoadRow<'_>> = rows.iter().collect();
        sorted.sort_by_key(|r| r.id);
        let mut affected = 0;
        for chunk in sorted.chunks(MAX_ROWS) {
            // Comment lines hold no placeholder, and are no part of the statement.
            let text: String = include_str!("load.sql")
                .lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n");
            let text = sql::repeat(&text, chunk.len());
            let pieces: Vec<&str> = text.split('?').collect();
            if pieces.len() != chunk.len() * BINDS_PER_ROW + 2 {
                return Err(diesel::result::Error::QueryBuilderError(
                    "load.sql: placeholders and binds disagree".into(),
                ));
            }
            let statement = LoadStatement {
                pieces,
                rows: chunk
                    .iter()
                    .map(|r| (*r, u64::from(r.hits) * NEW_URL_BOOST))
                    .collect(),
                now,
                boost: NEW_URL_BOOST,
            };
            affected += statement.execute(conn)?;
        }
        Ok(affected)
    }
}
