//! The loader's multi-row upsert (`load.sql`).

use chrono::NaiveDateTime;
use diesel::mysql::Mysql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Datetime, Integer, Text, Unsigned};

use super::Url;
use crate::models::sql;

/// A new URL's priority is its hits times this, until it is downloaded once
/// (`001_e77f59d2de9a6c8e.txt`: NEW_URL_BOOST = 3).
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
            let mut q = diesel::sql_query(sql::repeat(include_str!("load.sql"), chunk.len()))
                .into_boxed::<Mysql>();
            for r in chunk {
                q = q
                    .bind::<Unsigned<BigInt>, _>(r.id)
                    .bind::<Text, _>(r.url)
                    .bind::<Text, _>(r.domain)
                    .bind::<Unsigned<BigInt>, _>(r.path_hash)
                    .bind::<Unsigned<Integer>, _>(r.hits)
                    .bind::<Unsigned<BigInt>, _>(u64::from(r.hits) * NEW_URL_BOOST)
                    .bind::<Text, _>(r.updatetag)
                    .bind::<Datetime, _>(now)
                    .bind::<Datetime, _>(r.last_hit)
                    .bind::<Datetime, _>(now);
            }
            affected += q.bind::<Unsigned<BigInt>, _>(NEW_URL_BOOST).execute(conn)?;
        }
        Ok(affected)
    }
}
