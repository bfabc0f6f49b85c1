//! A run's stored items (`vr_data`, live and deleted), read ahead of its write.
//!
//! The diff needs every stored item's key and MD5, and on a table larger than the server's
//! buffer pool that read waits on the disk page by page. The write stage's read-ahead thread
//! reads the items of the runs next in line while their feeds are fetched and parsed, so that
//! those waits overlap the parse instead of following it; a writer that finds them not read
//! yet reads them itself. Either way they are read after the run's recovery and before its
//! write, and the claim keeps every other writer away from the resource in between: what is
//! read is what the diff must see.

use std::sync::{Condvar, Mutex, MutexGuard};

use focuser_daemon::db::DbError;
use focuser_schema::models::{KnownItem, VrData};

use crate::worker::Ctx;

enum State {
    Unread,
    Reading,
    Read(Vec<KnownItem>),
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

fn read(ctx: &Ctx, res_id: u32) -> Result<Vec<KnownItem>, DbError> {
    ctx.db_run("reading a resource's items", |c| {
        VrData::known_items(c, res_id)
    })
}

impl Known {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// By a read-ahead thread: reads the items unless a writer has begun.
    pub fn read_ahead(&self, ctx: &Ctx, res_id: u32) {
        {
            let mut s = self.lock();
            if !matches!(*s, State::Unread) {
                return;
            }
            *s = State::Reading;
        }
        let result = read(ctx, res_id);
        let mut s = self.lock();
        match result {
            Ok(items) => *s = State::Read(items),
            Err(e) => {
                // The writer reads them again, and reports what goes wrong then.
                log::debug!("resource {res_id}: reading its items ahead: {e}");
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
    pub fn take(&self, ctx: &Ctx, res_id: u32) -> Result<Vec<KnownItem>, DbError> {
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
                    return read(ctx, res_id);
                }
            }
        }
    }
}
