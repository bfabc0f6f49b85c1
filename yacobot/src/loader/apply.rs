//! One queue file applied in one transaction, recorded in `queue_applied` in the same
//! transaction: it commits whole or not at all, and once only.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::NaiveDateTime;
use diesel::mysql::MysqlConnection;
use diesel::result::Error as DieselError;
use diesel::{Connection, QueryResult};
use focuser_daemon::db::DbError;
use focuser_formats::queue::{QueueError, QueueRecord};
use focuser_schema::models::{LoadRow, LoaderWatermark, NewQueueApplied, QueueApplied, Url};

use super::check::{self, Expect};
use super::inbox::Held;
use super::masters::{self, Fate};
use super::qargs::{self, ArgCounts};
use crate::exclude::Rules;
use crate::worker::Ctx;

/// What applying a file came to.
#[derive(Debug)]
pub enum Applied {
    /// Every record is in `url`, but those the exclusion file excludes.
    Loaded(Loaded),
    /// `queue_applied` already had a file of this name, of `row_count` URLs: nothing was done.
    Already { row_count: u32 },
    /// Recorded as skipped (`Loader.Mode = duplicate`): another master's files had covered
    /// its period.
    Skipped,
}

/// What the rules did to a file's records.
#[derive(Debug, Clone, Copy, Default)]
pub struct Loaded {
    pub args: ArgCounts,
    /// Records not stored: the exclusion file excludes their URL (as it would be stored).
    pub excluded: u64,
    /// Records not applied: another master's files had counted their hits (`Loader.Mode =
    /// duplicate`).
    pub counted_elsewhere: u64,
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

/// The file to apply, as checked before through the same open file.
pub struct QueueFile<'a> {
    pub source: &'a str,
    pub name: &'a str,
    pub held: &'a Held,
    pub expect: Expect<'a>,
    pub records: u64,
    /// The header's `time=` (seconds).
    pub time: i64,
    /// The masters duplicate each other: the watermarks decide (masters.rs).
    pub duplicate: bool,
}

impl QueueFile<'_> {
    /// `queue_applied.row_count`: the URLs checked, which are the URLs applied.
    fn row_count(&self) -> u32 {
        u32::try_from(self.records).unwrap_or(u32::MAX)
    }

    /// At the end of the load: what was read is what was checked, and the file was not
    /// written to meanwhile (else the transaction is rolled back and the file is bad).
    fn still_as_checked(&self, read: u64, line: u64) -> Result<(), QueueError> {
        let changed = self.held.changed().unwrap_or(true);
        if read == self.records && !changed {
            return Ok(());
        }
        Err(QueueError {
            line,
            message: format!(
                "the file changed while it was loaded ({} URLs checked, {read} read): written in place?",
                self.records
            ),
        })
    }
}

/// How the loader writes: rows are held back, up to `sort_buffer` of them, and written in id
/// order, `batch` a statement.
#[derive(Debug, Clone, Copy)]
pub struct Batching {
    pub batch: usize,
    pub sort_buffer: usize,
}

/// A row held back to be written in id order.
struct HeldRow {
    id: u64,
    url: String,
    domain: String,
    path_hash: u64,
    hits: u32,
    updatetag: String,
    last_hit: NaiveDateTime,
}

impl HeldRow {
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
/// A queue file comes in id order, but a URL that loses arguments gets another id, anywhere.
/// Written as they come, those would touch a random page of a table larger than the buffer
/// pool each; held back and sorted, a file's rows make one sweep over the primary key, as
/// `LOAD DATA` of the same rows does.
struct Load {
    now: NaiveDateTime,
    how: Batching,
    rules: qargs::RuleCache,
    /// The exclusion rules in force when the file's load began.
    exclude: Arc<Rules>,
    held: Vec<HeldRow>,
    counts: ArgCounts,
    excluded: u64,
    counted_elsewhere: u64,
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
        let exclude = &self.exclude;
        let kept = prepared.iter().filter(|p| !exclude.excludes(&p.url));
        let before = self.held.len();
        self.held.extend(kept.map(|p| HeldRow {
            id: p.id,
            url: p.url.to_string(),
            domain: p.domain.to_string(),
            path_hash: p.path_hash,
            hits: p.hits,
            updatetag: p.updatetag.to_string(),
            last_hit: p.last_hit,
        }));
        self.excluded += (prepared.len() - (self.held.len() - before)) as u64;
        self.rules_time += t.elapsed();
        if self.held.len() >= self.how.sort_buffer {
            self.flush(conn)?;
        }
        Ok(())
    }

    /// Writes the rows held back, in id order.
    fn flush(&mut self, conn: &mut MysqlConnection) -> QueryResult<()> {
        let t = Instant::now();
        // Stable: rows of one id keep the file's order.
        self.held.sort_by_key(|m| m.id);
        for chunk in self.held.chunks(self.how.batch) {
            let rows: Vec<LoadRow<'_>> = chunk.iter().map(HeldRow::row).collect();
            Url::load_batch(conn, &rows, self.now)?;
        }
        self.held.clear();
        self.upsert_time += t.elapsed();
        Ok(())
    }
}

