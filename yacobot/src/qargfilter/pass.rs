//! A pass over the frontier (docs/design.md#yacobot-qargfilter): `Qargfilter.Batch` URLs at a
//! time, in path order, each path whole (a path with more URLs is estimated on its first batch,
//! a sample in id order, which is MD5 order; its other URLs are read for merging only). For each
//! batch: the evidence and scores of its paths ([`estimate`]), written to `query_args` with
//! their evidence and imported into `path_arg_name` at once; the variants of a URL that carry
//! an argument now insignificant merged into their canonical URL ([`merge`]); probes for the
//! arguments with too little evidence ([`probe`]).

use std::time::{Duration, Instant};

use diesel::Connection;
use focuser_daemon::clock;
use focuser_daemon::db::DbError;
use focuser_schema::models::{
    NewQueryArg, NewQueryArgProbe, PathArgName, PathPage, QueryArg, QueryArgProbe, Url,
};
use rustc_hash::{FxHashMap, FxHashSet};

use super::estimate::{self, MainPrint, Page};
use super::stats::QargStats;
use super::{merge, probe};
use crate::config::QargfilterConfig;
use crate::status::add;
use crate::worker::Ctx;

/// Probes waiting for a crawler at most: past it, no more are queued.
const MAX_WAITING_PROBES: i64 = 100_000;

/// Where a pass is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor {
    /// The next batch starts at this path.
    From(u64),
    /// The rest of a path larger than a batch, after this id (merging only).
    Within {
        path: u64,
        after: u64,
    },
    Done,
}

/// What to do with a batch read at `cursor`: the rows to estimate (whole paths), the rows to
/// merge, and where the next batch starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub estimate: usize,
    pub merge: usize,
    pub next: Cursor,
}

/// After `path`, or the end.
fn after(path: u64) -> Cursor {
    path.checked_add(1).map_or(Cursor::Done, Cursor::From)
}

/// How a batch of `rows` (their paths, in order) read at `cursor` with `limit` is cut.
pub fn cut(cursor: Cursor, paths: &[u64], limit: usize) -> Cut {
    let (Some(&first), Some(&last)) = (paths.first(), paths.last()) else {
        return Cut {
            estimate: 0,
            merge: 0,
            next: Cursor::Done,
        };
    };
    let full = paths.len() >= limit;
    let n = paths.len();
    match cursor {
        Cursor::Within { .. } => Cut {
            estimate: 0,
            merge: n,
            next: if full {
                Cursor::Within {
                    path: last,
                    after: 0,
                }
            } else {
                after(last)
            },
        },
        _ if !full => Cut {
            estimate: n,
            merge: n,
            next: after(last),
        },
        // A batch of one path only: a sample of it.
        _ if first == last => Cut {
            estimate: n,
            merge: n,
            next: Cursor::Within {
                path: last,
                after: 0,
            },
        },
        // The last path may go on in the next batch: it starts there.
        _ => {
            let whole = paths.iter().position(|p| *p == last).unwrap_or(n);
            Cut {
                estimate: whole,
                merge: whole,
                next: Cursor::From(last),
            }
        }
    }
}

/// A pass in progress.
pub struct Pass {
    cursor: Cursor,
    pub started: Instant,
    pub urls: u64,
    /// Time spent reading the frontier, estimating (and writing scores, probes), merging.
    pub reading: Duration,
    pub estimating: Duration,
    pub merging: Duration,
    /// The bad-input counters when the pass began (`QargStats`: too many arguments, long
    /// names, bad fingerprints).
    refused_before: [u64; 3],
}

fn refused(s: &QargStats) -> [u64; 3] {
    let get = |v: &std::sync::atomic::AtomicU64| v.load(std::sync::atomic::Ordering::Relaxed);
    [
        get(&s.too_many_args),
        get(&s.long_names),
        get(&s.bad_prints),
    ]
}

