//! Each URL's current binding: written many rows a statement (`write_pages.sql`) in the
//! worker's batch transaction, removed when the URL is gone.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Datetime, Integer, Text, TinyInt, Unsigned};

use super::{BindingPage, NewBindingPage};
use crate::models::sql;
use crate::schema::binding_page;

/// Rows per statement: seven binds a row, an item is a few kilobytes at most.
const MAX_ROWS: usize = 200;
/// Keys per `IN (…)` list.
const MAX_KEYS: usize = 1000;

impl BindingPage {
    pub fn find(conn: &mut MysqlConnection, id: u64) -> QueryResult<Option<Self>> {
        binding_page::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
            .optional()
    }

    /// The stored MD5 of each of `ids` that has a binding.
    pub fn md5s(conn: &mut MysqlConnection, ids: &[u64]) -> QueryResult<Vec<(u64, String)>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(MAX_KEYS) {
            out.extend(
                binding_page::table
                    .filter(binding_page::id.eq_any(chunk))
                    .select((binding_page::id, binding_page::md5))
                    .load::<(u64, String)>(conn)?,
            );
        }
        Ok(out)
    }

    /// Inserts or replaces the rows of `rows`, in id order.
    pub fn write(conn: &mut MysqlConnection, rows: &[NewBindingPage]) -> QueryResult<()> {
        let mut sorted: Vec<&NewBindingPage> = rows.iter().collect();
        sorted.sort_unstable_by_key(|p| p.id);
        let text = sql::statement(include_str!("write_pages.sql"));
        for chunk in sorted.chunks(MAX_ROWS) {
            let mut q = diesel::sql_query(sql::repeat(&text, chunk.len())).into_boxed();
            for p in chunk {
                q = q
                    .bind::<Unsigned<BigInt>, _>(p.id)
                    .bind::<Text, _>(p.md5.clone())
                    .bind::<Text, _>(p.item.clone())
                    .bind::<Unsigned<TinyInt>, _>(u8::from(p.tragic))
                    .bind::<Unsigned<Integer>, _>(p.phrases)
                    .bind::<Text, _>(p.dict_versions.clone())
                    .bind::<Datetime, _>(p.bound_at);
            }
            q.execute(conn)?;
        }
        Ok(())
    }

    /// Removes the rows of `ids` (URLs gone); returns how many there were.
    pub fn delete(conn: &mut MysqlConnection, ids: &[u64]) -> QueryResult<usize> {
        let mut n = 0;
        for chunk in ids.chunks(MAX_KEYS) {
            n += diesel::delete(binding_page::table.filter(binding_page::id.eq_any(chunk)))
                .execute(conn)?;
        }
        Ok(n)
    }
}
