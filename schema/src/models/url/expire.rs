//! The frontier's expiry (`Url.ExpireDays`, docs/design.md#yacobot-expiry): URLs no hit has
//! asked for since a cutoff, and not due, are marked to be withdrawn ([`Url::expire`]); the
//! crawl worker's withdrawal sends their `DELETE` items downstream and removes the rows.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::Url;
use crate::models::WithdrawReason;
use crate::schema::url;

impl Url {
    /// Marks for withdrawal, in one transaction, up to `limit` URLs whose last hit is before
    /// `cutoff`, oldest first (`ix_url_last_hit`), that are not due at `now` (hits waiting and
    /// `next_indexed` passed: the crawler takes those first), not held by a live claim, and
    /// not marked already. Rows another transaction holds are skipped. Returns how many.
    pub fn expire(
        conn: &mut MysqlConnection,
        cutoff: NaiveDateTime,
        now: NaiveDateTime,
        limit: i64,
    ) -> QueryResult<usize> {
        conn.transaction(|conn| {
            let ids: Vec<u64> = url::table
                .filter(url::last_hit.lt(cutoff))
                .filter(url::withdraw.is_null())
                .filter(url::hits.eq(0).or(url::next_indexed.gt(now)))
                .filter(url::claim_expires.is_null().or(url::claim_expires.lt(now)))
                .order(url::last_hit)
                .limit(limit)
                .select(url::id)
                .for_update()
                .skip_locked()
                .load(conn)?;
            if ids.is_empty() {
                return Ok(0);
            }
            Url::withdraw(conn, &ids, WithdrawReason::Expired)
        })
    }
}
