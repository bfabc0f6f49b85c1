//! One queue file applied in one transaction, recorded in `queue_applied` in the same
//! transaction: it commits whole or not at all, and once only.

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::NaiveDateTime;
use diesel::mysql::MysqlConnection;
use diesel::result::Error as DieselError;
use diesel::{Connection, QueryResult};
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

/// How the loader writes: `batch` records a statement; rows whose URL lost arguments are
/// held back (up to `sort_buffer` of them) and written in id order.
#[derive(Debug, Clone, Copy)]
pub struct Batching {
    pub batch: usize,
    pub sort_buffer: usize,
}

/// A row whose URL lost arguments: its id is unrelated to its place in the file.
struct MovedRow {
    id: u64,
    url: String,
    domain: String,
    path_hash: u64,
    hits: u32,
    updatetag: String,
    last_hit: NaiveDateTime,
}

impl MovedRow {
    fn row(&self) -> LoadRow<'_> {
        LoadRow {
            id: self.id,
            url: &self.url,
            domain: &self.domain,
            path_hash: self.path_hash,
            hits: self.hits,
            updatetag: &self.updatetag,
            last_hit: self.last_hit,
        }
    }
}

/// One file's transaction in progress.
///
/// A queue file comes in id order, so its rows sweep the primary key once; a URL that loses
/// arguments gets another id, anywhere. Writing those as they come would touch a random page
/// of a table larger than the buffer pool for each; held back and sorted, they make a
/// second sweep instead.
struct Load {
    now: NaiveDateTime,
    how: Batching,
    rules: qargs::RuleCache,
    moved: Vec<MovedRow>,
    counts: ArgCounts,
    rules_time: Duration,
    upsert_time: Duration,
}

impl Load {
    fn records(&mut self, conn: &mut MysqlConnection, records: &[QueueRecord]) -> QueryResult<()> {
        let t = Instant::now();
        let (prepared, c) = qargs::prepare(conn, &mut self.rules, records, self.now)?;
        self.counts.dropped += c.dropped;
        self.counts.kept += c.kept;
        self.counts.new_rules += c.new_rules;
        let mut in_place = Vec::with_capacity(prepared.len());
        for (p, r) in prepared.iter().zip(records) {
            if p.id == r.id {
                in_place.push(p.row());
            } else {
                self.moved.push(MovedRow {
                    id: p.id,
                    url: p.url.to_string(),
                    domain: p.domain.to_string(),
                    path_hash: p.path_hash,
                    hits: p.hits,
                    updatetag: p.updatetag.to_string(),
                    last_hit: p.last_hit,
                });
            }
        }
        self.rules_time += t.elapsed();
        let t = Instant::now();
        Url::load_batch(conn, &in_place, self.now)?;
        self.upsert_time += t.elapsed();
        if self.moved.len() >= self.how.sort_buffer {
            self.flush(conn)?;
        }
        Ok(())
    }

    /// Writes the rows held back, in id order.
    fn flush(&mut self, conn: &mut MysqlConnection) -> QueryResult<()> {
        let t = Instant::now();
        self.moved.sort_unstable_by_key(|m| m.id);
        for chunk in self.moved.chunks(self.how.batch) {
            let rows: Vec<LoadRow<'_>> = chunk.iter().map(MovedRow::row).collect();
            Url::load_batch(conn, &rows, self.now)?;
        }
        self.moved.clear();
        self.upsert_time += t.elapsed();
        Ok(())
    }
}

/// Applies `file` in batches, all in one transaction. The file is read again (and checked
/// again) inside it, so it never needs to fit in memory.
pub fn apply_file(
    ctx: &Ctx,
    file: &QueueFile<'_>,
    how: Batching,
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
            let mut load = Load {
                now,
                how,
                rules: qargs::RuleCache::default(),
                moved: Vec::new(),
                counts: ArgCounts::default(),
                rules_time: Duration::ZERO,
                upsert_time: Duration::ZERO,
            };
            let mut records: Vec<QueueRecord> = Vec::with_capacity(how.batch);
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
                if records.len() >= how.batch || (end && !records.is_empty()) {
                    load.records(conn, &records)?;
                    records.clear();
                }
                if end {
                    load.flush(conn)?;
                    log::debug!(
                        "{}: query-argument rules {:.2} s, upserts {:.2} s",
                        file.name,
                        load.rules_time.as_secs_f64(),
                        load.upsert_time.as_secs_f64()
                    );
                    return Ok(Some(load.counts));
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
