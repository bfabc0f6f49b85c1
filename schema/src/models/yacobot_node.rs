use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use crate::db::last_insert_id;
use crate::schema::yacobot_node;

/// A crawler node the master may route domains to.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = yacobot_node, check_for_backend(Mysql))]
pub struct YacobotNode {
    pub id: u32,
    pub name: String,
    pub host: String,
    pub enabled: bool,
    pub created_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable, AsChangeset)]
#[diesel(table_name = yacobot_node)]
pub struct NewYacobotNode<'a> {
    pub name: &'a str,
    pub host: &'a str,
    pub enabled: bool,
}

impl YacobotNode {
    pub fn find(conn: &mut MysqlConnection, id: u32) -> QueryResult<Self> {
        yacobot_node::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
    }

    pub fn find_by_name(conn: &mut MysqlConnection, name: &str) -> QueryResult<Self> {
        yacobot_node::table
            .filter(yacobot_node::name.eq(name))
            .select(Self::as_select())
            .first(conn)
    }

    /// Every node, by id.
    pub fn all(conn: &mut MysqlConnection) -> QueryResult<Vec<Self>> {
        yacobot_node::table
            .order(yacobot_node::id)
            .select(Self::as_select())
            .load(conn)
    }

    /// The nodes the master may route to, by id (the tie-break order of
    /// docs/design.md#master-cycle, step 6).
    pub fn enabled(conn: &mut MysqlConnection) -> QueryResult<Vec<Self>> {
        yacobot_node::table
            .filter(yacobot_node::enabled.eq(true))
            .order(yacobot_node::id)
            .select(Self::as_select())
            .load(conn)
    }
}

impl NewYacobotNode<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<YacobotNode> {
        diesel::insert_into(yacobot_node::table)
            .values(self)
            .execute(conn)?;
        let id = last_insert_id(conn)?;
        YacobotNode::find(conn, id)
    }

    /// Inserts the node under the id given (a node's id names its queue directory, so a
    /// deployment may want to choose it; on a Galera cluster `auto_increment` steps by the
    /// cluster size, so [`Self::insert`] gives 1, 4, 7, …).
    pub fn insert_as(&self, conn: &mut MysqlConnection, id: u32) -> QueryResult<YacobotNode> {
        diesel::insert_into(yacobot_node::table)
            .values((yacobot_node::id.eq(id), self))
            .execute(conn)?;
        YacobotNode::find(conn, id)
    }

    /// Inserts the node, or updates host and `enabled` of the node with this name.
    pub fn upsert(&self, conn: &mut MysqlConnection) -> QueryResult<YacobotNode> {
        diesel::insert_into(yacobot_node::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set(self)
            .execute(conn)?;
        YacobotNode::find_by_name(conn, self.name)
    }
}
