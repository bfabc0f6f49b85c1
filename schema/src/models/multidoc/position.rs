//! Where a node's page analysis is in an archive: moved forward with every batch, in the
//! batch's transaction, only from where the worker read it (a rewind meanwhile wins); moved
//! back by a rewind, which leaves the end of what was counted where it was.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::MultidocPosition;
use crate::schema::multidoc_position as pos;

/// A place in a segment store: (segment file id, item index).
type Place = (u64, u32);

impl MultidocPosition {
    pub fn find(conn: &mut MysqlConnection, node: &str, store: &str) -> QueryResult<Option<Self>> {
        pos::table
            .find((node, store))
            .select(Self::as_select())
            .first(conn)
            .optional()
    }

    /// Every position, by node and store.
    pub fn all(conn: &mut MysqlConnection) -> QueryResult<Vec<Self>> {
        pos::table
            .order((pos::node, pos::store))
            .select(Self::as_select())
            .load(conn)
    }

    /// The position of `node` in `store`, made at `start` if there is none yet.
    pub fn open(
        conn: &mut MysqlConnection,
        node: &str,
        store: &str,
        start: Place,
        now: NaiveDateTime,
    ) -> QueryResult<Self> {
        diesel::insert_or_ignore_into(pos::table)
            .values((
                pos::node.eq(node),
                pos::store.eq(store),
                pos::file_id.eq(start.0),
                pos::item_idx.eq(start.1),
                pos::counted_file.eq(start.0),
                pos::counted_item.eq(start.1),
                pos::updated_at.eq(now),
            ))
            .execute(conn)?;
        pos::table
            .find((node, store))
            .select(Self::as_select())
            .first(conn)
    }

    pub fn place(&self) -> Place {
        (self.file_id, self.item_idx)
    }

    pub fn counted(&self) -> Place {
        (self.counted_file, self.counted_item)
    }

    /// Moves the position from `from` to `to` and the end of what was counted to `counted`;
    /// `false` (nothing written) if the position is no longer at `from` (a rewind).
    pub fn advance(
        conn: &mut MysqlConnection,
        node: &str,
        store: &str,
        from: Place,
        to: Place,
        counted: Place,
        now: NaiveDateTime,
    ) -> QueryResult<bool> {
        let n = diesel::update(
            pos::table
                .find((node, store))
                .filter(pos::file_id.eq(from.0))
                .filter(pos::item_idx.eq(from.1)),
        )
        .set((
            pos::file_id.eq(to.0),
            pos::item_idx.eq(to.1),
            pos::counted_file.eq(counted.0),
            pos::counted_item.eq(counted.1),
            pos::updated_at.eq(now),
        ))
        .execute(conn)?;
        Ok(n == 1)
    }

    /// Moves the position of `node` in `store` back to `to` (re-analysis); the end of what was
    /// counted stays, or becomes the old position if that was further. A `to` not before the
    /// position changes nothing. Returns the row as it was and as it is, `None` if there is
    /// no such position.
    pub fn rewind(
        conn: &mut MysqlConnection,
        node: &str,
        store: &str,
        to: Place,
        now: NaiveDateTime,
    ) -> QueryResult<Option<(Self, Self)>> {
        conn.transaction(|c| {
            let Some(was) = pos::table
                .find((node, store))
                .select(Self::as_select())
                .for_update()
                .first(c)
                .optional()?
            else {
                return Ok(None);
            };
            if to >= was.place() {
                return Ok(Some((was.clone(), was)));
            }
            let counted = was.counted().max(was.place());
            diesel::update(pos::table.find((node, store)))
                .set((
                    pos::file_id.eq(to.0),
                    pos::item_idx.eq(to.1),
                    pos::counted_file.eq(counted.0),
                    pos::counted_item.eq(counted.1),
                    pos::updated_at.eq(now),
                ))
                .execute(c)?;
            let is = Self {
                file_id: to.0,
                item_idx: to.1,
                counted_file: counted.0,
                counted_item: counted.1,
                updated_at: now,
                ..was.clone()
            };
            Ok(Some((was, is)))
        })
    }
}
