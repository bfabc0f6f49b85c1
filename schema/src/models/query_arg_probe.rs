//! Probe URLs (docs/design.md#yacobot-qargfilter, "Probes"): for an argument of a path with too
//! little evidence, qargfilter queues a page of the path with the argument dropped; a crawler
//! takes the probes into `url` (claimed by it, no hits) within its share of fetches, and fetches
//! them like any page, so that MultiDoc analyses them and the next pass pairs them with the
//! pages they came from. A probe row stays (taken) to count the argument's probes, until the
//! argument is scored.

use chrono::NaiveDateTime;
use diesel::dsl::count_star;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use crate::models::{FetchState, Url};
use crate::schema::{query_arg_probe as probe, url};

/// Rows per statement.
const MAX_ROWS: usize = 2000;

#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = probe, check_for_backend(Mysql))]
pub struct QueryArgProbe {
    pub path_hash: u64,
    pub name: String,
    pub id: u64,
    pub url: String,
    pub domain: String,
    pub queued_at: NaiveDateTime,
    pub taken_at: Option<NaiveDateTime>,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = probe)]
pub struct NewQueryArgProbe<'a> {
    pub path_hash: u64,
    pub name: &'a str,
    pub id: u64,
    pub url: &'a str,
    pub domain: &'a str,
    pub queued_at: NaiveDateTime,
}

impl QueryArgProbe {
    /// Queues probes (one already queued for the same argument and URL is left as it is);
    /// returns how many are new.
    pub fn queue(
        conn: &mut MysqlConnection,
        probes: &[NewQueryArgProbe<'_>],
    ) -> QueryResult<usize> {
        let mut queued = 0;
        for chunk in probes.chunks(MAX_ROWS) {
            queued += diesel::insert_or_ignore_into(probe::table)
                .values(chunk)
                .execute(conn)?;
        }
        Ok(queued)
    }

    /// Probes queued so far (taken or not) per argument of the paths in `paths`.
    pub fn counts(
        conn: &mut MysqlConnection,
        paths: &[u64],
    ) -> QueryResult<Vec<(u64, String, i64)>> {
        let mut out = Vec::new();
        for chunk in paths.chunks(MAX_ROWS) {
            out.extend(
                probe::table
                    .filter(probe::path_hash.eq_any(chunk))
                    .group_by((probe::path_hash, probe::name))
                    .select((probe::path_hash, probe::name, count_star()))
                    .load::<(u64, String, i64)>(conn)?,
            );
        }
        Ok(out)
    }

    /// Probes waiting for a crawler.
    pub fn waiting(conn: &mut MysqlConnection) -> QueryResult<i64> {
        probe::table
            .filter(probe::taken_at.is_null())
            .count()
            .get_result(conn)
    }

    /// Forgets the probes of `name` on `path_hash` (the argument is scored now).
    pub fn forget(
        conn: &mut MysqlConnection,
        path_hash: u64,
        names: &[&str],
    ) -> QueryResult<usize> {
        diesel::delete(
            probe::table
                .filter(probe::path_hash.eq(path_hash))
                .filter(probe::name.eq_any(names)),
        )
        .execute(conn)
    }

    /// Takes up to `limit` waiting probes, oldest first, into `url`: each a new row without
    /// hits, claimed by `owner` until `expires` (a URL already in the frontier is left alone:
    /// it is crawled as it is). Rows another transaction holds are skipped. Returns the URLs
    /// claimed, as [`Url::claim_due`] does.
    pub fn take(
        conn: &mut MysqlConnection,
        owner: &str,
        now: NaiveDateTime,
        expires: NaiveDateTime,
        limit: i64,
    ) -> QueryResult<Vec<Url>> {
        conn.transaction(|conn| {
            let probes: Vec<QueryArgProbe> = probe::table
                .filter(probe::taken_at.is_null())
                .order(probe::queued_at)
                .limit(limit)
                .select(Self::as_select())
                .for_update()
                .skip_locked()
                .load(conn)?;
            if probes.is_empty() {
                return Ok(Vec::new());
            }
            let rows: Vec<_> = probes
                .iter()
                .map(|p| {
                    (
                        url::id.eq(p.id),
                        url::address.eq(&p.url),
                        url::domain.eq(&p.domain),
                        url::path_hash.eq(p.path_hash),
                        url::first_seen.eq(now),
                        url::last_hit.eq(now),
                        url::next_indexed.eq(now),
                        url::claimed_by.eq(owner),
                        url::claim_expires.eq(expires),
                        url::fetch_state.eq(FetchState::Claimed),
                    )
                })
                .collect();
            diesel::insert_or_ignore_into(url::table)
                .values(&rows)
                .execute(conn)?;
            for p in &probes {
                diesel::update(probe::table.find((p.path_hash, &p.name, p.id)))
                    .set(probe::taken_at.eq(now))
                    .execute(conn)?;
            }
            let ids: Vec<u64> = probes.iter().map(|p| p.id).collect();
            url::table
                .filter(url::id.eq_any(&ids))
                .filter(url::claimed_by.eq(owner))
                .filter(url::hits.eq(0))
                .filter(url::last_fetch.is_null())
                .select(Url::as_select())
                .load(conn)
        })
    }
}
