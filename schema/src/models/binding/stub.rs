//! The path binder's rows (`path_stub`): what it last shipped per section stub and per host's
//! insignificant query arguments, read and written one routing domain at a time so that a
//! pass never holds more than one domain's bindings.

use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text, Varchar};

use super::PathStub;
use crate::schema::{binding_page, path_arg_name, path_stub, url};

/// Keys per `IN (…)` list.
const MAX_KEYS: usize = 1000;

#[derive(QueryableByName)]
struct Next {
    #[diesel(sql_type = Nullable<Varchar>)]
    domain: Option<String>,
}

impl PathStub {
    /// The first domain after `after` with something for the path binder (bound pages,
    /// insignificant query arguments, or stored stubs); `None`: the pass is over.
    pub fn next_domain(conn: &mut MysqlConnection, after: &str) -> QueryResult<Option<String>> {
        let q = diesel::sql_query(include_str!("next_domain.sql"))
            .bind::<Text, _>(after)
            .bind::<Text, _>(after);
        Ok(q.get_result::<Next>(conn)?.domain)
    }

    /// The items of the bindings of `domain`'s pages.
    pub fn bindings_of(conn: &mut MysqlConnection, domain: &str) -> QueryResult<Vec<String>> {
        binding_page::table
            .inner_join(url::table.on(url::id.eq(binding_page::id)))
            .filter(url::domain.eq(domain))
            .order(binding_page::id)
            .select(binding_page::item)
            .load(conn)
    }

    /// `domain`'s insignificant query arguments: (a URL of the path, the argument's name).
    pub fn insignificant_args(
        conn: &mut MysqlConnection,
        domain: &str,
    ) -> QueryResult<Vec<(String, String)>> {
        url::table
            .inner_join(path_arg_name::table.on(path_arg_name::path_hash.eq(url::path_hash)))
            .filter(url::domain.eq(domain))
            .filter(path_arg_name::significant.eq(false))
            .group_by((path_arg_name::path_hash, path_arg_name::name))
            .select((diesel::dsl::min(url::address), path_arg_name::name))
            .load::<(Option<String>, String)>(conn)
            .map(|rows| {
                rows.into_iter()
                    .filter_map(|(u, n)| Some((u?, n)))
                    .collect()
            })
    }

    /// The stored items of `domain`: (key, MD5).
    pub fn of_domain(conn: &mut MysqlConnection, domain: &str) -> QueryResult<Vec<(u64, String)>> {
        path_stub::table
            .filter(path_stub::domain.eq(domain))
            .order(path_stub::id)
            .select((path_stub::id, path_stub::md5))
            .load(conn)
    }

    /// Inserts or replaces `rows`.
    pub fn write(conn: &mut MysqlConnection, rows: &[PathStub]) -> QueryResult<()> {
        for r in rows {
            diesel::replace_into(path_stub::table)
                .values((
                    path_stub::id.eq(r.id),
                    path_stub::kind.eq(r.kind),
                    path_stub::domain.eq(&r.domain),
                    path_stub::host.eq(&r.host),
                    path_stub::prefix.eq(&r.prefix),
                    path_stub::urls.eq(r.urls),
                    path_stub::md5.eq(&r.md5),
                    path_stub::item.eq(&r.item),
                    path_stub::built_at.eq(r.built_at),
                ))
                .execute(conn)?;
        }
        Ok(())
    }

    /// Removes the rows of `ids` (withdrawn); returns how many there were.
    pub fn delete(conn: &mut MysqlConnection, ids: &[u64]) -> QueryResult<usize> {
        let mut n = 0;
        for chunk in ids.chunks(MAX_KEYS) {
            n += diesel::delete(path_stub::table.filter(path_stub::id.eq_any(chunk)))
                .execute(conn)?;
        }
        Ok(n)
    }

    pub fn find(conn: &mut MysqlConnection, id: u64) -> QueryResult<Option<PathStub>> {
        path_stub::table
            .find(id)
            .select(PathStub::as_select())
            .first(conn)
            .optional()
    }
}
