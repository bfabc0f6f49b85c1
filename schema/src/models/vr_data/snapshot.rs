//! The live items of a resources store read again, for a reader's resend (docs/formats.md
//! "Resend snapshots"): what the store's receivers hold of them, without reading the store.

use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text, TinyInt, Unsigned};

use super::VrData;
use crate::models::{sql, DataStatus};

/// A live item as its `UPDATE` item was emitted: its doc id, its content, its feed URL.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct SnapshotItem {
    #[diesel(sql_type = Unsigned<BigInt>)]
    pub id: u64,
    #[diesel(sql_type = Text)]
    pub doc_id: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub content: Option<String>,
    #[diesel(sql_type = Text)]
    pub url: String,
}

impl VrData {
    /// The next `limit` live items after row `after`, of the resources whose class is in
    /// `classes`, by id.
    pub fn snapshot_items(
        conn: &mut MysqlConnection,
        classes: std::ops::Range<i64>,
        after: u64,
        limit: i64,
    ) -> QueryResult<Vec<SnapshotItem>> {
        diesel::sql_query(sql::statement(include_str!("snapshot_items.sql")))
            .bind::<Unsigned<BigInt>, _>(after)
            .bind::<Unsigned<TinyInt>, _>(DataStatus::Live)
            .bind::<BigInt, _>(classes.start)
            .bind::<BigInt, _>(classes.end)
            .bind::<BigInt, _>(limit)
            .load(conn)
    }
}