/// Applies `file` in batches, all in one transaction. The file is read again (and checked
/// again) inside it, from the descriptor it was checked through, so it never needs to fit in
/// memory and what is applied and recorded is what was checked.
pub fn apply_file(
    ctx: &Ctx,
    file: &QueueFile<'_>,
    how: Batching,
    now: NaiveDateTime,
) -> Result<Applied, LoadError> {
    let mut failure: Option<LoadError> = None;
    let result = ctx.db.run("loading a queue file", |conn| {
        failure = None;
        conn.transaction(|conn| {
            let (fate, covered) = match fate(conn, file)? {
                Ok(fate) => fate,
                Err(message) => {
                    failure = Some(LoadError::Bad(QueueError { line: 1, message }));
                    return Err(DieselError::RollbackTransaction);
                }
            };
            let recorded = NewQueueApplied {
                source: file.source,
                file_name: file.name,
                row_count: file.row_count(),
                skipped: fate == Fate::Skip,
            }
            .record(conn)?;
            if !recorded {
                let before = QueueApplied::find(conn, file.source, file.name)?;
                return Ok(Err(before.row_count));
            }
            if file.duplicate {
                LoaderWatermark::set(conn, file.source, masters::datetime(covered), now)?;
            }
            let after = match fate {
                Fate::Skip => return Ok(Ok(None)),
                Fate::Apply => None,
                Fate::ApplyAfter(t) => Some(t),
            };
            let mut reader = check::open(&file.held.file, &file.expect).map_err(|e| {
                failure = Some(LoadError::Bad(e));
                DieselError::RollbackTransaction
            })?;
            let mut load = Load {
                now,
                how,
                rules: qargs::RuleCache::default(),
                exclude: ctx.exclusion.rules(),
                held: Vec::new(),
                counts: ArgCounts::default(),
                excluded: 0,
                counted_elsewhere: 0,
                rules_time: Duration::ZERO,
                upsert_time: Duration::ZERO,
            };
            let mut records: Vec<QueueRecord> = Vec::with_capacity(how.batch);
            let mut read: u64 = 0;
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
                read += u64::from(!end);
                let (next, counted) = counted_elsewhere(next, after);
                load.counted_elsewhere += counted;
                records.extend(next);
                if records.len() >= how.batch || (end && !records.is_empty()) {
                    load.records(conn, &records)?;
                    records.clear();
                }
                if end {
                    file.still_as_checked(read, reader.line()).map_err(|e| {
                        failure = Some(LoadError::Bad(e));
                        DieselError::RollbackTransaction
                    })?;
                    load.flush(conn)?;
                    log::debug!(
                        "{}: query-argument rules {:.2} s, upserts {:.2} s",
                        file.name,
                        load.rules_time.as_secs_f64(),
                        load.upsert_time.as_secs_f64()
                    );
                    return Ok(Ok(Some(Loaded {
                        args: load.counts,
                        excluded: load.excluded,
                        counted_elsewhere: load.counted_elsewhere,
                    })));
                }
                if ctx.stopping() {
                    failure = Some(LoadError::Stopped);
                    return Err(DieselError::RollbackTransaction);
                }
            }
        })
    });
    match (result, failure) {
        (Ok(Ok(Some(loaded))), _) => Ok(Applied::Loaded(loaded)),
        (Ok(Ok(None)), _) => Ok(Applied::Skipped),
        (Ok(Err(row_count)), _) => Ok(Applied::Already { row_count }),
        (Err(_), Some(f)) => Err(f),
        (Err(e), None) => Err(LoadError::Db(e)),
    }
}

/// What the watermarks make of the file (every record counts when the masters do not
/// duplicate each other), and its master's watermark after it (never back); they stay locked
/// until the transaction ends. `Err` is why the file is bad.
fn fate(
    conn: &mut MysqlConnection,
    file: &QueueFile<'_>,
) -> QueryResult<Result<(Fate, i64), String>> {
    if !file.duplicate {
        return Ok(Ok((Fate::Apply, file.time)));
    }
    let marks = LoaderWatermark::lock_all(conn)?;
    let own = marks
        .iter()
        .find(|m| m.master == file.source)
        .map_or(file.time, |m| masters::secs(m.covered).max(file.time));
    Ok(masters::decide(&marks, file.source, file.time).map(|fate| (fate, own)))
}

/// A record whose latest hit is not after `after` was counted from another master's file: it
/// is left out (returned as 1).
fn counted_elsewhere(
    record: Option<QueueRecord>,
    after: Option<i64>,
) -> (Option<QueueRecord>, u64) {
    match (record, after) {
        (Some(r), Some(t)) if r.timestamp <= t => (None, 1),
        (r, _) => (r, 0),
    }
}
