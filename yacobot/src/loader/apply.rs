//! One queue file applied in one transaction, recorded in `queue_applied` in the same
//! transaction: it commits whole or not at all, and once only.

use std::path::Path;
use std::time::Duration;

use chrono::NaiveDateTime;
use diesel::result::Error as DieselError;
use diesel::Connection;
use focuser_daemon::db::DbError;
use focuser_schema::formats::queue::{QueueError, QueueRecord};
use focuser_schema::models::{LoadRow, NewQueueApplied, Url};

use super::check::{self, Expect};
use super::qargs::{self, ArgCounts};
use crate::worker::Ctx;

/// What applying a file came to.
#[derive(Debug)]
pub enum Applied {
    /// Every record is in `url`.
    Applied(ArgCounts),
    /// `queue_applied` already had the file: nothing was done.
    Already,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Bad(QueueError),
    #[error("stopped: the load was rolled back")]
    Stopped,
    #[error("{0}")]
    Db(DbError),
}

/// The file to apply, as checked before.
pub struct QueueFile<'a> {
    pub source: &'a str,
    pub name: &'a str,
    pub path: &'a Path,
    pub expect: Expect<'a>,
    pub records: u64,
}

/// Applies `file` in batches of `batch` records, all in one transaction. The file is read
/// again (and checked again) inside it, so it never needs to fit in memory.
pub fn apply_file(
    ctx: &Ctx,
    file: &QueueFile<'_>,
    batch: usize,
    now: NaiveDateTime,
) -> Result<Applied, LoadError> {
    let mut failure: Option<LoadError> = None;
    let result = ctx.db_run("loading a queue file", |conn| {
        failure = None;
        conn.transaction(|conn| {
            let recorded = NewQueueApplied {
                source: file.source,
                file_name: file.name,
                row_count: u32::try_from(file.records).unwrap_or(u32::MAX),
            }
            .record(conn)?;
            if !recorded {
                return Ok(None);
            }
            let mut reader = check::open(file.path, &file.expect).map_err(|e| {
                failure = Some(LoadError::Bad(e));
                DieselError::RollbackTransaction
            })?;
            let mut counts = ArgCounts::default();
            let mut rules = qargs::RuleCache::default();
            let (mut rules_time, mut upsert_time) = (Duration::ZERO, Duration::ZERO);
            let mut records: Vec<QueueRecord> = Vec::with_capacity(batch);
            loop {
                let next = reader.next_record().and_then(|r| match r {
                    Some(r) => check::check_record(&r)
                        .map(|()| Some(r))
                        .map_err(|message| QueueError {
                            line: reader.line(),
                            message,
                        }),
                    None => Ok(None),
                });
                let next = next.map_err(|e| {
                    failure = Some(LoadError::Bad(e));
                    DieselError::RollbackTransaction
                })?;
                let end = next.is_none();
                records.extend(next);
                if records.len() >= batch || (end && !records.is_empty()) {
                    let t = std::time::Instant::now();
                    let (prepared, c) = qargs::prepare(conn, &mut rules, &records, now)?;
                    let rows: Vec<LoadRow<'_>> = prepared.iter().map(|p| p.row()).collect();
                    rules_time += t.elapsed();
                    let t = std::time::Instant::now();
                    Url::load_batch(conn, &rows, now)?;
                    upsert_time += t.elapsed();
                    counts.dropped += c.dropped;
                    counts.kept += c.kept;
                    counts.new_rules += c.new_rules;
                    records.clear();
                }
                if end {
                    log::debug!(
                        "{}: query-argument rules {:.2} s, upserts {:.2} s",
                        file.name,
                        rules_time.as_secs_f64(),
                        upsert_time.as_secs_f64()
                    );
                    return Ok(Some(counts));
                }
                if ctx.stopping() {
                    failure = Some(LoadError::Stopped);
                    return Err(DieselError::RollbackTransaction);
                }
            }
        })
    });
    match (result, failure) {
        (Ok(Some(counts)), _) => Ok(Applied::Applied(counts)),
        (Ok(None), _) => Ok(Applied::Already),
        (Err(_), Some(f)) => Err(f),
        (Err(e), None) => Err(LoadError::Db(e)),
    }
}
