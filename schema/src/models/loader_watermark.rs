//! How far each master's queue files have been handled, for a node fed by masters that
//! duplicate each other (docs/formats.md "How a node applies a queue file"): read and written
//! in the transaction that applies or skips a file, so a watermark moves exactly when the file
//! is recorded in `queue_applied`.

use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use crate::schema::loader_watermark as mark;

#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = mark, check_for_backend(Mysql))]
pub struct LoaderWatermark {
    pub master: String,
    /// The latest header `time=` of the master's files handled.
    pub covered: NaiveDateTime,
    /// When the loader last handled a file of the master.
    pub handled_at: NaiveDateTime,
}

impl LoaderWatermark {
    /// Every master's watermark.
    pub fn all(conn: &mut MysqlConnection) -> QueryResult<Vec<Self>> {
        mark::table
            .order(mark::master)
            .select(Self::as_select())
            .load(conn)
    }

    /// Every master's watermark, locked until the transaction ends: one file at a time
    /// decides on them and moves them.
    pub fn lock_all(conn: &mut MysqlConnection) -> QueryResult<Vec<Self>> {
        mark::table
            .order(mark::master)
            .select(Self::as_select())
            .for_update()
            .load(conn)
    }

    /// Records that a file of `master` was handled at `now`, the master covered up to
    /// `covered` (the caller keeps it from going back: it holds the rows locked).
    pub fn set(
        conn: &mut MysqlConnection,
        master: &str,
        covered: NaiveDateTime,
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        diesel::insert_into(mark::table)
            .values((
                mark::master.eq(master),
                mark::covered.eq(covered),
                mark::handled_at.eq(now),
            ))
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set((mark::covered.eq(covered), mark::handled_at.eq(now)))
            .execute(conn)
    }

    /// Forgets every watermark (a node back in `Loader.Mode = disjoint`: they would be stale
    /// if it went back to duplicate). Returns how many there were.
    pub fn clear(conn: &mut MysqlConnection) -> QueryResult<usize> {
        diesel::delete(mark::table).execute(conn)
    }
}
