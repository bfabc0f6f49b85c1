//! The scheduler's claims (docs/design.md#yacobot-scheduler, the source's "fetch map"): a URL is
//! fetched by whoever holds its claim, and a claim lapses at `claim_expires`, so a crawler that
//! died leaves nothing stuck for long.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::{FetchState, Url};
use crate::schema::url;

/// What [`Url::claim_due`] took.
#[derive(Debug, Clone, Default)]
pub struct Claimed {
    /// The URLs, highest `download_prio` first.
    pub urls: Vec<Url>,
    /// How many of them had a claim of another worker that had expired.
    pub taken_back: usize,
}

impl Url {
    /// Claims up to `limit` due URLs (`hits > 0 AND next_indexed <= now`, no live claim),
    /// highest `download_prio` first, for `owner` until `expires`. Rows another transaction
    /// holds are skipped (`FOR UPDATE SKIP LOCKED`), so two crawlers on one database never
    /// claim the same URL. URLs of the domains in `skip` are not looked at, and of the rows
    /// looked at only those `take` accepts (given their domain, in priority order) are
    /// claimed: the caller's share per domain.
    pub fn claim_due(
        conn: &mut MysqlConnection,
        now: NaiveDateTime,
        owner: &str,
        expires: NaiveDateTime,
        limit: i64,
        skip: &[String],
        take: &mut dyn FnMut(&str) -> bool,
    ) -> QueryResult<Claimed> {
        conn.transaction(|conn| {
            // An empty `skip` is `1=1` (diesel writes no empty `NOT IN ()`).
            let due: Vec<(u64, Option<String>, String)> = url::table
                .filter(url::hits.gt(0))
                .filter(url::next_indexed.le(now))
                .filter(url::claim_expires.is_null().or(url::claim_expires.lt(now)))
                .filter(url::domain.ne_all(skip))
                .order(url::download_prio.desc())
                .limit(limit)
                .select((url::id, url::claimed_by, url::domain))
                .for_update()
                .skip_locked()
                .load(conn)?;
            let due: Vec<(u64, Option<String>)> = due
                .into_iter()
                .filter(|(_, _, domain)| take(domain))
                .map(|(id, by, _)| (id, by))
                .collect();
            if due.is_empty() {
                return Ok(Claimed::default());
            }
            let ids: Vec<u64> = due.iter().map(|(id, _)| *id).collect();
            diesel::update(url::table.filter(url::id.eq_any(&ids)))
                .set((
                    url::claimed_by.eq(owner),
                    url::claim_expires.eq(expires),
                    url::fetch_state.eq(FetchState::Claimed),
                ))
                .execute(conn)?;
            let mut urls: Vec<Url> = url::table
                .filter(url::id.eq_any(&ids))
                .select(Url::as_select())
                .load(conn)?;
            urls.sort_by(|a, b| b.download_prio.cmp(&a.download_prio).then(a.id.cmp(&b.id)));
            Ok(Claimed {
                urls,
                taken_back: due.iter().filter(|(_, by)| by.is_some()).count(),
            })
        })
    }

    /// Gives back every claim `owner` still holds (a graceful stop): the URLs are idle and
    /// due again at once.
    pub fn release_claims(conn: &mut MysqlConnection, owner: &str) -> QueryResult<usize> {
        diesel::update(url::table.filter(url::claimed_by.eq(owner)))
            .set((
                url::claimed_by.eq(None::<String>),
                url::claim_expires.eq(None::<NaiveDateTime>),
                url::fetch_state.eq(FetchState::Idle),
            ))
            .execute(conn)
    }

    /// URLs held by a claim that has expired (a crawler died mid-fetch).
    pub fn count_expired_claims(
        conn: &mut MysqlConnection,
        now: NaiveDateTime,
    ) -> QueryResult<i64> {
        url::table
            .filter(url::claim_expires.lt(now))
            .count()
            .get_result(conn)
    }
}