impl Pass {
    /// A pass from the first path, starting now.
    pub fn start(s: &QargStats) -> Pass {
        Pass {
            cursor: Cursor::From(0),
            started: Instant::now(),
            urls: 0,
            reading: Duration::ZERO,
            estimating: Duration::ZERO,
            merging: Duration::ZERO,
            refused_before: refused(s),
        }
    }

    /// The bad input this pass left out: pages with too many arguments, argument names too
    /// long, fingerprints that are not an MD5.
    pub fn refused(&self, s: &QargStats) -> [u64; 3] {
        let now = refused(s);
        std::array::from_fn(|i| now[i] - self.refused_before[i])
    }

    /// One batch; `true` when the pass is over.
    pub fn batch(
        &mut self,
        ctx: &Ctx,
        cfg: &QargfilterConfig,
        s: &QargStats,
    ) -> Result<bool, DbError> {
        let limit = cfg.batch;
        let t = Instant::now();
        let rows = match self.cursor {
            Cursor::From(p) => ctx.db.run("qargfilter: reading the frontier", |c| {
                Url::paths_from(c, p, limit as i64)
            })?,
            Cursor::Within { path, after } => ctx.db.run("qargfilter: reading a path", |c| {
                Url::path_after(c, path, after, limit as i64)
            })?,
            Cursor::Done => return Ok(true),
        };
        let paths: Vec<u64> = rows.iter().map(|r| r.path_hash).collect();
        let mut c = cut(self.cursor, &paths, limit);
        if let (Cursor::Within { path, .. }, Some(last)) = (c.next, rows.last()) {
            c.next = Cursor::Within {
                path,
                after: last.id,
            };
        }
        self.urls += c.merge as u64;
        add(&s.urls_read, rows.len() as u64);
        let now = clock::db_now();
        self.reading += t.elapsed();
        let t = Instant::now();
        if c.estimate > 0 {
            estimate_paths(ctx, cfg, s, &rows[..c.estimate], now)?;
        }
        self.estimating += t.elapsed();
        let t = Instant::now();
        if c.merge > 0 {
            merge_paths(ctx, s, &rows[..c.merge], now)?;
        }
        self.merging += t.elapsed();
        self.cursor = c.next;
        Ok(self.cursor == Cursor::Done)
    }
}

/// The rows of each path, in order.
fn by_path(rows: &[PathPage]) -> Vec<&[PathPage]> {
    rows.chunk_by(|a, b| a.path_hash == b.path_hash).collect()
}

fn has_args(url: &str) -> bool {
    focuser_formats::urls::split_query(url)
        .1
        .is_some_and(|q| !q.is_empty())
}

/// A path's pages as the estimate reads them.
fn pages_of<'a>(rows: &'a [PathPage], s: &QargStats) -> Vec<Page<'a>> {
    rows.iter()
        .map(|r| Page {
            url: &r.url,
            main: r.main_md5.as_deref().and_then(|m| {
                let p = MainPrint::new(m, r.main_simhash);
                if p.is_none() && !m.eq_ignore_ascii_case(estimate::EMPTY_MAIN) {
                    add(&s.bad_prints, 1);
                }
                p
            }),
        })
        .collect()
}

