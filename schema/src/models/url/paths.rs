//! qargfilter's reads of the frontier, a path at a time (docs/design.md#yacobot-qargfilter), and
//! its merging of the variants of a URL into their canonical URL.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text, TinyInt, Unsigned};

use super::{LoadRow, Url};
use crate::models::WithdrawReason;
use crate::schema::url;

/// A URL as qargfilter reads it.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct PathPage {
    #[diesel(sql_type = Unsigned<BigInt>)]
    pub id: u64,
    #[diesel(sql_type = Text)]
    pub url: String,
    #[diesel(sql_type = Text)]
    pub domain: String,
    #[diesel(sql_type = Unsigned<BigInt>)]
    pub path_hash: u64,
    #[diesel(sql_type = Nullable<diesel::sql_types::Datetime>)]
    pub claim_expires: Option<NaiveDateTime>,
    #[diesel(sql_type = Nullable<Unsigned<TinyInt>>)]
    pub withdraw: Option<WithdrawReason>,
    /// Hex MD5 of its main text; `None`: not analysed.
    #[diesel(sql_type = Nullable<Text>)]
    pub main_md5: Option<String>,
    /// SimHash of its main text; `None`: not analysed, or no word in it.
    #[diesel(sql_type = Nullable<Unsigned<BigInt>>)]
    pub main_simhash: Option<u64>,
}

/// The variants of one canonical URL to merge into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge<'a> {
    pub id: u64,
    pub url: &'a str,
    pub domain: &'a str,
    pub path_hash: u64,
    pub variants: Vec<u64>,
}

/// What [`Url::merge`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Merged {
    /// Variants marked for withdrawal.
    pub variants: usize,
    /// Canonical URLs that did not exist and were made.
    pub made: usize,
    /// Hits moved to the canonical URLs.
    pub hits: u64,
}

impl Url {
    /// Up to `limit` URLs of the paths from `from` on, in path and id order.
    pub fn paths_from(
        conn: &mut MysqlConnection,
        from: u64,
        limit: i64,
    ) -> QueryResult<Vec<PathPage>> {
        diesel::sql_query(include_str!("paths_from.sql"))
            .bind::<Unsigned<BigInt>, _>(from)
            .bind::<BigInt, _>(limit)
            .load(conn)
    }

    /// Up to `limit` URLs of path `path` after id `after`, in id order.
    pub fn path_after(
        conn: &mut MysqlConnection,
        path: u64,
        after: u64,
        limit: i64,
    ) -> QueryResult<Vec<PathPage>> {
        diesel::sql_query(include_str!("path_after.sql"))
            .bind::<Unsigned<BigInt>, _>(path)
            .bind::<Unsigned<BigInt>, _>(after)
            .bind::<BigInt, _>(limit)
            .load(conn)
    }

    /// Merges each variant into its canonical URL, in one transaction: the variants still live
    /// and held by no live claim (one being fetched waits for the next pass) give their hits to
    /// the canonical URL — made, with at least one hit so that it is fetched, if it does not
    /// exist; as the loader adds hits if it does — and are marked for withdrawal
    /// ([`Url::withdraw`]), which takes their hits away.
    pub fn merge(
        conn: &mut MysqlConnection,
        merges: &[Merge<'_>],
        now: NaiveDateTime,
    ) -> QueryResult<Merged> {
        conn.transaction(|conn| {
            let all: Vec<u64> = merges
                .iter()
                .flat_map(|m| m.variants.iter().copied())
                .collect();
            let mut live: Vec<(u64, u32, NaiveDateTime)> = Vec::new();
            for chunk in all.chunks(4000) {
                live.extend(
                    url::table
                        .filter(url::id.eq_any(chunk))
                        .filter(url::withdraw.is_null())
                        .filter(url::claim_expires.is_null().or(url::claim_expires.lt(now)))
                        .select((url::id, url::hits, url::last_hit))
                        .for_update()
                        .load::<(u64, u32, NaiveDateTime)>(conn)?,
                );
            }
            let live: std::collections::HashMap<u64, (u32, NaiveDateTime)> =
                live.into_iter().map(|(id, h, t)| (id, (h, t))).collect();
            let canonical: Vec<u64> = merges.iter().map(|m| m.id).collect();
            let known: std::collections::HashSet<u64> = url::table
                .filter(url::id.eq_any(&canonical))
                .select(url::id)
                .for_update()
                .load::<u64>(conn)?
                .into_iter()
                .collect();
            let mut out = Merged::default();
            let mut rows = Vec::new();
            let mut gone = Vec::new();
            for m in merges {
                let taken: Vec<(u64, u32, NaiveDateTime)> = m
                    .variants
                    .iter()
                    .filter_map(|id| live.get(id).map(|(h, t)| (*id, *h, *t)))
                    .collect();
                let Some(last_hit) = taken.iter().map(|(_, _, t)| *t).max() else {
                    continue;
                };
                let hits: u64 = taken.iter().map(|(_, h, _)| u64::from(*h)).sum();
                out.hits += hits;
                let hits = u32::try_from(hits).unwrap_or(u32::MAX);
                let exists = known.contains(&m.id);
                out.made += usize::from(!exists);
                rows.push(LoadRow {
                    id: m.id,
                    url: m.url,
                    domain: m.domain,
                    path_hash: m.path_hash,
                    hits: if exists { hits } else { hits.max(1) },
                    updatetag: "",
                    last_hit,
                });
                gone.extend(taken.iter().map(|(id, _, _)| *id));
            }
            if rows.is_empty() {
                return Ok(out);
            }
            Url::load_batch(conn, &rows, now)?;
            out.variants = Url::withdraw(conn, &gone, WithdrawReason::Merged)?;
            Ok(out)
        })
    }
}
