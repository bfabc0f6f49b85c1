use chrono::NaiveDateTime;
use diesel::dsl::DuplicatedKeys;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use crate::schema::partner_domain;

/// Which crawler node owns a domain.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Identifiable)]
#[diesel(table_name = partner_domain, primary_key(domain), check_for_backend(Mysql))]
pub struct PartnerDomain {
    pub domain: String,
    pub yacobot_id: u32,
    pub assigned_by: String,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = partner_domain)]
pub struct NewPartnerDomain<'a> {
    pub domain: &'a str,
    pub yacobot_id: u32,
    pub assigned_by: &'a str,
}

#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = partner_domain)]
pub struct PartnerDomainChanges<'a> {
    pub yacobot_id: Option<u32>,
    pub assigned_by: Option<&'a str>,
    pub updated_at: Option<NaiveDateTime>,
}

impl PartnerDomain {
    pub fn find(conn: &mut MysqlConnection, domain: &str) -> QueryResult<Self> {
        partner_domain::table
            .find(domain)
            .select(Self::as_select())
            .first(conn)
    }

    /// The domains a node owns, by name.
    pub fn for_node(conn: &mut MysqlConnection, node_id: u32) -> QueryResult<Vec<Self>> {
        partner_domain::table
            .filter(partner_domain::yacobot_id.eq(node_id))
            .order(partner_domain::domain)
            .select(Self::as_select())
            .load(conn)
    }

    pub fn update(
        conn: &mut MysqlConnection,
        domain: &str,
        changes: &PartnerDomainChanges<'_>,
    ) -> QueryResult<usize> {
        diesel::update(partner_domain::table.find(domain))
            .set(changes)
            .execute(conn)
    }
}

impl NewPartnerDomain<'_> {
    pub fn insert(&self, conn: &mut MysqlConnection) -> QueryResult<PartnerDomain> {
        diesel::insert_into(partner_domain::table)
            .values(self)
            .execute(conn)?;
        PartnerDomain::find(conn, self.domain)
    }

    /// Inserts the mapping unless the domain already has one, and returns the row that is in
    /// the database afterwards: when two masters assign the same new domain, the first row
    /// written wins and both route by it.
    pub fn insert_if_absent(&self, conn: &mut MysqlConnection) -> QueryResult<PartnerDomain> {
        diesel::insert_into(partner_domain::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set(partner_domain::domain.eq(partner_domain::domain))
            .execute(conn)?;
        PartnerDomain::find(conn, self.domain)
    }

    /// Inserts the mapping or moves the domain to this node (an admin's re-assignment, or a
    /// domain whose node was disabled).
    pub fn upsert(
        &self,
        conn: &mut MysqlConnection,
        now: NaiveDateTime,
    ) -> QueryResult<PartnerDomain> {
        diesel::insert_into(partner_domain::table)
            .values(self)
            .on_conflict(DuplicatedKeys)
            .do_update()
            .set((
                partner_domain::yacobot_id.eq(self.yacobot_id),
                partner_domain::assigned_by.eq(self.assigned_by),
                partner_domain::updated_at.eq(now),
            ))
            .execute(conn)?;
        PartnerDomain::find(conn, self.domain)
    }
}
