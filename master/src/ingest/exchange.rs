//! Lines handed between reading threads.
//!
//! Every thread reads its own range of the inputs, and a URL on lines of two ranges would
//! otherwise get an aggregate in both threads: normalised, its id computed, sorted and merged
//! twice. Instead each thread keeps the URLs whose raw key falls in its share of the key space
//! ([`owner`]) and posts every other good line to the thread that keeps it, as a record in a
//! chunk of records. Chunks go through a bounded channel per receiving thread, and come back
//! as the receiver's own chunks to fill, so the exchange allocates little.
//!
//! A thread that cannot post (the receiver's channel is full) takes in its own inbox while it
//! waits: every thread that waits also works, so the threads cannot all wait on each other.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};

/// The thread (of `threads`) that keeps the URLs of raw key `key`.
pub fn owner(key: u64, threads: usize) -> usize {
    ((u128::from(key) * threads as u128) >> 64) as usize
}

/// Bytes of records in a chunk before it is posted.
const CHUNK: usize = 256 << 10;
/// Chunks a thread's inbox holds.
const INBOX: usize = 16;

/// A good line posted to the thread that keeps its URL: what that thread needs to aggregate
/// it, and to find the line again if its URL is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posted<'a> {
    pub key: (u64, u32),
    /// The line's place in the inputs (see [`super::worker`]), its thread and its number there.
    pub seq: u64,
    pub src: u32,
    pub line_no: u64,
    pub ts: i64,
    pub hits: u64,
    pub url: &'a str,
    pub tag: &'a str,
}

/// The fixed part of a record: key, check, src, seq, line_no, ts, hits, URL and tag lengths.
const HEAD: usize = 8 + 4 + 4 + 8 + 8 + 8 + 8 + 4 + 4;

fn put(chunk: &mut Vec<u8>, p: &Posted<'_>) {
    chunk.extend_from_slice(&p.key.0.to_le_bytes());
    chunk.extend_from_slice(&p.key.1.to_le_bytes());
    chunk.extend_from_slice(&p.src.to_le_bytes());
    chunk.extend_from_slice(&p.seq.to_le_bytes());
    chunk.extend_from_slice(&p.line_no.to_le_bytes());
    chunk.extend_from_slice(&p.ts.to_le_bytes());
    chunk.extend_from_slice(&p.hits.to_le_bytes());
    chunk.extend_from_slice(&(p.url.len() as u32).to_le_bytes());
    chunk.extend_from_slice(&(p.tag.len() as u32).to_le_bytes());
    chunk.extend_from_slice(p.url.as_bytes());
    chunk.extend_from_slice(p.tag.as_bytes());
}

/// The records of a chunk, in the order they were put. Chunks are made by [`put`] alone, in
/// this process: a record that does not read back whole ends the iteration.
pub fn records(chunk: &[u8]) -> impl Iterator<Item = Posted<'_>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let head = chunk.get(at..at + HEAD)?;
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&head[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at = |i: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&head[i..i + 4]);
            u32::from_le_bytes(b)
        };
        let (url_len, tag_len) = (u32_at(48) as usize, u32_at(52) as usize);
        let body = at + HEAD;
        let url = std::str::from_utf8(chunk.get(body..body + url_len)?).ok()?;
        let tag = std::str::from_utf8(chunk.get(body + url_len..body + url_len + tag_len)?).ok()?;
        at = body + url_len + tag_len;
        Some(Posted {
            key: (u64_at(0), u32_at(8)),
            src: u32_at(12),
            seq: u64_at(16),
            line_no: u64_at(24),
            ts: u64_at(32) as i64,
            hits: u64_at(40),
            url,
            tag,
        })
    })
}

/// One thread's ends of the exchange.
pub struct Mailbox {
    inbox: Receiver<Vec<u8>>,
    /// Per thread (none for this one): its inbox, and the chunk being filled for it.
    to: Vec<Option<SyncSender<Vec<u8>>>>,
    filling: Vec<Vec<u8>>,
    /// Emptied chunks, to fill again.
    spare: Vec<Vec<u8>>,
}

/// What [`Mailbox::post`] could not do: the chunk for thread `to` is full and its inbox too.
pub struct Blocked;

/// The mailboxes of `threads` threads, in thread order.
pub fn mailboxes(threads: usize) -> Vec<Mailbox> {
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..threads).map(|_| sync_channel::<Vec<u8>>(INBOX)).unzip();
    receivers
        .into_iter()
        .enumerate()
        .map(|(me, inbox)| Mailbox {
            inbox,
            to: senders
                .iter()
                .enumerate()
                .map(|(t, s)| (t != me).then(|| s.clone()))
                .collect(),
            filling: (0..threads).map(|_| Vec::new()).collect(),
            spare: Vec::new(),
        })
        .collect()
}

