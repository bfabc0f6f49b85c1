//! `resource_status` brought in line with a data source's sitemap
//! (docs/design.md#yacobot-resources): URLs new to the resource inserted, URLs now listed by this
//! source (moved from another source, or listed again after being retired) updated, URLs of this
//! source no longer listed retired.

use std::collections::{HashMap, HashSet};

use diesel::prelude::*;

use super::NewResourceStatus;
use crate::models::FeedUrlStatus;
use crate::schema::resource_status;

/// Rows per statement.
const CHUNK: usize = 1000;

/// What [`super::ResourceStatus::sync_source`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncCounts {
    pub inserted: usize,
    /// Moved from another data source, or listed again after being retired.
    pub updated: usize,
    pub retired: usize,
    pub unchanged: usize,
}

impl super::ResourceStatus {
    /// Makes data source `data_source_id` of resource `res_id` list exactly `urls` (live,
    /// `res_status` listed), in one transaction. A URL another source of the resource listed is
    /// moved to this one: the caller passes only the URLs this source should own (the first
    /// source by priority keeps a URL two sources list).
    pub fn sync_source(
        conn: &mut MysqlConnection,
        res_id: u32,
        data_source_id: u32,
        urls: &[String],
    ) -> QueryResult<SyncCounts> {
        conn.transaction(|conn| {
            let rows: Vec<(u64, u32, String, FeedUrlStatus)> = resource_status::table
                .filter(resource_status::res_id.eq(res_id))
                .select((
                    resource_status::id,
                    resource_status::data_source_id,
                    resource_status::url,
                    resource_status::res_status,
                ))
                .for_update()
                .load(conn)?;
            let known: HashMap<&str, (u64, u32, FeedUrlStatus)> = rows
                .iter()
                .map(|(id, ds, url, st)| (url.as_str(), (*id, *ds, *st)))
                .collect();
            let listed: HashSet<&str> = urls.iter().map(String::as_str).collect();
            let mut counts = SyncCounts::default();
            let mut to_update = Vec::new();
            for url in &listed {
                match known.get(url) {
                    None => {
                        NewResourceStatus {
                            res_id,
                            data_source_id,
                            url,
                            res_status: FeedUrlStatus::Listed,
                        }
                        .insert_only(conn)?;
                        counts.inserted += 1;
                    }
                    Some(&(id, ds, st)) if ds != data_source_id || st != FeedUrlStatus::Listed => {
                        to_update.push(id)
                    }
                    Some(_) => counts.unchanged += 1,
                }
            }
            for chunk in to_update.chunks(CHUNK) {
                counts.updated += diesel::update(
                    resource_status::table.filter(resource_status::id.eq_any(chunk)),
                )
                .set((
                    resource_status::data_source_id.eq(data_source_id),
                    resource_status::res_status.eq(FeedUrlStatus::Listed),
                ))
                .execute(conn)?;
            }
            let gone: Vec<u64> = rows
                .iter()
                .filter(|(_, ds, url, st)| {
                    *ds == data_source_id
                        && *st == FeedUrlStatus::Listed
                        && !listed.contains(url.as_str())
                })
                .map(|(id, ..)| *id)
                .collect();
            for chunk in gone.chunks(CHUNK) {
                counts.retired += diesel::update(
                    resource_status::table.filter(resource_status::id.eq_any(chunk)),
                )
                .set(resource_status::res_status.eq(FeedUrlStatus::Retired))
                .execute(conn)?;
            }
            Ok(counts)
        })
    }
}

impl NewResourceStatus<'_> {
    fn insert_only(&self, conn: &mut MysqlConnection) -> QueryResult<usize> {
        diesel::insert_into(resource_status::table)
            .values(self)
            .execute(conn)
    }
}