/// Estimates the paths of `rows`, writes the scores whose evidence is new and imports them,
/// and queues probes.
fn estimate_paths(
    ctx: &Ctx,
    cfg: &QargfilterConfig,
    s: &QargStats,
    rows: &[PathPage],
    now: chrono::NaiveDateTime,
) -> Result<(), DbError> {
    let mut found = Vec::new();
    for path in by_path(rows) {
        if path.len() < 2 || !path.iter().any(|r| has_args(&r.url)) {
            continue;
        }
        let pages = pages_of(path, s);
        let ev = estimate::evidence(&pages);
        add(&s.paths_estimated, 1);
        add(&s.too_many_args, u64::from(ev.too_many_args));
        add(&s.long_names, u64::from(ev.long_names));
        found.push((path, pages, ev));
    }
    if found.is_empty() {
        return Ok(());
    }
    let mut scores = Vec::new();
    for (path, _, ev) in &found {
        let path_hash = path[0].path_hash;
        for (name, e) in &ev.args {
            if let Some(score) = estimate::decide(e, cfg.min_pairs) {
                scores.push(NewQueryArg {
                    path_hash,
                    name,
                    score,
                    computed_at: now,
                    pairs: e.pairs,
                    equal_pairs: e.equal_pairs,
                });
            }
        }
    }
    // Only new evidence is written (and imported again).
    let mut paths: Vec<u64> = scores.iter().map(|q| q.path_hash).collect();
    paths.dedup();
    if !paths.is_empty() {
        let old: FxHashMap<(u64, String), (u32, u32)> = ctx
            .db
            .run("qargfilter: reading the scores", |c| {
                QueryArg::for_paths(c, &paths)
            })?
            .into_iter()
            .map(|q| ((q.path_hash, q.name), (q.pairs, q.equal_pairs)))
            .collect();
        scores.retain(|q| {
            old.get(&(q.path_hash, q.name.to_string())) != Some(&(q.pairs, q.equal_pairs))
        });
    }
    if !scores.is_empty() {
        let written = ctx.db.run("qargfilter: writing scores", |c| {
            c.transaction(|c| {
                QueryArg::write_scores(c, &scores)?;
                for path in &paths {
                    let names: Vec<&str> = scores
                        .iter()
                        .filter(|q| q.path_hash == *path)
                        .map(|q| q.name)
                        .collect();
                    if !names.is_empty() {
                        QueryArgProbe::forget(c, *path, &names)?;
                    }
                }
                PathArgName::import_query_args(c, now, now)
            })
        })?;
        add(&s.scores_written, scores.len() as u64);
        add(&s.rules_imported, written as u64);
    }
    if cfg.probe_share > 0.0 {
        queue_probes(ctx, cfg, s, &found, now)?;
    }
    Ok(())
}

type Found<'a> = (&'a [PathPage], Vec<Page<'a>>, estimate::PathEvidence);

