//! What a batch's grouping needs from the database: the group of each of its URLs as stored,
//! and the groups near each of its pages' fingerprints (by their bands: a few indexed reads a
//! page, whatever the size of the domain).

use std::collections::HashMap;

use diesel::prelude::*;
use focuser_schema::models::{MultidocGroup, NearGroup};

use super::super::weigh::{domain_key, Weighed};

/// The stored groups a batch's grouping starts from.
#[derive(Default)]
pub struct Known {
    /// The group of each URL of the batch that has one.
    pub current: HashMap<u64, u64>,
    /// The groups near each (domain key, fingerprint) of the batch's pages, nearest first.
    pub near: HashMap<(u64, u64), Vec<NearGroup>>,
}

/// Reads what grouping `items` needs (safe to repeat: reads only).
pub fn load(conn: &mut MysqlConnection, items: &[Weighed]) -> QueryResult<Known> {
    let mut ids = Vec::with_capacity(items.len());
    let mut keys = Vec::new();
    for w in items {
        ids.push(w.id());
        if let Weighed::Page { p, text, .. } = w {
            if let Some(s) = text.simhash {
                keys.push((domain_key(&p.domain), s));
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    keys.sort_unstable();
    keys.dedup();
    let mut known = Known {
        current: MultidocGroup::of_pages(conn, &ids)?.into_iter().collect(),
        near: HashMap::with_capacity(keys.len()),
    };
    for (key, simhash) in keys {
        known
            .near
            .insert((key, simhash), MultidocGroup::near(conn, key, simhash)?);
    }
    Ok(known)
}
