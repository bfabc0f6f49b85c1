//! Withdrawal (docs/design.md#yacobot-withdrawal): a URL leaves the frontier with a `DELETE`
//! item downstream, exactly like a page found gone. Whoever decides it (qargfilter merging a
//! variant, the frontier's expiry) marks the row with [`Url::withdraw`]; the crawl worker, which
//! owns the archive, takes marked rows in batches ([`Withdrawal::take`]), appends a `DELETE`
//! item for each, makes them durable, and removes the rows ([`Withdrawal::remove`]). A batch in
//! hand is claimed by the crawler's withdrawal tag and its start in the archive is recorded in
//! `withdraw_position`, so that after a `kill -9` the crawler finds which items it had already
//! appended ([`Withdrawal::held`], [`WithdrawPosition`]).

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::Url;
use crate::models::{WithdrawPosition, WithdrawReason};
use crate::schema::url;

/// Ids per statement.
const MAX_IDS: usize = 4000;

/// A marked URL as the crawl worker withdraws it.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = url, check_for_backend(diesel::mysql::Mysql))]
pub struct Withdrawal {
    pub id: u64,
    #[diesel(column_name = address)]
    pub url: String,
    pub withdraw: Option<WithdrawReason>,
}

impl Url {
    /// Marks the rows of `ids` to be withdrawn for `reason`. Their hits and priority go (the
    /// caller has moved them where they belong, or drops them), so no crawler claims them; a
    /// queue file that brings hits for one before it is removed clears the mark. Rows marked
    /// already are left as they are. Returns how many were marked.
    pub fn withdraw(
        conn: &mut MysqlConnection,
        ids: &[u64],
        reason: WithdrawReason,
    ) -> QueryResult<usize> {
        let mut marked = 0;
        for chunk in ids.chunks(MAX_IDS) {
            marked += diesel::update(
                url::table
                    .filter(url::id.eq_any(chunk))
                    .filter(url::withdraw.is_null()),
            )
            .set((
                url::withdraw.eq(Some(reason)),
                url::hits.eq(0),
                url::download_prio.eq(0),
            ))
            .execute(conn)?;
        }
        Ok(marked)
    }

    /// URLs marked and not yet removed.
    pub fn count_withdrawing(conn: &mut MysqlConnection) -> QueryResult<i64> {
        url::table
            .filter(url::withdraw.is_not_null())
            .count()
            .get_result(conn)
    }
}

impl Withdrawal {
    /// The marked rows `tag` holds: a batch a crash (or a failed write) interrupted.
    pub fn held(conn: &mut MysqlConnection, tag: &str) -> QueryResult<Vec<Withdrawal>> {
        url::table
            .filter(url::withdraw.is_not_null())
            .filter(url::claimed_by.eq(tag))
            .order(url::id)
            .select(Self::as_select())
            .load(conn)
    }

    /// Takes up to `limit` marked rows that no live claim holds (a URL being fetched is
    /// withdrawn once it is booked, so its `DELETE` follows its last `UPDATE`), claims them
    /// for `tag` until `expires`, and records `begins` as where their items begin in the
    /// archive `store` of `node`: all in one transaction. Rows another transaction holds are
    /// skipped. By reason, then id.
    #[allow(clippy::too_many_arguments)]
    pub fn take(
        conn: &mut MysqlConnection,
        tag: &str,
        node: &str,
        store: &str,
        begins: (u64, u32),
        now: NaiveDateTime,
        expires: NaiveDateTime,
        limit: i64,
    ) -> QueryResult<Vec<Withdrawal>> {
        conn.transaction(|conn| {
            // In the order of ix_url_withdraw (reason, id): the marked rows are read from
            // there, not found by a walk of the whole frontier.
            let rows: Vec<Withdrawal> = url::table
                .filter(url::withdraw.is_not_null())
                .filter(url::claim_expires.is_null().or(url::claim_expires.lt(now)))
                .order((url::withdraw, url::id))
                .limit(limit)
                .select(Self::as_select())
                .for_update()
                .skip_locked()
                .load(conn)?;
            if rows.is_empty() {
                return Ok(rows);
            }
            let ids: Vec<u64> = rows.iter().map(|r| r.id).collect();
            diesel::update(url::table.filter(url::id.eq_any(&ids)))
                .set((url::claimed_by.eq(tag), url::claim_expires.eq(expires)))
                .execute(conn)?;
            WithdrawPosition::set(conn, node, store, begins, now)?;
            Ok(rows)
        })
    }

    /// Removes the rows of `ids` that `tag` holds and that are still marked, once their
    /// `DELETE` items are durable, and gives back the claim of those a queue file has brought
    /// hits to meanwhile (no longer marked: they stay, and their next fetch announces them
    /// again). Returns how many rows were removed.
    pub fn remove(conn: &mut MysqlConnection, tag: &str, ids: &[u64]) -> QueryResult<usize> {
        conn.transaction(|conn| {
            let mut removed = 0;
            for chunk in ids.chunks(MAX_IDS) {
                removed += diesel::delete(
                    url::table
                        .filter(url::id.eq_any(chunk))
                        .filter(url::claimed_by.eq(tag))
                        .filter(url::withdraw.is_not_null()),
                )
                .execute(conn)?;
                diesel::update(
                    url::table
                        .filter(url::id.eq_any(chunk))
                        .filter(url::claimed_by.eq(tag)),
                )
                .set((
                    url::claimed_by.eq(None::<String>),
                    url::claim_expires.eq(None::<NaiveDateTime>),
                ))
                .execute(conn)?;
            }
            Ok(removed)
        })
    }
}
