//! Where each crawler began appending the `DELETE` items of the withdrawal batch it holds
//! (docs/design.md#yacobot-withdrawal): written in the transaction that takes the batch, read
//! after a crash to tell the items already durable from those still to append.

use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use crate::schema::withdraw_position as pos;

#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = pos, check_for_backend(Mysql))]
pub struct WithdrawPosition {
    pub node: String,
    pub store: String,
    pub file_id: u64,
    pub item_idx: u32,
    pub updated_at: NaiveDateTime,
}

impl WithdrawPosition {
    pub fn find(conn: &mut MysqlConnection, node: &str, store: &str) -> QueryResult<Option<Self>> {
        pos::table
            .find((node, store))
            .select(Self::as_select())
            .first(conn)
            .optional()
    }

    /// Records that the batch `node` takes now begins at `place` in `store`.
    pub fn set(
        conn: &mut MysqlConnection,
        node: &str,
        store: &str,
        place: (u64, u32),
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        diesel::insert_into(pos::table)
            .values((
                pos::node.eq(node),
                pos::store.eq(store),
                pos::file_id.eq(place.0),
                pos::item_idx.eq(place.1),
                pos::updated_at.eq(now),
            ))
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set((
                pos::file_id.eq(place.0),
                pos::item_idx.eq(place.1),
                pos::updated_at.eq(now),
            ))
            .execute(conn)
    }

    /// The place in the segment store: (segment file id, item index).
    pub fn place(&self) -> (u64, u32) {
        (self.file_id, self.item_idx)
    }
}
