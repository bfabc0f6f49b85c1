//! What a batch's grouping starts from: the group of each of its URLs as stored (the groups
//! near its pages' texts are read page by page, once each text is known).

use std::collections::HashMap;

use diesel::prelude::*;
use focuser_schema::models::MultidocGroup;

use super::super::take::{Batch, Taken};

/// The group of each URL of `batch` that has one (safe to repeat: reads only).
pub fn current(conn: &mut MysqlConnection, batch: &Batch) -> QueryResult<HashMap<u64, u64>> {
    let mut ids: Vec<u64> = batch
        .items
        .iter()
        .map(|t| match t {
            Taken::Gone { id, .. } => *id,
            Taken::Page(p, _) => p.id,
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(MultidocGroup::of_pages(conn, &ids)?.into_iter().collect())
}
