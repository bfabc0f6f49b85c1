//! The query-argument rules (docs/design.md#yacobot-query-arguments), for a batch of queue records:
//! each argument is looked up in `path_arg_name` by `(path_hash, name)`; `significant = 0` drops it
//! from the URL, `1` keeps it, and an argument met for the first time is recorded as significant
//! and kept. The URL that remains is the one stored, under its own id.

use std::borrow::Cow;

use chrono::{DateTime, NaiveDateTime};
use diesel::mysql::MysqlConnection;
use diesel::QueryResult;
use focuser_formats::queue::QueueRecord;
use focuser_formats::urls;
use focuser_schema::models::{LoadRow, PathArgName};
use rustc_hash::{FxHashMap, FxHashSet};

/// `path_arg_name.name` holds this many bytes; a longer name is kept without a rule.
const MAX_NAME: usize = 255;
/// `url.updatetag` holds this many characters; a longer tag is stored as its MD5.
const MAX_TAG: usize = 64;

/// What the rules did to a batch's arguments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArgCounts {
    pub dropped: u64,
    pub kept: u64,
    /// Rules inserted as significant (arguments met for the first time).
    pub new_rules: u64,
}

/// A record with its rules applied, ready to upsert.
#[derive(Debug, Clone)]
pub struct Prepared<'r> {
    pub id: u64,
    pub url: Cow<'r, str>,
    pub domain: &'r str,
    pub path_hash: u64,
    pub hits: u32,
    pub updatetag: Cow<'r, str>,
    pub last_hit: NaiveDateTime,
}

impl Prepared<'_> {
    pub fn row(&self) -> LoadRow<'_> {
        LoadRow {
            id: self.id,
            url: &self.url,
            domain: self.domain,
            path_hash: self.path_hash,
            hits: self.hits,
            updatetag: &self.updatetag,
            last_hit: self.last_hit,
        }
    }
}

/// Paths whose rules a [`RuleCache`] holds at most; past it, it starts again empty.
const MAX_CACHED_PATHS: usize = 100_000;

/// The rules of the paths seen so far in one transaction (one queue file): a path's rules
/// are read once, and the rules inserted are added. Memory is bounded by
/// [`MAX_CACHED_PATHS`], not by the file.
#[derive(Debug, Default)]
pub struct RuleCache {
    paths: FxHashMap<u64, FxHashMap<String, bool>>,
}

impl RuleCache {
    /// Reads the rules of the paths of `wanted` not cached yet.
    fn fill(&mut self, conn: &mut MysqlConnection, wanted: &mut Vec<u64>) -> QueryResult<()> {
        wanted.sort_unstable();
        wanted.dedup();
        wanted.retain(|p| !self.paths.contains_key(p));
        if wanted.is_empty() {
            return Ok(());
        }
        if self.paths.len() + wanted.len() > MAX_CACHED_PATHS {
            self.paths.clear();
        }
        for p in wanted.iter() {
            self.paths.insert(*p, FxHashMap::default());
        }
        for rule in PathArgName::rules_for_paths(conn, wanted)? {
            self.paths
                .entry(rule.path_hash)
                .or_default()
                .insert(rule.name, rule.significant);
        }
        Ok(())
    }
}

/// Applies the rules to `records` inside the caller's transaction: reads the rules of the
/// batch's paths not in `cache` at once, and inserts the new ones at once.
pub fn prepare<'r>(
    conn: &mut MysqlConnection,
    cache: &mut RuleCache,
    records: &'r [QueueRecord],
    now: NaiveDateTime,
) -> QueryResult<(Vec<Prepared<'r>>, ArgCounts)> {
    // Each record's path, and whether it has arguments.
    let split: Vec<(bool, u64)> = records
        .iter()
        .map(|r| {
            let (_, query) = urls::split_query(&r.url);
            (
                query.is_some_and(|q| !q.is_empty()),
                urls::path_hash(&r.url),
            )
        })
        .collect();
    let mut paths: Vec<u64> = split
        .iter()
        .filter(|(args, _)| *args)
        .map(|(_, p)| *p)
        .collect();
    cache.fill(conn, &mut paths)?;
    let rules = &cache.paths;
    let mut counts = ArgCounts::default();
    let mut new_rules: FxHashSet<(u64, &str)> = FxHashSet::default();
    let mut out = Vec::with_capacity(records.len());
    for (r, (_, path_hash)) in records.iter().zip(split) {
        let path_rules = rules.get(&path_hash);
        let url = urls::without_args(&r.url, |arg| {
            let name = urls::arg_name(arg);
            match path_rules.and_then(|m| m.get(name)) {
                Some(false) => {
                    counts.dropped += 1;
                    return true;
                }
                Some(true) => {}
                None if name.len() <= MAX_NAME => {
                    new_rules.insert((path_hash, name));
                }
                None => {}
            }
            counts.kept += 1;
            false
        });
        out.push(Prepared {
            // Dropping an argument always shortens the URL: same length, same URL.
            id: if url.len() == r.url.len() {
                r.id
            } else {
                urls::url_id(&url)
            },
            url,
            domain: &r.domain,
            path_hash,
            hits: u32::try_from(r.hits).unwrap_or(u32::MAX),
            updatetag: tag(&r.updatetag),
            last_hit: DateTime::from_timestamp(r.timestamp, 0)
                .map(|t| t.naive_utc())
                .unwrap_or(now),
        });
    }
    if !new_rules.is_empty() {
        let list: Vec<(u64, &str)> = new_rules.into_iter().collect();
        counts.new_rules = PathArgName::insert_significant(conn, &list, now)? as u64;
        // What is there now: the rule inserted, or one another writer inserted first.
        let mut again: Vec<u64> = list.iter().map(|(p, _)| *p).collect();
        again.sort_unstable();
        again.dedup();
        for p in &again {
            cache.paths.remove(p);
        }
        cache.fill(conn, &mut again)?;
    }
    Ok((out, counts))
}

/// The updatetag as stored: as it is when it fits the column, else `md5:<hex>` of it, so
/// that a change is still a change.
fn tag(t: &str) -> Cow<'_, str> {
    if t.chars().count() <= MAX_TAG {
        Cow::Borrowed(t)
    } else {
        use md5::{Digest, Md5};
        let digest = Md5::digest(t.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        Cow::Owned(format!("md5:{hex}"))
    }
}

#[cfg(test)]
mod tests {
    use super::tag;

    #[test]
    fn long_tags_become_their_md5() {
        assert_eq!(tag("v1"), "v1");
        let long = "x".repeat(65);
        let t = tag(&long);
        assert!(t.starts_with("md5:") && t.len() == 36, "{t}");
        assert_ne!(t, tag(&"y".repeat(65)));
    }
}
