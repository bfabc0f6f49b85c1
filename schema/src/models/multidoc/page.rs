//! Each URL's analysis: written many rows a statement (`write_pages.sql`), removed when the
//! archive says the page is gone.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Datetime, Float, Integer, Nullable, Text, TinyInt, Unsigned};

use super::{MultidocPage, NewMultidocPage};
use crate::models::sql;
use crate::schema::multidoc_page;

/// Rows per statement: fourteen binds a row, and a row's text is a few hundred bytes.
const MAX_ROWS: usize = 500;

impl MultidocPage {
    pub fn find(conn: &mut MysqlConnection, id: u64) -> QueryResult<Option<Self>> {
        multidoc_page::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
            .optional()
    }

    /// When each of `ids` that has a row was counted into its domain's evidence.
    pub fn counted(
        conn: &mut MysqlConnection,
        ids: &[u64],
    ) -> QueryResult<Vec<(u64, Option<NaiveDateTime>)>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(super::evidence::MAX_KEYS) {
            out.extend(
                multidoc_page::table
                    .filter(multidoc_page::id.eq_any(chunk))
                    .select((multidoc_page::id, multidoc_page::counted_at))
                    .load::<(u64, Option<NaiveDateTime>)>(conn)?,
            );
        }
        Ok(out)
    }

    /// Inserts or replaces the rows of `pages`, in id order.
    pub fn write(conn: &mut MysqlConnection, pages: &[NewMultidocPage]) -> QueryResult<()> {
        let mut sorted: Vec<&NewMultidocPage> = pages.iter().collect();
        sorted.sort_unstable_by_key(|p| p.id);
        let text = sql::statement(include_str!("write_pages.sql"));
        for chunk in sorted.chunks(MAX_ROWS) {
            let mut q = diesel::sql_query(sql::repeat(&text, chunk.len())).into_boxed();
            for p in chunk {
                q = q
                    .bind::<Unsigned<BigInt>, _>(p.id)
                    .bind::<Unsigned<TinyInt>, _>(p.outcome)
                    .bind::<Nullable<Text>, _>(p.lang)
                    .bind::<Nullable<Text>, _>(p.categories.clone())
                    .bind::<Nullable<Text>, _>(p.category_names.clone())
                    .bind::<Nullable<Text>, _>(p.main_md5.clone())
                    .bind::<Nullable<Unsigned<BigInt>>, _>(p.main_simhash)
                    .bind::<Nullable<Unsigned<BigInt>>, _>(p.dup_group)
                    .bind::<Nullable<Float>, _>(p.template_share)
                    .bind::<Nullable<Unsigned<Integer>>, _>(p.model_checksum)
                    .bind::<Datetime, _>(p.analysed_at)
                    .bind::<Nullable<Datetime>, _>(p.counted_at)
                    .bind::<Unsigned<BigInt>, _>(p.archive_file)
                    .bind::<Unsigned<Integer>, _>(p.archive_item);
            }
            q.execute(conn)?;
        }
        Ok(())
    }

    /// Removes the rows of `ids` (pages gone); returns how many there were.
    pub fn delete(conn: &mut MysqlConnection, ids: &[u64]) -> QueryResult<usize> {
        let mut n = 0;
        for chunk in ids.chunks(super::evidence::MAX_KEYS) {
            n += diesel::delete(multidoc_page::table.filter(multidoc_page::id.eq_any(chunk)))
                .execute(conn)?;
        }
        Ok(n)
    }
}
