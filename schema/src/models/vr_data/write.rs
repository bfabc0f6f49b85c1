//! `write_items.sql`: a run's new, changed and revived items, many rows a statement.
//!
//! Like the loader's upsert (`url/load.rs`) it is a query type of its own, so that a full
//! chunk's SQL depends only on its row count and the connection prepares it once; a chunk
//! cut short (the last, or one of large items) is prepared for that one use.

use chrono::NaiveDateTime;
use diesel::mysql::{Mysql, MysqlConnection};
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Datetime, Integer, Nullable, Text, TinyInt, Unsigned};

use super::run::ItemWrite;
use crate::models::sql;
use crate::models::UpdateType;

/// Rows per statement: thirteen binds a row.
pub(super) const MAX_ROWS: usize = 500;
/// Item bytes per statement, far below the server's `max_allowed_packet` (16 MiB by default).
pub(super) const MAX_BYTES: usize = 4 << 20;
const BINDS_PER_ROW: usize = 13;

/// One row of `write_items.sql`.
pub(super) struct Row<'a> {
    /// `None`: a new item.
    pub id: Option<u64>,
    pub item: &'a ItemWrite<'a>,
    /// Insert (or revival), or update.
    pub update_type: UpdateType,
}

impl Row<'_> {
    /// What the row weighs in the statement's packet.
    pub fn bytes(&self) -> usize {
        let i = self.item;
        i.keyword.len()
            + i.content.len()
            + i.md5.len()
            + i.doc_id.len()
            + i.location.len()
            + i.hit_field.map_or(0, str::len)
            + 80
    }
}

struct Statement<'a> {
    /// The SQL cut at its placeholders: one piece more than there are binds.
    pieces: Vec<&'a str>,
    rows: &'a [Row<'a>],
    res_id: u32,
    now: NaiveDateTime,
}

impl QueryFragment<Mysql> for Statement<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Mysql>) -> QueryResult<()> {
        if self.rows.len() != MAX_ROWS {
            out.unsafe_to_cache_prepared();
        }
        let mut pieces = self.pieces.iter();
        let mut sql = |out: &mut AstPass<'_, 'b, Mysql>| {
            out.push_sql(pieces.next().copied().unwrap_or_default());
        };
        for r in self.rows {
            let i = r.item;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<BigInt>>, _>(&r.id)?;
            sql(&mut out);
            out.push_bind_param::<Unsigned<Integer>, _>(&self.res_id)?;
            sql(&mut out);
            out.push_bind_param::<Text, _>(i.keyword)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<BigInt>>, _>(&i.status_id)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<Integer>>, _>(&i.data_source_id)?;
            sql(&mut out);
            out.push_bind_param::<Text, _>(i.md5)?;
            sql(&mut out);
            out.push_bind_param::<Text, _>(i.doc_id)?;
            sql(&mut out);
            out.push_bind_param::<Text, _>(i.content)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<Integer>>, _>(&i.loc_id)?;
            sql(&mut out);
            out.push_bind_param::<Text, _>(i.location)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Text>, _>(&i.hit_field)?;
            sql(&mut out);
            out.push_bind_param::<Unsigned<TinyInt>, _>(&r.update_type)?;
            sql(&mut out);
            out.push_bind_param::<Datetime, _>(&self.now)?;
        }
        sql(&mut out);
        Ok(())
    }
}

impl QueryId for Statement<'_> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl RunQueryDsl<MysqlConnection> for Statement<'_> {}

/// Writes `rows` in statements of at most [`MAX_ROWS`] rows and about [`MAX_BYTES`].
pub(super) fn write_rows(
    conn: &mut MysqlConnection,
    res_id: u32,
    rows: &[Row<'_>],
    now: NaiveDateTime,
) -> QueryResult<()> {
    // Comment lines hold no placeholder, and are no part of the statement.
    let text: String = include_str!("write_items.sql")
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut start = 0;
    while start < rows.len() {
        let mut end = start;
        let mut bytes = 0;
        while end < rows.len() && end - start < MAX_ROWS {
            bytes += rows[end].bytes();
            if bytes > MAX_BYTES && end > start {
                break;
            }
            end += 1;
        }
        let chunk = &rows[start..end];
        let full = sql::repeat(&text, chunk.len());
        let pieces: Vec<&str> = full.split('?').collect();
        if pieces.len() != chunk.len() * BINDS_PER_ROW + 1 {
            return Err(diesel::result::Error::QueryBuilderError(
                "write_items.sql: placeholders and binds disagree".into(),
            ));
        }
        Statement {
            pieces,
            rows: chunk,
            res_id,
            now,
        }
        .execute(conn)?;
        start = end;
    }
    Ok(())
}
