//! Lines handed between reading threads.
//!
//! Every thread reads its own ranges of the inputs, and a URL on lines of two threads' would
//! otherwise get an aggregate in both threads: normalised, its id computed, sorted and merged
//! twice. Instead each thread keeps the URLs whose raw key falls in its share of the key space
//! ([`owner`]) and posts every other good line to the thread that keeps it, in a [`Chunk`] of
//! lines. Chunks go through a bounded channel per receiving thread, and come back
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
    /// The line's place in the inputs (see [`super::worker`]), its thread, its segment and its
    /// number there.
    pub seq: u64,
    pub src: u32,
    pub seg: u32,
    pub line_no: u64,
    pub ts: i64,
    pub hits: u64,
    pub url: &'a str,
    pub tag: &'a str,
}

/// Posted lines on their way: each line's figures, and its URL and tag one after another in
/// one text (which is why nothing needs checking as UTF-8 again).
#[derive(Default)]
pub struct Chunk {
    heads: Vec<Head>,
    text: String,
}

/// A posted line but its text: the lengths of its URL and tag.
struct Head {
    key: (u64, u32),
    src: u32,
    seg: u32,
    seq: u64,
    line_no: u64,
    ts: i64,
    hits: u64,
    url_len: u32,
    tag_len: u32,
}

impl Chunk {
    fn put(&mut self, p: &Posted<'_>) {
        self.text.push_str(p.url);
        self.text.push_str(p.tag);
        self.heads.push(Head {
            key: p.key,
            src: p.src,
            seg: p.seg,
            seq: p.seq,
            line_no: p.line_no,
            ts: p.ts,
            hits: p.hits,
            url_len: p.url.len() as u32,
            tag_len: p.tag.len() as u32,
        });
    }

    /// Its lines, in the order they were put.
    pub fn records(&self) -> impl Iterator<Item = Posted<'_>> {
        let mut at = 0;
        self.heads.iter().map(move |h| {
            let url_end = at + h.url_len as usize;
            let tag_end = url_end + h.tag_len as usize;
            let p = Posted {
                key: h.key,
                seq: h.seq,
                src: h.src,
                seg: h.seg,
                line_no: h.line_no,
                ts: h.ts,
                hits: h.hits,
                url: &self.text[at..url_end],
                tag: &self.text[url_end..tag_end],
            };
            at = tag_end;
            p
        })
    }

    /// Bytes it holds, about.
    fn bytes(&self) -> usize {
        self.text.len() + self.heads.len() * std::mem::size_of::<Head>()
    }

    fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    fn clear(&mut self) {
        self.heads.clear();
        self.text.clear();
    }
}

/// One thread's ends of the exchange.
pub struct Mailbox {
    inbox: Receiver<Chunk>,
    /// Per thread (none for this one): its inbox, and the chunk being filled for it.
    to: Vec<Option<SyncSender<Chunk>>>,
    filling: Vec<Chunk>,
    /// Emptied chunks, to fill again.
    spare: Vec<Chunk>,
}

/// What [`Mailbox::post`] could not do: the chunk for thread `to` is full and its inbox too.
pub struct Blocked;

/// The mailboxes of `threads` threads, in thread order.
pub fn mailboxes(threads: usize) -> Vec<Mailbox> {
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..threads).map(|_| sync_channel::<Chunk>(INBOX)).unzip();
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
            filling: (0..threads).map(|_| Chunk::default()).collect(),
            spare: Vec::new(),
        })
        .collect()
}

impl Mailbox {
    /// Adds `p` to the chunk for thread `to`, posting the chunk once full. `Err(Blocked)`: the
    /// chunk is full and could not be posted; take in the inbox and post again.
    pub fn post(&mut self, to: usize, p: &Posted<'_>) -> Result<(), Blocked> {
        if self.filling[to].bytes() >= CHUNK {
            self.send(to)?;
        }
        let chunk = &mut self.filling[to];
        if chunk.heads.capacity() == 0 {
            *chunk = self.spare.pop().unwrap_or_default();
        }
        chunk.put(p);
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
    pub fn take(&mut self, wait: bool) -> Option<Chunk> {
        if wait {
            return self.inbox.recv().ok();
        }
        self.inbox.try_recv().ok()
    }

    /// A chunk taken in and read, to be filled again.
    pub fn give_back(&mut self, mut chunk: Chunk) {
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
                seg: (i % 7) as u32,
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
        let mut chunk = Chunk::default();
        for p in &posted {
            chunk.put(p);
        }
        assert_eq!(chunk.records().collect::<Vec<_>>(), posted);
        chunk.clear();
        assert!(chunk.is_empty() && chunk.records().next().is_none());
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
                                    got += chunk.records().map(|p| p.hits).sum::<u64>();
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
                                seg: 0,
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
