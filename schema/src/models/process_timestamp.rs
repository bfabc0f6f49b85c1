use chrono::NaiveDateTime;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use super::FetchStatus;
use crate::db::last_insert_id;
use crate::schema::process_timestamp;

/// One fetch run of a resource. An append-only log: a run's row is inserted when it starts
/// and updated as it goes, so there is no natural key to upsert by.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = process_timestamp, check_for_backend(Mysql))]
pub struct ProcessTimestamp {
    pub id: u64,
    pub res_id: u32,
    pub is_manual: bool,
    pub status: FetchStatus,
    pub fetch_start: Option<NaiveDateTime>,
    pub fetch_end: Option<NaiveDateTime>,
    pub write_start: Option<NaiveDateTime>,
    pub write_end: Option<NaiveDateTime>,
    pub items: u32,
    pub inserted: u32,
    pub updated: u32,
    pub deleted: u32,
    pub failed_keys: u32,
    /// Where in the resources segment store the run began emitting (see the migration).
    pub emit_file: Option<u64>,
    pub emit_item: Option<u32>,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = process_timestamp)]
pub struct NewProcessTimestamp {
    pub res_id: u32,
    pub is_manual: bool,
    pub status: FetchStatus,
    pub fetch_start: Option<NaiveDateTime>,
}

#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = process_timestamp)]
pub struct ProcessTimestampChanges {
    pub status: Option<FetchStatus>,
    pub fetch_start: Option<Option<NaiveDateTime>>,
    pub fetch_end: Option<Option<NaiveDateTime>>,
    pub write_start: Option<Option<NaiveDateTime>>,
    pub write_end: Option<Option<NaiveDateTime>>,
    pub items: Option<u32>,
    pub inserted: Option<u32>,
    pub updated: Option<u32>,
    pub deleted: Option<u32>,
    pub failed_keys: Option<u32>,
    pub emit_file: Option<Option<u64>>,
    pub emit_item: Option<Option<u32>>,
}

impl ProcessTimestamp {
    pub fn find(conn: &mut MysqlConnection, id: u64) -> QueryResult<Self> {
        process_timestamp::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
    }

    /// The last `limit` runs of a resource, newest first.
    pub fn recent(conn: &mut MysqlConnection, res_id: u32, limit: i64) -> QueryResult<Vec<Self>> {
        process_timestamp::table
            .filter(process_timestamp::res_id.eq(res_id))
            .order(process_timestamp::id.desc())
            .limit(limit)
            .select(Self::as_select())
            .load(conn)
    }

    /// The id and `fetch_start` of the run of `res_id` before `run`
    /// (`ix_process_timestamp_res`), if any.
    pub fn previous_run(
        conn: &mut MysqlConnection,
        res_id: u32,
        run: u64,
    ) -> QueryResult<Option<(u64, Option<NaiveDateTime>)>> {
        process_timestamp::table
            .filter(process_timestamp::res_id.eq(res_id))
            .filter(process_timestamp::id.lt(run))
            .order(process_timestamp::id.desc())
            .select((process_timestamp::id, process_timestamp::fetch_start))
            .first(conn)
            .optional()
    }

    /// The runs of a resource that committed their `vr_data` changes and may not have
    /// emitted all of them (`emit_file` set, `write_end` not), oldest first.
    pub fn unfinished_emissions(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<Vec<Self>> {
        process_timestamp::table
            .filter(process_timestamp::res_id.eq(res_id))
            .filter(process_timestamp::emit_file.is_not_null())
            .filter(process_timestamp::write_end.is_null())
            .order(process_timestamp::id)
            .select(Self::as_select())
            .load(conn)
    }

    /// Marks every run of `res_id` but `current` still shown as running as an
    /// error: the resource is claimed again, so their process died (a crash, `kill -9`).
    pub fn close_interrupted(
        conn: &mut MysqlConnection,
        res_id: u32,
        current: u64,
    ) -> QueryResult<usize> {
        diesel::update(
            process_timestamp::table
                .filter(process_timestamp::res_id.eq(res_id))
                .filter(process_timestamp::id.ne(current))
                .filter(process_timestamp::status.eq(FetchStatus::Running)),
        )
        .set(process_timestamp::status.eq(FetchStatus::Error))
        .execute(conn)
    }

    pub fn update(
        conn: &mut MysqlConnection,
        id: u64,
        changes: &ProcessTimestampChanges,
    ) -> QueryResult<usize> {
        diesel::update(process_timestamp::table.find(id))
            .set(changes)
            .execute(conn)
    }
}

impl NewProcessTimestamp {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<ProcessTimestamp> {
        diesel::insert_into(process_timestamp::table)
            .values(self)
            .execute(conn)?;
        let id = last_insert_id(conn)?;
        ProcessTimestamp::find(conn, id)
    }
}
