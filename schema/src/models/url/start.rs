//! URLs that do not come from the reflog (`Url.StartFile`, `yacobot url add`): which are in
//! the frontier already, and making those due now (`start.sql`). New ones are inserted by the
//! loader's upsert ([`Url::load_batch`]).

use chrono::NaiveDateTime;
use diesel::mysql::Mysql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Datetime, Unsigned};

use super::Url;
use crate::models::sql;
use crate::schema::url;

/// Ids per statement.
const MAX_IDS: usize = 1000;

impl Url {
    /// Which of `ids` are in the frontier.
    pub fn existing_ids(conn: &mut MysqlConnection, ids: &[u64]) -> QueryResult<Vec<u64>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_IDS) {
            out.extend(
                url::table
                    .filter(url::id.eq_any(chunk))
                    .select(url::id)
                    .load::<u64>(conn)?,
            );
        }
        Ok(out)
    }

    /// Makes the URLs `ids` due at `now` (see `start.sql`); returns how many rows changed.
    pub fn make_due(
        conn: &mut MysqlConnection,
        ids: &[u64],
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        let text = sql::statement(include_str!("start.sql"));
        let mut changed = 0;
        for chunk in ids.chunks(MAX_IDS) {
            let mut q = diesel::sql_query(sql::repeat(&text, chunk.len()))
                .into_boxed::<Mysql>()
                .bind::<Datetime, _>(now);
            for id in chunk {
                q = q.bind::<Unsigned<BigInt>, _>(*id);
            }
            changed += q.execute(conn)?;
        }
        Ok(changed)
    }
}
