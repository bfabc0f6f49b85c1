//! A run's stored items (`vr_data`, live and deleted), read ahead of its write.
//!
//! The diff needs every stored item's key and MD5. An automatic run whose resource's item
//! digest file describes its previous run takes them from the file ([`super::digests`]);
//! otherwise they are read from `vr_data`, and on a table larger than the server's buffer pool
//! that read waits on the disk page by page. The write stage's read-ahead thread reads the
//! items of the runs next in line while their feeds are fetched and parsed, so that those
//! waits overlap the parse instead of following it; a writer that finds them not read yet
//! reads them itself. Either way they are read after the run's recovery and before its write,
//! and the claim keeps every other writer away from the resource in between: what is read is
//! what the diff must see.

use std::sync::{Condvar, Mutex, MutexGuard};

use focuser_daemon::db::DbError;
use focuser_schema::models::{ClaimedRun, ProcessTimestamp, VrData};

use super::digests::{DigestDir, Entry};
use super::stats::ResourceStats;
use crate::status::add;
use crate::worker::Ctx;

/// A stored item as the diff sees it.
#[derive(Debug, Clone)]
pub struct Stored {
    /// `vr_data.id`; `None` when read from the digest file (looked up for the keys written).
    pub id: Option<u64>,
    pub entry: Entry,
}

/// The stored items of a resource, and where they were read.
#[derive(Debug, Default)]
pub struct KnownSet {
    pub items: Vec<Stored>,
    pub from_file: bool,
}

enum State {
    Unread,
    Reading,
    Read(KnownSet),
    Taken,
}

pub struct Known {
    state: Mutex<State>,
    ready: Condvar,
}

impl Default for Known {
    fn default() -> Self {
        Known {
            state: Mutex::new(State::Unread),
            ready: Condvar::new(),
        }
    }
}

/// Where the items are read from, and what is counted of it.
pub struct Reading<'a> {
    pub ctx: &'a Ctx,
    pub stats: &'a ResourceStats,
    pub digests: &'a DigestDir,
}

/// From the digest file when it describes the run before this one, else from `vr_data`.
fn read(from: &Reading<'_>, run: &ClaimedRun) -> Result<KnownSet, DbError> {
    let Reading {
        ctx,
        stats,
        digests,
    } = *from;
    let (res_id, run_id) = (run.resource.id, run.run.id);
    if !run.manual {
        match digests.load(res_id) {
            Ok(Some(file)) => {
                let previous = ctx.db.run("reading a resource's previous run", |c| {
                    ProcessTimestamp::previous_run(c, res_id, run_id)
                })?;
                if previous == Some((file.run_id, file.run_start)) {
                    add(&stats.digest_files_used, 1);
                    return Ok(KnownSet {
                        items: file
                            .entries
                            .into_iter()
                            .map(|entry| Stored { id: None, entry })
                            .collect(),
                        from_file: true,
                    });
                }
                log::debug!(
                    "resource {res_id}: its item digest file is of run {} (started {:?}), the previous run is {previous:?}: reading vr_data",
                    file.run_id,
                    file.run_start
                );
            }
            Ok(None) => {}
            Err(e) => {
                add(&stats.digest_files_refused, 1);
                log::warn!("resource {res_id}: {e}; reading vr_data instead");
            }
        }
    }
    let rows = ctx.db.run("reading a resource's items", |c| {
        VrData::known_items(c, res_id)
    })?;
    Ok(KnownSet {
        items: rows
            .into_iter()
            .map(|k| Stored {
                id: Some(k.id),
                entry: Entry {
                    keyword: k.keyword,
                    md5: k.md5_sum,
                    digest: None,
                    status_id: k.status_id,
                    data_status: k.data_status,
                },
            })
            .collect(),
        from_file: false,
    })
}

impl Known {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// By a read-ahead thread: reads the items unless a writer has begun.
    pub fn read_ahead(&self, from: &Reading<'_>, run: &ClaimedRun) {
        {
            let mut s = self.lock();
            if !matches!(*s, State::Unread) {
                return;
            }
            *s = State::Reading;
        }
        let result = read(from, run);
        let mut s = self.lock();
        match result {
            Ok(items) => *s = State::Read(items),
            Err(e) => {
                // The writer reads them again, and reports what goes wrong then.
                log::debug!("resource {}: reading its items ahead: {e}", run.resource.id);
                *s = State::Unread;
            }
        }
        self.ready.notify_all();
    }

    /// Whether the items are being read or read and not yet taken: memory the read-ahead
    /// holds.
    pub fn held(&self) -> bool {
        matches!(*self.lock(), State::Reading | State::Read(_))
    }

    /// By the writer: the items, read now if the read-ahead has not begun; waits while it
    /// reads.
    pub fn take(&self, from: &Reading<'_>, run: &ClaimedRun) -> Result<KnownSet, DbError> {
        let mut s = self.lock();
        loop {
            match std::mem::replace(&mut *s, State::Taken) {
                State::Read(items) => return Ok(items),
                State::Reading => {
                    *s = State::Reading;
                    s = self.ready.wait(s).unwrap_or_else(|e| e.into_inner());
                }
                // Taken twice cannot happen (one write per run); read again rather than fail.
                State::Unread | State::Taken => {
                    drop(s);
                    return read(from, run);
                }
            }
        }
    }
}