/// Queues the probes of the paths estimated (none while too many wait already).
fn queue_probes(
    ctx: &Ctx,
    cfg: &QargfilterConfig,
    s: &QargStats,
    found: &[Found<'_>],
    now: chrono::NaiveDateTime,
) -> Result<(), DbError> {
    let b = probe::Bounds {
        min_pairs: cfg.min_pairs,
        per_arg: cfg.probes_per_arg,
    };
    let wanting: Vec<u64> = found
        .iter()
        .filter(|(_, _, ev)| {
            ev.args
                .values()
                .any(|e| e.pairs < b.min_pairs && e.pages >= 2)
        })
        .map(|(p, _, _)| p[0].path_hash)
        .collect();
    if wanting.is_empty() || b.per_arg == 0 {
        return Ok(());
    }
    let waiting = ctx
        .db
        .run("qargfilter: counting probes", QueryArgProbe::waiting)?;
    if waiting >= MAX_WAITING_PROBES {
        return Ok(());
    }
    let counts: FxHashMap<(u64, String), u32> = ctx
        .db
        .run("qargfilter: reading probes", |c| {
            QueryArgProbe::counts(c, &wanting)
        })?
        .into_iter()
        .map(|(p, n, k)| ((p, n), u32::try_from(k).unwrap_or(u32::MAX)))
        .collect();
    let mut wants = Vec::new();
    for (path, pages, ev) in found {
        let path_hash = path[0].path_hash;
        if !wanting.contains(&path_hash) {
            continue;
        }
        let known: FxHashSet<u64> = path.iter().map(|r| r.id).collect();
        let queued = |name: &str| {
            counts
                .get(&(path_hash, name.to_string()))
                .copied()
                .unwrap_or(0)
        };
        for w in probe::choose(pages, &known, ev, queued, b) {
            wants.push((path_hash, path[0].domain.clone(), w));
        }
    }
    let rows: Vec<NewQueryArgProbe<'_>> = wants
        .iter()
        .map(|(path_hash, domain, w)| NewQueryArgProbe {
            path_hash: *path_hash,
            name: &w.name,
            id: w.id,
            url: &w.url,
            domain,
            queued_at: now,
        })
        .collect();
    if !rows.is_empty() {
        let n = ctx.db.run("qargfilter: queueing probes", |c| {
            QueryArgProbe::queue(c, &rows)
        })?;
        add(&s.probes_queued, n as u64);
    }
    Ok(())
}

/// Merges the variants among `rows` into their canonical URLs, by the rules in force.
fn merge_paths(
    ctx: &Ctx,
    s: &QargStats,
    rows: &[PathPage],
    now: chrono::NaiveDateTime,
) -> Result<(), DbError> {
    let mut paths: Vec<u64> = rows
        .iter()
        .filter(|r| r.withdraw.is_none() && has_args(&r.url))
        .map(|r| r.path_hash)
        .collect();
    paths.dedup();
    if paths.is_empty() {
        return Ok(());
    }
    let mut insignificant: FxHashMap<u64, FxHashSet<String>> = FxHashMap::default();
    for rule in ctx.db.run("qargfilter: reading the rules", |c| {
        PathArgName::rules_for_paths(c, &paths)
    })? {
        if !rule.significant {
            insignificant
                .entry(rule.path_hash)
                .or_default()
                .insert(rule.name);
        }
    }
    if insignificant.is_empty() {
        return Ok(());
    }
    let planned = merge::plan(rows, |p| insignificant.get(&p));
    if planned.is_empty() {
        return Ok(());
    }
    let merges: Vec<_> = planned.iter().map(merge::Planned::merge).collect();
    let done = ctx.db.run("qargfilter: merging variants", |c| {
        Url::merge(c, &merges, now)
    })?;
    add(&s.variants_merged, done.variants as u64);
    add(&s.canonical_made, done.made as u64);
    add(&s.hits_moved, done.hits);
    if done.variants > 0 {
        log::info!(
            "qargfilter: {} URLs merged into {} canonical URLs ({} made), {} hits moved",
            done.variants,
            merges.len(),
            done.made,
            done.hits
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_keep_a_path_whole_or_sample_it() {
        // Not full: everything, then past the last path.
        assert_eq!(
            cut(Cursor::From(0), &[1, 1, 2], 5),
            Cut {
                estimate: 3,
                merge: 3,
                next: Cursor::From(3)
            }
        );
        // Full: the last path is read again from its start by the next batch.
        assert_eq!(
            cut(Cursor::From(0), &[1, 1, 2, 2, 2], 5),
            Cut {
                estimate: 2,
                merge: 2,
                next: Cursor::From(2)
            }
        );
        // Full of one path: a sample, then the rest of it for merging only.
        assert_eq!(
            cut(Cursor::From(2), &[2, 2, 2], 3),
            Cut {
                estimate: 3,
                merge: 3,
                next: Cursor::Within { path: 2, after: 0 }
            }
        );
        assert_eq!(
            cut(Cursor::Within { path: 2, after: 9 }, &[2, 2, 2], 3),
            Cut {
                estimate: 0,
                merge: 3,
                next: Cursor::Within { path: 2, after: 0 }
            }
        );
        assert_eq!(
            cut(Cursor::Within { path: 2, after: 9 }, &[2], 3),
            Cut {
                estimate: 0,
                merge: 1,
                next: Cursor::From(3)
            }
        );
        assert_eq!(cut(Cursor::From(7), &[], 3).next, Cursor::Done);
        assert_eq!(cut(Cursor::From(0), &[u64::MAX], 3).next, Cursor::Done);
    }
}
