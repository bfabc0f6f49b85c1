//! The crawler's bookings, many URLs a statement (`finish.sql`): one round trip and one
//! statement for a batch instead of one per URL.
//!
//! Batches go in chunks whose sizes are powers of two (at most [`MAX_ROWS`]), so that the
//! connection prepares at most a dozen statement texts and reuses them.

use chrono::NaiveDateTime;
use diesel::mysql::{Mysql, MysqlConnection};
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{
    BigInt, Datetime, Double, Integer, Nullable, SmallInt, Text, TinyInt, Unsigned,
};

use super::{Url, UrlChanges};
use crate::models::sql;
use crate::models::FetchState;

/// Rows per statement at most: 18 binds a row stay far below the protocol's 65 535.
const MAX_ROWS: usize = 512;
/// Binds of `finish.sql` per row (id, mask, 16 values).
const BINDS_PER_ROW: usize = 18;

/// One row of the statement: which columns to write and their values.
struct Row<'a> {
    id: u64,
    mask: u32,
    hits: Option<u32>,
    download_prio: Option<u64>,
    last_downloaded: Option<NaiveDateTime>,
    last_indexed: Option<NaiveDateTime>,
    next_indexed: Option<NaiveDateTime>,
    steady_level: Option<f64>,
    http_status: Option<u16>,
    content_md5: Option<&'a str>,
    doc_id: Option<&'a str>,
    fetch_state: Option<FetchState>,
    errors: Option<u16>,
    fetch_ms: Option<u32>,
    archive_file: Option<u64>,
    archive_item: Option<u32>,
    last_fetch: Option<NaiveDateTime>,
    fetch_error: Option<&'a str>,
}

/// Bit `bit` set when the column is written, and its value.
fn set<T>(mask: &mut u32, bit: u32, v: Option<T>) -> Option<T> {
    if v.is_some() {
        *mask |= 1 << bit;
    }
    v
}

/// The same for a nullable column (`Some(None)` writes NULL).
fn set_null<T>(mask: &mut u32, bit: u32, v: Option<Option<T>>) -> Option<T> {
    set(mask, bit, v).flatten()
}

impl<'a> Row<'a> {
    fn new(id: u64, c: &UrlChanges<'a>) -> Row<'a> {
        let mut m = 0;
        Row {
            id,
            hits: set(&mut m, 0, c.hits),
            download_prio: set(&mut m, 1, c.download_prio),
            last_downloaded: set_null(&mut m, 2, c.last_downloaded),
            last_indexed: set_null(&mut m, 3, c.last_indexed),
            next_indexed: set(&mut m, 4, c.next_indexed),
            steady_level: set(&mut m, 5, c.steady_level),
            http_status: set_null(&mut m, 6, c.http_status),
            content_md5: set_null(&mut m, 7, c.content_md5),
            doc_id: set_null(&mut m, 8, c.doc_id),
            fetch_state: set(&mut m, 9, c.fetch_state),
            errors: set(&mut m, 10, c.errors),
            fetch_ms: set_null(&mut m, 11, c.fetch_ms),
            archive_file: set_null(&mut m, 12, c.archive_file),
            archive_item: set_null(&mut m, 13, c.archive_item),
            last_fetch: set_null(&mut m, 14, c.last_fetch),
            fetch_error: set_null(&mut m, 15, c.fetch_error),
            mask: m,
        }
    }
}

/// `finish.sql` for some rows, with everything it binds.
struct FinishStatement<'a> {
    /// The SQL cut at its placeholders: one piece more than there are binds.
    pieces: Vec<&'a str>,
    rows: &'a [Row<'a>],
    owner: &'a str,
}

impl QueryFragment<Mysql> for FinishStatement<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Mysql>) -> QueryResult<()> {
        let mut pieces = self.pieces.iter();
        let mut sql = |out: &mut AstPass<'_, 'b, Mysql>| {
            out.push_sql(pieces.next().copied().unwrap_or_default());
        };
        for r in self.rows {
            sql(&mut out);
            out.push_bind_param::<Unsigned<BigInt>, _>(&r.id)?;
            sql(&mut out);
            out.push_bind_param::<Unsigned<Integer>, _>(&r.mask)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<Integer>>, _>(&r.hits)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<BigInt>>, _>(&r.download_prio)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Datetime>, _>(&r.last_downloaded)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Datetime>, _>(&r.last_indexed)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Datetime>, _>(&r.next_indexed)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Double>, _>(&r.steady_level)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<SmallInt>>, _>(&r.http_status)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Text>, _>(&r.content_md5)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Text>, _>(&r.doc_id)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<TinyInt>>, _>(&r.fetch_state)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<SmallInt>>, _>(&r.errors)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<Integer>>, _>(&r.fetch_ms)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<BigInt>>, _>(&r.archive_file)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Unsigned<Integer>>, _>(&r.archive_item)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Datetime>, _>(&r.last_fetch)?;
            sql(&mut out);
            out.push_bind_param::<Nullable<Text>, _>(&r.fetch_error)?;
        }
        sql(&mut out);
        out.push_bind_param::<Text, _>(self.owner)?;
        sql(&mut out);
        Ok(())
    }
}

impl QueryId for FinishStatement<'_> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl RunQueryDsl<MysqlConnection> for FinishStatement<'_> {}

/// The chunk sizes `n` rows go in: powers of two, largest first.
fn chunk_sizes(mut n: usize) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if n == 0 {
            return None;
        }
        let size = if n >= MAX_ROWS {
            MAX_ROWS
        } else {
            1 << (usize::BITS - 1 - n.leading_zeros())
        };
        n -= size;
        Some(size)
    })
}

impl Url {
    /// Records the end of `owner`'s work on each `(id, changes)` and releases the claims, but
    /// only of the URLs `owner` still holds (a lapsed claim may have been taken by another).
    /// Written: the columns `finish.sql` names (`updatetag`, `last_hit` and the claim's own
    /// columns in `changes` are not). Rows go in id order, as the loader writes them, so that
    /// the two do not deadlock. Returns how many URLs were still held and written.
    pub fn finish_batch(
        conn: &mut MysqlConnection,
        owner: &str,
        bookings: &[(u64, UrlChanges<'_>)],
    ) -> QueryResult<usize> {
        let mut rows: Vec<Row<'_>> = bookings.iter().map(|(id, c)| Row::new(*id, c)).collect();
        rows.sort_by_key(|r| r.id);
        let text: String = include_str!("finish.sql")
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut written = 0;
        let mut from = 0;
        for size in chunk_sizes(rows.len()) {
            let chunk = &rows[from..from + size];
            from += size;
            let text = sql::repeat(&text, size);
            let pieces: Vec<&str> = text.split('?').collect();
            if pieces.len() != size * BINDS_PER_ROW + 2 {
                return Err(diesel::result::Error::QueryBuilderError(
                    "finish.sql: placeholders and binds disagree".into(),
                ));
            }
            written += FinishStatement {
                pieces,
                rows: chunk,
                owner,
            }
            .execute(conn)?;
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::chunk_sizes;

    #[test]
    fn chunks_are_powers_of_two_at_most_max_rows() {
        let sizes = |n| chunk_sizes(n).collect::<Vec<_>>();
        assert_eq!(sizes(0), Vec::<usize>::new());
        assert_eq!(sizes(1), [1]);
        assert_eq!(sizes(300), [256, 32, 8, 4]);
        assert_eq!(sizes(1100), [512, 512, 64, 8, 4]);
    }
}