impl Mailbox {
    /// Adds `p` to the chunk for thread `to`, posting the chunk once full. `Err(Blocked)`: the
    /// chunk is full and could not be posted; take in the inbox and post again.
    pub fn post(&mut self, to: usize, p: &Posted<'_>) -> Result<(), Blocked> {
        if self.filling[to].len() >= CHUNK {
            self.send(to)?;
        }
        let chunk = &mut self.filling[to];
        if chunk.capacity() == 0 {
            *chunk = self
                .spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(CHUNK + 4096));
        }
        put(chunk, p);
        Ok(())
    }

    fn send(&mut self, to: usize) -> Result<(), Blocked> {
        let Some(Some(sender)) = self.to.get(to) else {
            return Ok(());
        };
        let chunk = std::mem::take(&mut self.filling[to]);
        match sender.try_send(chunk) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(chunk)) => {
                self.filling[to] = chunk;
                Err(Blocked)
            }
            // The receiver has stopped (its thread failed): the cycle fails with its error.
            Err(TrySendError::Disconnected(_)) => Ok(()),
        }
    }

    /// Posts every chunk being filled. `Err(Blocked)`: one could not be; take in the inbox and
    /// call again.
    pub fn flush(&mut self) -> Result<(), Blocked> {
        for to in 0..self.to.len() {
            if !self.filling[to].is_empty() {
                self.send(to)?;
            }
        }
        Ok(())
    }

    /// Nothing more will be posted from this thread.
    pub fn close(&mut self) {
        self.to.iter_mut().for_each(|s| *s = None);
    }

    /// A chunk from the inbox, if one is there (`wait`: waits for one, unless every other
    /// thread has closed its mailbox and all their chunks are taken: then `None`).
    pub fn take(&mut self, wait: bool) -> Option<Vec<u8>> {
        if wait {
            return self.inbox.recv().ok();
        }
        self.inbox.try_recv().ok()
    }

    /// A chunk taken in and read, to be filled again.
    pub fn give_back(&mut self, mut chunk: Vec<u8>) {
        chunk.clear();
        self.spare.push(chunk);
    }

    pub fn threads(&self) -> usize {
        self.to.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_put() {
        let posted: Vec<Posted<'_>> = (0..1000u64)
            .map(|i| Posted {
                key: (i * 7 + 1, i as u32),
                seq: (3 << 40) | i,
                src: (i % 3) as u32,
                line_no: i + 2,
                ts: 1_700_000_000 + i as i64 - 500,
                hits: i * i,
                url: if i % 2 == 0 {
                    "http://a.ru/x"
                } else {
                    "http://пример.рф/"
                },
                tag: if i % 5 == 0 { "" } else { "t" },
            })
            .collect();
        let mut chunk = Vec::new();
        for p in &posted {
            put(&mut chunk, p);
        }
        assert_eq!(records(&chunk).collect::<Vec<_>>(), posted);
        // A cut record ends the reading.
        assert_eq!(records(&chunk[..chunk.len() - 1]).count(), 999);
    }

    #[test]
    fn threads_that_wait_on_each_other_still_get_everything_through() {
        let boxes = mailboxes(3);
        let sent: u64 = 20_000;
        let totals: Vec<u64> = std::thread::scope(|scope| {
            let handles: Vec<_> = boxes
                .into_iter()
                .enumerate()
                .map(|(me, mut b)| {
                    scope.spawn(move || {
                        let mut got = 0u64;
                        let mut take_in = |b: &mut Mailbox, wait: bool| -> bool {
                            match b.take(wait) {
                                Some(chunk) => {
                                    got += records(&chunk).map(|p| p.hits).sum::<u64>();
                                    b.give_back(chunk);
                                    true
                                }
                                None => false,
                            }
                        };
                        for i in 0..sent {
                            let p = Posted {
                                key: (i, 0),
                                seq: i,
                                src: me as u32,
                                line_no: i,
                                ts: 0,
                                hits: 1,
                                url: "http://a.ru/a-fairly-long-url-to-fill-chunks-quickly",
                                tag: "",
                            };
                            let to = (me + 1 + (i as usize % 2)) % 3;
                            while b.post(to, &p).is_err() {
                                take_in(&mut b, false);
                            }
                        }
                        while b.flush().is_err() {
                            take_in(&mut b, false);
                        }
                        b.close();
                        while take_in(&mut b, true) {}
                        got
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(totals.iter().sum::<u64>(), 3 * sent);
        assert!(totals.iter().all(|&t| t == sent), "{totals:?}");
    }
}
