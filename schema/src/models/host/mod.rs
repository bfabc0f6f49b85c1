//! The record per host (`host`, the source's srv.db; docs/operations.md "yacobot: the record
//! per host"): the crawl worker adds each booking batch's news in one statement
//! ([`Host::record_batch`], `record.sql`), and reads a host's robots.txt back when it meets the
//! host again after a restart ([`Host::kept_robots`]).

use chrono::NaiveDateTime;
use diesel::mysql::Mysql;
use diesel::prelude::*;
use diesel::sql_types::{
    BigInt, Binary, Datetime, Double, Integer, Nullable, SmallInt, Text, TinyInt, Unsigned,
};

use super::{sql, DelaySource};
use crate::schema::host;

/// Rows per statement: 19 binds a row stay far below the protocol's 65 535.
const MAX_ROWS: usize = 500;

/// A host's row.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = host, primary_key(name), check_for_backend(Mysql))]
pub struct Host {
    pub name: String,
    pub documents: u64,
    pub bytes: u64,
    pub bps: Option<f64>,
    pub server: Option<String>,
    pub errors: u32,
    pub errors_in_row: u32,
    pub last_error: Option<String>,
    pub last_error_at: Option<NaiveDateTime>,
    pub last_answer_at: Option<NaiveDateTime>,
    pub delay_ms: Option<u32>,
    pub delay_source: Option<DelaySource>,
    pub robots_fetched_at: Option<NaiveDateTime>,
    pub robots_expires: Option<NaiveDateTime>,
    pub robots_status: Option<u16>,
    pub robots_md5: Option<String>,
    pub robots_bytes: Option<u32>,
    pub robots_txt: Option<Vec<u8>>,
    pub updated_at: NaiveDateTime,
}

/// One host's news of a batch (see `record.sql`): counters to add, and values that replace
/// the row's where given.
#[derive(Debug, Clone, PartialEq)]
pub struct HostRow<'a> {
    pub name: &'a str,
    pub documents: u64,
    pub bytes: u64,
    /// The batch's bytes per second (its answers' bytes over their transfer time).
    pub bps: Option<f64>,
    pub server: Option<&'a str>,
    pub errors: u32,
    /// Failures after the host's last answer in the batch (all of them without one).
    pub errors_in_row: u32,
    pub last_error: Option<&'a str>,
    pub last_error_at: Option<NaiveDateTime>,
    /// When it last answered in the batch; `None`: it did not.
    pub last_answer_at: Option<NaiveDateTime>,
    pub delay_ms: Option<u32>,
    pub delay_source: Option<DelaySource>,
    pub robots: Option<RobotsAnswer<'a>>,
}

/// robots.txt as fetched in the batch.
#[derive(Debug, Clone, PartialEq)]
pub struct RobotsAnswer<'a> {
    pub fetched_at: NaiveDateTime,
    pub expires: NaiveDateTime,
    /// `None`: no answer.
    pub status: Option<u16>,
    pub md5: Option<&'a str>,
    pub bytes: Option<u32>,
    /// The file, when kept.
    pub txt: Option<&'a [u8]>,
}

/// A robots.txt kept for a host, to take instead of fetching it: a 2xx with its file, or a
/// 4xx, trusted until `expires`.
#[derive(Debug, Clone, PartialEq, Eq, Queryable)]
pub struct KeptRobots {
    pub name: String,
    pub status: u16,
    pub txt: Option<Vec<u8>>,
    pub expires: NaiveDateTime,
}

/// The robots.txt columns as read.
#[derive(Queryable)]
struct RobotsColumns {
    name: String,
    status: Option<u16>,
    txt: Option<Vec<u8>>,
    expires: Option<NaiveDateTime>,
}

impl Host {
    pub fn find(conn: &mut MysqlConnection, name: &str) -> QueryResult<Self> {
        host::table.find(name).select(Self::as_select()).first(conn)
    }

    /// Adds `rows` to the record (`record.sql`), in name order (two crawlers of one database
    /// booking at once then lock the rows in one order); one name once. Returns the
    /// affected-rows count.
    pub fn record_batch(
        conn: &mut MysqlConnection,
        rows: &[HostRow<'_>],
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        let mut sorted: Vec<&HostRow<'_>> = rows.iter().collect();
        sorted.sort_by_key(|r| r.name);
        let text = sql::statement(include_str!("record.sql"));
        let mut affected = 0;
        for chunk in sorted.chunks(MAX_ROWS) {
            let mut q = diesel::sql_query(sql::repeat(&text, chunk.len())).into_boxed::<Mysql>();
            for r in chunk {
                let robots = r.robots.as_ref();
                q = q
                    .bind::<Text, _>(r.name)
                    .bind::<Unsigned<BigInt>, _>(r.documents)
                    .bind::<Unsigned<BigInt>, _>(r.bytes)
                    .bind::<Nullable<Double>, _>(r.bps)
                    .bind::<Nullable<Text>, _>(r.server)
                    .bind::<Unsigned<Integer>, _>(r.errors)
                    .bind::<Unsigned<Integer>, _>(r.errors_in_row)
                    .bind::<Nullable<Text>, _>(r.last_error)
                    .bind::<Nullable<Datetime>, _>(r.last_error_at)
                    .bind::<Nullable<Datetime>, _>(r.last_answer_at)
                    .bind::<Nullable<Unsigned<Integer>>, _>(r.delay_ms)
                    .bind::<Nullable<Unsigned<TinyInt>>, _>(r.delay_source.map(DelaySource::code))
                    .bind::<Nullable<Datetime>, _>(robots.map(|a| a.fetched_at))
                    .bind::<Nullable<Datetime>, _>(robots.map(|a| a.expires))
                    .bind::<Nullable<Unsigned<SmallInt>>, _>(robots.and_then(|a| a.status))
                    .bind::<Nullable<Text>, _>(robots.and_then(|a| a.md5))
                    .bind::<Nullable<Unsigned<Integer>>, _>(robots.and_then(|a| a.bytes))
                    .bind::<Nullable<Binary>, _>(robots.and_then(|a| a.txt))
                    .bind::<Datetime, _>(now);
            }
            affected += q.execute(conn)?;
        }
        Ok(affected)
    }

    /// The robots.txt kept for the hosts `names` that are still trusted at `now` and that a
    /// fetcher can take: a 4xx, or a 2xx whose file was kept.
    pub fn kept_robots(
        conn: &mut MysqlConnection,
        names: &[&str],
        now: NaiveDateTime,
    ) -> QueryResult<Vec<KeptRobots>> {
        let mut out = Vec::new();
        for chunk in names.chunks(1000) {
            let rows: Vec<RobotsColumns> = host::table
                .filter(host::name.eq_any(chunk))
                .filter(host::robots_expires.gt(now))
                .filter(host::robots_status.between(200, 499))
                .select((
                    host::name,
                    host::robots_status,
                    host::robots_txt,
                    host::robots_expires,
                ))
                .load(conn)?;
            out.extend(rows.into_iter().filter_map(|r| {
                let (status, expires) = (r.status?, r.expires?);
                let usable = (400..=499).contains(&status) || r.txt.is_some();
                usable.then_some(KeptRobots {
                    name: r.name,
                    status,
                    txt: r.txt,
                    expires,
                })
            }));
        }
        Ok(out)
    }
}
