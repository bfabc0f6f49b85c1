use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use super::FetchState;
use crate::schema::url;

mod claim;
mod compact;
mod expire;
mod finish;
mod load;
mod paths;
mod start;
mod withdraw;

pub use claim::Claimed;
pub use compact::{ArchivedCopy, MovedCopy};
pub use load::{LoadRow, NEW_URL_BOOST};
pub use paths::{Merge, Merged, PathPage};
pub use withdraw::Withdrawal;

/// A page in a node's frontier.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = url, check_for_backend(Mysql))]
pub struct Url {
    pub id: u64,
    #[diesel(column_name = address)]
    pub url: String,
    pub domain: String,
    pub path_hash: u64,
    pub hits: u32,
    pub download_prio: u64,
    pub updatetag: String,
    pub first_seen: NaiveDateTime,
    pub last_hit: NaiveDateTime,
    pub last_downloaded: Option<NaiveDateTime>,
    pub last_indexed: Option<NaiveDateTime>,
    pub next_indexed: NaiveDateTime,
    pub steady_level: f64,
    pub http_status: Option<u16>,
    pub content_md5: Option<String>,
    pub doc_id: Option<String>,
    pub fetch_state: FetchState,
    pub claimed_by: Option<String>,
    pub claim_expires: Option<NaiveDateTime>,
    pub errors: u16,
    pub fetch_ms: Option<u32>,
    pub archive_file: Option<u64>,
    pub archive_item: Option<u32>,
    pub last_fetch: Option<NaiveDateTime>,
    pub fetch_error: Option<String>,
}

#[derive(Debug, Clone, Insertable, AsChangeset)]
#[diesel(table_name = url)]
pub struct NewUrl<'a> {
    pub id: u64,
    #[diesel(column_name = address)]
    pub url: &'a str,
    pub domain: &'a str,
    pub path_hash: u64,
    pub hits: u32,
    pub download_prio: u64,
    pub updatetag: &'a str,
    pub first_seen: NaiveDateTime,
    pub last_hit: NaiveDateTime,
    pub next_indexed: NaiveDateTime,
}

#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = url)]
pub struct UrlChanges<'a> {
    pub hits: Option<u32>,
    pub download_prio: Option<u64>,
    pub updatetag: Option<&'a str>,
    pub last_hit: Option<NaiveDateTime>,
    pub last_downloaded: Option<Option<NaiveDateTime>>,
    pub last_indexed: Option<Option<NaiveDateTime>>,
    pub next_indexed: Option<NaiveDateTime>,
    pub steady_level: Option<f64>,
    pub http_status: Option<Option<u16>>,
    pub content_md5: Option<Option<&'a str>>,
    pub doc_id: Option<Option<&'a str>>,
    pub fetch_state: Option<FetchState>,
    pub claimed_by: Option<Option<&'a str>>,
    pub claim_expires: Option<Option<NaiveDateTime>>,
    pub errors: Option<u16>,
    pub fetch_ms: Option<Option<u32>>,
    pub archive_file: Option<Option<u64>>,
    pub archive_item: Option<Option<u32>>,
    pub last_fetch: Option<Option<NaiveDateTime>>,
    pub fetch_error: Option<Option<&'a str>>,
}

impl Url {
    pub fn find(conn: &mut MysqlConnection, id: u64) -> QueryResult<Self> {
        url::table.find(id).select(Self::as_select()).first(conn)
    }

    /// URLs that are due (`hits > 0 AND next_indexed <= now`), not held by a live claim.
    pub fn count_due(conn: &mut MysqlConnection, now: NaiveDateTime) -> QueryResult<i64> {
        url::table
            .filter(url::hits.gt(0))
            .filter(url::next_indexed.le(now))
            .filter(url::claim_expires.is_null().or(url::claim_expires.lt(now)))
            .count()
            .get_result(conn)
    }

    pub fn update(
        conn: &mut MysqlConnection,
        id: u64,
        changes: &UrlChanges<'_>,
    ) -> QueryResult<usize> {
        diesel::update(url::table.find(id))
            .set(changes)
            .execute(conn)
    }
}

impl NewUrl<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<Url> {
        diesel::insert_into(url::table).values(self).execute(conn)?;
        Url::find(conn, self.id)
    }

    /// Inserts the URL or overwrites the columns this struct carries. (The loader's
    /// accumulating upsert, `hits += h` and its priority rules, is its own query.)
    pub fn upsert(&self, conn: &mut MysqlConnection) -> QueryResult<Url> {
        diesel::insert_into(url::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set(self)
            .execute(conn)?;
        Url::find(conn, self.id)
    }
}
