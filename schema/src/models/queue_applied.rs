use chrono::NaiveDateTime;
use diesel::mysql::Mysql;
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error};

use crate::schema::queue_applied;

/// A queue file the loader has applied.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = queue_applied, primary_key(source, file_name), check_for_backend(Mysql))]
pub struct QueueApplied {
    pub source: String,
    pub file_name: String,
    pub applied_at: NaiveDateTime,
    pub row_count: u32,
    /// Not applied: another master's files had counted its period (`Loader.Mode = duplicate`).
    pub skipped: bool,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = queue_applied)]
pub struct NewQueueApplied<'a> {
    pub source: &'a str,
    pub file_name: &'a str,
    pub row_count: u32,
    pub skipped: bool,
}

impl QueueApplied {
    pub fn find(conn: &mut MysqlConnection, source: &str, file_name: &str) -> QueryResult<Self> {
        queue_applied::table
            .find((source, file_name))
            .select(Self::as_select())
            .first(conn)
    }

    /// The last `limit` files applied from one inbox, newest first.
    pub fn recent(conn: &mut MysqlConnection, source: &str, limit: i64) -> QueryResult<Vec<Self>> {
        queue_applied::table
            .filter(queue_applied::source.eq(source))
            .order(queue_applied::file_name.desc())
            .limit(limit)
            .select(Self::as_select())
            .load(conn)
    }
}

impl NewQueueApplied<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<QueueApplied> {
        diesel::insert_into(queue_applied::table)
            .values(self)
            .execute(conn)?;
        QueueApplied::find(conn, self.source, self.file_name)
    }

    /// Records the file as applied; `false` when it already was. Run inside the transaction
    /// that applies the file: the record and the rows commit together or not at all, which is
    /// what makes loading exactly-once.
    pub fn record(&self, conn: &mut MysqlConnection) -> QueryResult<bool> {
        match diesel::insert_into(queue_applied::table)
            .values(self)
            .execute(conn)
        {
            Ok(_) => Ok(true),
            Err(Error::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
