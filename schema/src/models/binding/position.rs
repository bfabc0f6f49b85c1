//! How far a node's bindings store is reflected in `binding_page`: moved in the worker's batch
//! transaction, after the batch's items were appended and synced.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::BindingPosition;
use crate::schema::binding_position as pos;

/// A place in a segment store: (segment file id, item index).
type Place = (u64, u32);

impl BindingPosition {
    pub fn find(conn: &mut MysqlConnection, node: &str, store: &str) -> QueryResult<Option<Self>> {
        pos::table
            .find((node, store))
            .select(Self::as_select())
            .first(conn)
            .optional()
    }

    pub fn place(&self) -> Place {
        (self.file_id, self.item_idx)
    }

    /// Sets the place (made if there is none yet).
    pub fn set(
        conn: &mut MysqlConnection,
        node: &str,
        store: &str,
        place: Place,
        now: NaiveDateTime,
    ) -> QueryResult<()> {
        diesel::replace_into(pos::table)
            .values((
                pos::node.eq(node),
                pos::store.eq(store),
                pos::file_id.eq(place.0),
                pos::item_idx.eq(place.1),
                pos::updated_at.eq(now),
            ))
            .execute(conn)?;
        Ok(())
    }
}
