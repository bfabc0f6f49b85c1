//! Duplicate groups (`multidoc_group`, docs/multidoc.md "Duplicate groups"): the groups near a
//! page's text found by its fingerprint's bands (`near_groups.sql`), the groups a batch founds
//! ([`MultidocGroup::write`]), and what is left to settle once its pages are written: groups
//! with no page go, groups whose representative left take their smallest page
//! ([`MultidocGroup::settle`]).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Datetime, Integer, Nullable, SmallInt, Text, Unsigned};

use super::evidence::MAX_KEYS;
use super::{MultidocGroup, NewMultidocGroup};
use crate::models::sql;
use crate::schema::{multidoc_group, multidoc_page};

/// Groups read at most for one page: near groups are few (a page near a group joins it, so
/// groups are founded more than 3 bits from each other); this bounds a pathological domain.
pub const MAX_NEAR: u32 = 16;

/// A group near a page's text, with its representative's rows (`None` where it has none).
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub struct NearGroup {
    #[diesel(sql_type = Unsigned<BigInt>)]
    pub group_id: u64,
    #[diesel(sql_type = Unsigned<BigInt>)]
    pub simhash: u64,
    #[diesel(sql_type = Unsigned<BigInt>)]
    pub rep: u64,
    #[diesel(sql_type = Nullable<Text>)]
    pub rep_md5: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub rep_categories: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub rep_category_names: Option<String>,
    #[diesel(sql_type = Nullable<Unsigned<Integer>>)]
    pub rep_model_checksum: Option<u32>,
    /// The representative's own group (its row's `dup_group`): the group's, unless its row is
    /// missing.
    #[diesel(sql_type = Nullable<Unsigned<BigInt>>)]
    pub rep_group: Option<u64>,
    /// The representative's binding (its ad-server item), if it has one.
    #[diesel(sql_type = Nullable<Text>)]
    pub rep_item: Option<String>,
}

/// The four 16-bit bands of a fingerprint, the high bits first (as
/// `focuser_multidoc::simhash::bands`).
fn bands(h: u64) -> [u16; 4] {
    [
        (h >> 48) as u16,
        (h >> 32) as u16,
        (h >> 16) as u16,
        h as u16,
    ]
}

impl MultidocGroup {
    pub fn find(conn: &mut MysqlConnection, id: u64) -> QueryResult<Option<Self>> {
        multidoc_group::table
            .find(id)
            .select(Self::as_select())
            .first(conn)
            .optional()
    }

    /// The groups of domain `domain_key` at most 3 bits from `simhash`, nearest first (then
    /// the smallest id), at most [`MAX_NEAR`].
    pub fn near(
        conn: &mut MysqlConnection,
        domain_key: u64,
        simhash: u64,
    ) -> QueryResult<Vec<NearGroup>> {
        let mut q = diesel::sql_query(sql::statement(include_str!("near_groups.sql"))).into_boxed();
        for band in bands(simhash) {
            q = q
                .bind::<Unsigned<BigInt>, _>(domain_key)
                .bind::<Unsigned<SmallInt>, _>(band);
        }
        q.bind::<Unsigned<BigInt>, _>(simhash)
            .bind::<Unsigned<BigInt>, _>(simhash)
            .bind::<Unsigned<Integer>, _>(MAX_NEAR)
            .load(conn)
    }

    /// Inserts the groups of `groups`; one that exists already takes the row's `rep`.
    pub fn write(conn: &mut MysqlConnection, groups: &[NewMultidocGroup]) -> QueryResult<()> {
        let text = sql::statement(include_str!("write_groups.sql"));
        for chunk in groups.chunks(MAX_KEYS / 10) {
            let mut q = diesel::sql_query(sql::repeat(&text, chunk.len())).into_boxed();
            for g in chunk {
                let b = bands(g.simhash);
                q = q
                    .bind::<Unsigned<BigInt>, _>(g.id)
                    .bind::<Unsigned<BigInt>, _>(g.domain_key)
                    .bind::<Unsigned<BigInt>, _>(g.simhash)
                    .bind::<Unsigned<SmallInt>, _>(b[0])
                    .bind::<Unsigned<SmallInt>, _>(b[1])
                    .bind::<Unsigned<SmallInt>, _>(b[2])
                    .bind::<Unsigned<SmallInt>, _>(b[3])
                    .bind::<Unsigned<BigInt>, _>(g.rep)
                    .bind::<Datetime, _>(g.created_at);
            }
            q.execute(conn)?;
        }
        Ok(())
    }

    /// After a batch's pages are written: of `touched` (the groups its pages joined or left),
    /// those with no page left are deleted, and those whose representative is no longer theirs
    /// take their smallest page. Returns (groups deleted, representatives replaced).
    pub fn settle(conn: &mut MysqlConnection, touched: &[u64]) -> QueryResult<(usize, usize)> {
        let (mut deleted, mut replaced) = (0, 0);
        let empty = sql::statement(include_str!("empty_groups.sql"));
        let reps = sql::statement(include_str!("new_reps.sql"));
        for chunk in touched.chunks(MAX_KEYS) {
            let mut q = diesel::sql_query(sql::repeat(&empty, chunk.len())).into_boxed();
            for &id in chunk {
                q = q.bind::<Unsigned<BigInt>, _>(id);
            }
            deleted += q.execute(conn)?;
            let mut q = diesel::sql_query(sql::repeat(&reps, chunk.len())).into_boxed();
            for &id in chunk {
                q = q.bind::<Unsigned<BigInt>, _>(id);
            }
            replaced += q.execute(conn)?;
        }
        Ok((deleted, replaced))
    }

    /// The group of each of `ids` that has a row and a group.
    pub fn of_pages(conn: &mut MysqlConnection, ids: &[u64]) -> QueryResult<Vec<(u64, u64)>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(MAX_KEYS) {
            out.extend(
                multidoc_page::table
                    .filter(multidoc_page::id.eq_any(chunk))
                    .filter(multidoc_page::dup_group.is_not_null())
                    .select((multidoc_page::id, multidoc_page::dup_group))
                    .load::<(u64, Option<u64>)>(conn)?
                    .into_iter()
                    .filter_map(|(id, g)| Some((id, g?))),
            );
        }
        Ok(out)
    }

    /// The pages of group `id`, smallest first (for tests and the operator).
    pub fn pages(conn: &mut MysqlConnection, id: u64) -> QueryResult<Vec<u64>> {
        multidoc_page::table
            .filter(multidoc_page::dup_group.eq(id))
            .order(multidoc_page::id)
            .select(multidoc_page::id)
            .load(conn)
    }
}
