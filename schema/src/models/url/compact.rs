//! The archive's compaction (yacobot, docs/operations.md "The archive's retention"): the URLs
//! whose current archived copy lies in segments the retention is about to let go, and the
//! move of those copies, booked only where the row still points at the old place.

use chrono::NaiveDateTime;
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;

use crate::schema::url;

/// A URL's current archived copy and what says whether it may still be re-indexed from.
#[derive(Debug, Clone, PartialEq, Queryable)]
pub struct ArchivedCopy {
    pub id: u64,
    pub archive_file: u64,
    pub archive_item: u32,
    pub last_downloaded: Option<NaiveDateTime>,
    pub steady_level: f64,
}

/// A copy moved from `from` to `to` (file id, item index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MovedCopy {
    pub id: u64,
    pub from: (u64, u32),
    pub to: (u64, u32),
}

impl super::Url {
    /// The URLs whose archived copy is in segments `from..below`.
    pub fn copies_in(
        conn: &mut MysqlConnection,
        from: u64,
        below: u64,
    ) -> QueryResult<Vec<ArchivedCopy>> {
        url::table
            .filter(url::archive_file.ge(from))
            .filter(url::archive_file.lt(below))
            .filter(url::archive_item.is_not_null())
            .select((
                url::id,
                url::archive_file.assume_not_null(),
                url::archive_item.assume_not_null(),
                url::last_downloaded,
                url::steady_level,
            ))
            .load(conn)
    }

    /// Points each URL at its moved copy, unless the row moved on meanwhile (booked again,
    /// or a new updatetag forgot the copy): those keep what they have. Returns how many
    /// moved; call it in a transaction.
    pub fn move_copies(conn: &mut MysqlConnection, moves: &[MovedCopy]) -> QueryResult<usize> {
        let mut n = 0;
        for m in moves {
            n += diesel::update(
                url::table
                    .find(m.id)
                    .filter(url::archive_file.eq(m.from.0))
                    .filter(url::archive_item.eq(m.from.1)),
            )
            .set((url::archive_file.eq(m.to.0), url::archive_item.eq(m.to.1)))
            .execute(conn)?;
        }
        Ok(n)
    }
}
