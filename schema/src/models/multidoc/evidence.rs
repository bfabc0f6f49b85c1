//! The templater's evidence in batches: the rows a batch of pages needs, its pages counted in,
//! and the bounds (cap and expiry). Each multi-row statement is a hand-written `.sql` file
//! whose row group is repeated (`sql::repeat`), its values bound, never spliced in.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::mysql::Mysql;
use diesel::prelude::*;
use diesel::query_builder::BoxedSqlQuery;
use diesel::sql_types::{BigInt, Date, Datetime, Integer, Text, Unsigned};

use super::{MultidocDomain, MultidocFingerprint};
use crate::models::sql;
use crate::schema::{multidoc_domain, multidoc_fingerprint};

/// Keys or rows per statement: a few binds each, far below the protocol's 65 535.
pub(super) const MAX_KEYS: usize = 2000;

/// A batch's pages counted into one block's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FingerprintCount {
    pub domain_key: u64,
    pub fingerprint: u64,
    /// Pages of the batch the block was on.
    pub pages: u32,
    /// The domain's page count after the last of them.
    pub last_page: u32,
    pub seen_on: NaiveDate,
}

/// A batch's pages counted into their domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMultidocDomain {
    pub domain_key: u64,
    pub domain: String,
    /// Pages of the batch.
    pub pages: u32,
    /// Fingerprint rows the batch inserts.
    pub fingerprints: u32,
    /// Now: when the evidence begins if it is new (or expired).
    pub since: NaiveDateTime,
    pub seen_on: NaiveDate,
}

/// `file`'s statement with its row group written `rows` times, ready for its binds.
fn statement(
    file: &str,
    rows: usize,
) -> BoxedSqlQuery<'static, Mysql, diesel::query_builder::SqlQuery> {
    diesel::sql_query(sql::repeat(&sql::statement(file), rows)).into_boxed()
}

impl MultidocFingerprint {
    /// The rows of the `(domain_key, fingerprint)` pairs of `wanted` that exist.
    pub fn load(conn: &mut MysqlConnection, wanted: &[(u64, u64)]) -> QueryResult<Vec<Self>> {
        let mut out = Vec::with_capacity(wanted.len());
        for chunk in wanted.chunks(MAX_KEYS) {
            let mut q = statement(include_str!("load_fingerprints.sql"), chunk.len());
            for &(domain_key, fingerprint) in chunk {
                q = q
                    .bind::<Unsigned<BigInt>, _>(domain_key)
                    .bind::<Unsigned<BigInt>, _>(fingerprint);
            }
            out.extend(q.load::<Self>(conn)?);
        }
        Ok(out)
    }

    /// Adds a batch's pages to its blocks' rows (`count_fingerprints.sql`); rows last seen
    /// before `expired` start again. Rows are written in key order (two writers of one domain
    /// take their locks in the same order).
    pub fn count_pages(
        conn: &mut MysqlConnection,
        rows: &[FingerprintCount],
        expired: NaiveDate,
    ) -> QueryResult<()> {
        let mut sorted = rows.to_vec();
        sorted.sort_unstable_by_key(|r| (r.domain_key, r.fingerprint));
        for chunk in sorted.chunks(MAX_KEYS) {
            let mut q = statement(include_str!("count_fingerprints.sql"), chunk.len());
            for r in chunk {
                q = q
                    .bind::<Unsigned<BigInt>, _>(r.domain_key)
                    .bind::<Unsigned<BigInt>, _>(r.fingerprint)
                    .bind::<Unsigned<Integer>, _>(r.pages)
                    .bind::<Unsigned<Integer>, _>(r.last_page)
                    .bind::<Date, _>(r.seen_on);
            }
            q.bind::<Date, _>(expired).execute(conn)?;
        }
        Ok(())
    }

    /// Deletes up to `limit` rows last seen before `expired`; returns how many.
    pub fn expire(
        conn: &mut MysqlConnection,
        expired: NaiveDate,
        limit: u32,
    ) -> QueryResult<usize> {
        statement(include_str!("expire_fingerprints.sql"), 1)
            .bind::<Date, _>(expired)
            .bind::<Unsigned<Integer>, _>(limit)
            .execute(conn)
    }

    /// Brings a domain back under `cap` rows: counts them and, when over, deletes down to 90 %
    /// of the cap (so that this is not paid on every batch), at most `limit` rows a call; the
    /// domain's `fingerprints` becomes what is left. Returns (rows left, rows deleted).
    pub fn cap(
        conn: &mut MysqlConnection,
        domain_key: u64,
        cap: u32,
        limit: u32,
    ) -> QueryResult<(u64, u64)> {
        conn.transaction(|c| {
            let rows: i64 = multidoc_fingerprint::table
                .filter(multidoc_fingerprint::domain_key.eq(domain_key))
                .count()
                .get_result(c)?;
            let rows = rows.max(0) as u64;
            let keep = u64::from(cap - cap / 10);
            let delete = if rows > u64::from(cap) {
                (rows - keep).min(u64::from(limit))
            } else {
                0
            };
            let deleted = if delete > 0 {
                statement(include_str!("cap_fingerprints.sql"), 1)
                    .bind::<Unsigned<BigInt>, _>(domain_key)
                    .bind::<Unsigned<BigInt>, _>(delete)
                    .execute(c)? as u64
            } else {
                0
            };
            let left = rows - deleted;
            diesel::update(multidoc_domain::table.find(domain_key))
                .set(multidoc_domain::fingerprints.eq(u32::try_from(left).unwrap_or(u32::MAX)))
                .execute(c)?;
            Ok((left, deleted))
        })
    }
}

impl MultidocDomain {
    /// Adds a batch's pages to their domains (`count_domains.sql`), in key order; a domain
    /// last seen before `expired` starts afresh.
    pub fn count_pages(
        conn: &mut MysqlConnection,
        rows: &[NewMultidocDomain],
        expired: NaiveDate,
    ) -> QueryResult<()> {
        let mut sorted: Vec<&NewMultidocDomain> = rows.iter().collect();
        sorted.sort_unstable_by_key(|r| r.domain_key);
        for chunk in sorted.chunks(MAX_KEYS) {
            let mut q = statement(include_str!("count_domains.sql"), chunk.len());
            for r in chunk {
                q = q
                    .bind::<Unsigned<BigInt>, _>(r.domain_key)
                    .bind::<Text, _>(r.domain.clone())
                    .bind::<Unsigned<Integer>, _>(r.pages)
                    .bind::<Unsigned<Integer>, _>(r.fingerprints)
                    .bind::<Datetime, _>(r.since)
                    .bind::<Date, _>(r.seen_on);
            }
            q.bind::<Date, _>(expired)
                .bind::<Date, _>(expired)
                .execute(conn)?;
        }
        Ok(())
    }

    /// Deletes up to `limit` domains with no page since before `expired`; returns how many.
    pub fn expire(
        conn: &mut MysqlConnection,
        expired: NaiveDate,
        limit: u32,
    ) -> QueryResult<usize> {
        statement(include_str!("expire_domains.sql"), 1)
            .bind::<Date, _>(expired)
            .bind::<Unsigned<Integer>, _>(limit)
            .execute(conn)
    }
}
