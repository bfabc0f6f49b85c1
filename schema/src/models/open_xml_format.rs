use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use super::{GroupType, IndexType};
use crate::db::last_insert_id;
use crate::schema::open_xml_format;

/// One field rule of a resource class: how to cut that field out of the class's XML items.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = open_xml_format, check_for_backend(Mysql))]
pub struct OpenXmlFormat {
    pub id: u32,
    pub class_id: u32,
    pub label_name: String,
    pub parent_label: String,
    pub xpath: String,
    pub is_key: bool,
    pub is_index: bool,
    pub is_fullhit: bool,
    pub is_mark: bool,
    pub is_required: bool,
    pub index_type: IndexType,
    pub group_type: GroupType,
}

#[derive(Debug, Clone, Insertable, AsChangeset)]
#[diesel(table_name = open_xml_format)]
pub struct NewOpenXmlFormat<'a> {
    pub class_id: u32,
    pub label_name: &'a str,
    pub parent_label: &'a str,
    pub xpath: &'a str,
    pub is_key: bool,
    pub is_index: bool,
    pub is_fullhit: bool,
    pub is_mark: bool,
    pub is_required: bool,
    pub index_type: IndexType,
    pub group_type: GroupType,
}

impl OpenXmlFormat {
    pub fn find(conn: &mut MysqlConnection, id: u32) -> QueryResult<Self> {
        open_xml_format::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
    }

    pub fn find_field(
        conn: &mut MysqlConnection,
        class_id: u32,
        parent_label: &str,
        label_name: &str,
    ) -> QueryResult<Self> {
        open_xml_format::table
            .filter(open_xml_format::class_id.eq(class_id))
            .filter(open_xml_format::parent_label.eq(parent_label))
            .filter(open_xml_format::label_name.eq(label_name))
            .select(Self::as_select())
            .first(conn)
    }

    /// The rules of a class, by id (the order they were defined in).
    pub fn for_class(conn: &mut MysqlConnection, class_id: u32) -> QueryResult<Vec<Self>> {
        open_xml_format::table
            .filter(open_xml_format::class_id.eq(class_id))
            .order(open_xml_format::id)
            .select(Self::as_select())
            .load(conn)
    }
}

impl NewOpenXmlFormat<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<OpenXmlFormat> {
        diesel::insert_into(open_xml_format::table)
            .values(self)
            .execute(conn)?;
        let id = last_insert_id(conn)?;
        OpenXmlFormat::find(conn, id)
    }

    /// Inserts the rule, or rewrites the rule of the same class, parent and label.
    pub fn upsert(&self, conn: &mut MysqlConnection) -> QueryResult<OpenXmlFormat> {
        diesel::insert_into(open_xml_format::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set(self)
            .execute(conn)?;
        OpenXmlFormat::find_field(conn, self.class_id, self.parent_label, self.label_name)
    }
}
