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

    /// The whole domain map: `(domain, node)` for every row.
    pub fn map(conn: &mut MysqlConnection) -> QueryResult<Vec<(String, u32)>> {
        partner_domain::table
            .select((partner_domain::domain, partner_domain::yacobot_id))
            .load(conn)
    }

    /// The rows of `domains` (those that exist), in chunks the server takes comfortably.
    pub fn find_many(conn: &mut MysqlConnection, domains: &[&str]) -> QueryResult<Vec<Self>> {
        let mut rows = Vec::with_capacity(domains.len());
        for chunk in domains.chunks(1000) {
            rows.extend(
                partner_domain::table
                    .filter(partner_domain::domain.eq_any(chunk))
                    .select(Self::as_select())
                    .load(conn)?,
            );
        }
        Ok(rows)
    }

    /// Moves `domain` from node `from` to node `to`, only if it is still on `from`: of two
    /// masters re-assigning a domain whose node was disabled, the first one wins.
    pub fn reassign(
        conn: &mut MysqlConnection,
        domain: &str,
        from: u32,
        to: u32,
        by: &str,
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        diesel::update(
            partner_domain::table
                .filter(partner_domain::domain.eq(domain))
                .filter(partner_domain::yacobot_id.eq(from)),
        )
        .set((
            partner_domain::yacobot_id.eq(to),
            partner_domain::assigned_by.eq(by),
            partner_domain::updated_at.eq(now),
        ))
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

    /// [`NewPartnerDomain::insert_if_absent`] for many rows, in multi-row statements.
    pub fn insert_many_if_absent(
        conn: &mut MysqlConnection,
        rows: &[NewPartnerDomain<'_>],
    ) -> QueryResult<()> {
        for chunk in rows.chunks(500) {
            diesel::insert_into(partner_domain::table)
                .values(chunk)
                .on_conflict(DuplicatedKeys)
                .do_update()
                .set(partner_domain::domain.eq(partner_domain::domain))
                .execute(conn)?;
        }
        Ok(())
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
