//! One connection of a sender: handshake, then batches out and cumulative acks back, with a
//! window of batches in flight. The position advances only on an ack, and is saved at least
//! every `Send.SaveEvery` items, every second while it moves, and at stop.

use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use focuser_schema::segment::{write_position, Cursor, Position, SegmentError, StoredItem};

use super::{SendCtx, SenderState};
use crate::wire::frame::{begin_frame, finish_frame, Fields};
use crate::wire::handshake;
use crate::wire::messages::{position, ErrorMsg, WireItem};
use crate::wire::{read_frame, Batch, FrameError, FrameType, Mode};

#[derive(Debug)]
pub struct SessionError {
    pub message: String,
    /// Something was acknowledged before it failed: the backoff starts over.
    pub made_progress: bool,
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn fail(message: impl std::fmt::Display) -> SessionError {
    SessionError {
        message: message.to_string(),
        made_progress: false,
    }
}

/// How long an idle sender waits before looking at the store again.
const POLL: Duration = Duration::from_millis(100);
/// At stop, how long to wait for the acks of batches in flight.
const DRAIN: Duration = Duration::from_secs(2);

pub(super) fn run(st: &SenderState, ctx: &SendCtx) -> Result<(), SessionError> {
    let timeout = Duration::from_secs(ctx.send.timeout.max(1));
    let addr = st
        .spec
        .address
        .to_socket_addrs()
        .map_err(|e| fail(format!("resolving: {e}")))?
        .next()
        .ok_or_else(|| fail("resolves to no address"))?;
    let mut s =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| fail(format!("connect: {e}")))?;
    s.set_nodelay(true).map_err(fail)?;
    s.set_write_timeout(Some(timeout)).map_err(fail)?;
    s.set_read_timeout(Some(timeout)).map_err(fail)?;
    let last = handshake::client(
        &mut s,
        &ctx.secret,
        Mode::Items,
        &st.spec.stream,
        ctx.max_frame,
    )
    .map_err(fail)?;
    st.connects.fetch_add(1, Ordering::Relaxed);
    st.connected.store(true, Ordering::SeqCst);
    let mut acked = st.saved();
    // The receiver holds everything of this stream up to `last`: no need to send it again.
    if last != Position::default() {
        let after = Position {
            file_id: last.file_id,
            item_idx: last.item_idx.saturating_add(1),
        };
        if after > acked {
            log::info!(
                "sender {} {}: the receiver holds up to {last}; going on from {after}",
                st.spec.group,
                st.spec.address
            );
            acked = after;
        }
    }
    s.set_read_timeout(None).map_err(fail)?;
    let acks = spawn_ack_reader(&s, ctx.max_frame)?;
    let mut sess = Session {
        st,
        ctx,
        cursor: Cursor::new(&ctx.store, acked, Some(st.spec.partition)),
        acked,
        saved: st.saved(),
        unsaved_items: 0,
        last_save: Instant::now(),
        inflight: VecDeque::new(),
        progress: false,
        out: Vec::new(),
        carry: None,
    };
    let result = sess.pump(&mut s, &acks, timeout);
    // Whatever happened, what was acknowledged is kept.
    let _ = sess.save();
    result.map_err(|mut e| {
        e.made_progress = sess.progress;
        e
    })
}

struct Session<'a> {
    st: &'a SenderState,
    ctx: &'a SendCtx,
    cursor: Cursor,
    acked: Position,
    saved: Position,
    unsaved_items: u64,
    last_save: Instant,
    /// Batches sent and not yet acknowledged: (their end, their items).
    inflight: VecDeque<(Position, u64)>,
    progress: bool,
    out: Vec<u8>,
    /// An item read that did not fit in the last batch: it opens the next.
    carry: Option<StoredItem>,
}

impl Session<'_> {
    fn pump(
        &mut self,
        s: &mut TcpStream,
        acks: &Receiver<Result<Position, String>>,
        timeout: Duration,
    ) -> Result<(), SessionError> {
        let mut waiting_since: Option<Instant> = None;
        loop {
            if self.ctx.stop.load(Ordering::SeqCst) {
                let end = Instant::now() + DRAIN;
                while !self.inflight.is_empty() && Instant::now() < end {
                    match acks.recv_timeout(Duration::from_millis(50)) {
                        Ok(r) => self.on_ack(r)?,
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                self.save()?;
                let _ = s.shutdown(std::net::Shutdown::Both);
                return Ok(());
            }
            let mut sent = false;
            if self.inflight.len() < self.ctx.send.window {
                let batch = self.build_batch()?;
                if !batch.items.is_empty() {
                    self.send(s, &batch)?;
                    sent = true;
                } else if self.inflight.is_empty() && batch.upto > self.acked {
                    // Only items for other receivers: nothing to wait for.
                    self.acked = batch.upto;
                }
            }
            let idle = !sent && self.inflight.is_empty();
            self.st.caught_up.store(idle, Ordering::SeqCst);
            let wait = if self.inflight.len() >= self.ctx.send.window || (!sent && !idle) {
                Duration::from_millis(50)
            } else if idle {
                POLL
            } else {
                Duration::ZERO
            };
            let first = if wait.is_zero() {
                acks.try_recv().map_err(|e| match e {
                    std::sync::mpsc::TryRecvError::Empty => RecvTimeoutError::Timeout,
                    std::sync::mpsc::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                })
            } else {
                acks.recv_timeout(wait)
            };
            match first {
                Ok(r) => {
                    self.on_ack(r)?;
                    waiting_since = None;
                    while let Ok(r) = acks.try_recv() {
                        self.on_ack(r)?;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    if self.inflight.is_empty() {
                        waiting_since = None;
                    } else if waiting_since.get_or_insert_with(Instant::now).elapsed() > timeout {
                        return Err(fail(format!("no ack for {} s", timeout.as_secs())));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(fail("the receiver closed the connection"));
                }
            }
            if self.unsaved_items >= self.ctx.send.save_every
                || (self.acked != self.saved && self.last_save.elapsed() >= Duration::from_secs(1))
            {
                self.save()?;
            }
        }
    }

    /// Reads durable items of this sender's partition and statuses, up to a batch.
    fn build_batch(&mut self) -> Result<Batch, SessionError> {
        let mut items = Vec::new();
        let mut bytes = 0usize;
        while items.len() < self.ctx.send.batch_items && bytes < self.ctx.send.batch_bytes {
            let next = match self.carry.take() {
                Some(c) => Ok(Some(c)),
                None => self.cursor.next(),
            };
            let stored = match next {
                Ok(Some(s)) => s,
                Ok(None) => break,
                Err(e @ SegmentError::Corrupt { .. }) => {
                    log::error!(
                        "sender {} {}: skipping {e}",
                        self.st.spec.group,
                        self.st.spec.address
                    );
                    self.st.corrupt_items.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Err(e) => return Err(fail(format!("reading the store: {e}"))),
            };
            if let Some((from, to)) = self.cursor.take_gap() {
                log::error!(
                    "sender {} {}: segments {from}..{to} were deleted before they were sent",
                    self.st.spec.group,
                    self.st.spec.address
                );
            }
            if !self.st.spec.statuses.contains(&stored.item.status) {
                continue;
            }
            let len = Batch::wire_len(&stored.item);
            if len + 64 > self.ctx.max_frame {
                log::error!(
                    "sender {} {}: item {}:{} ({len} bytes) exceeds MaxFrame; skipped",
                    self.st.spec.group,
                    self.st.spec.address,
                    stored.file_id,
                    stored.item_idx
                );
                self.st.corrupt_items.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if !items.is_empty() && bytes + len > self.ctx.send.batch_bytes {
                self.carry = Some(stored);
                break;
            }
            bytes += len;
            items.push(WireItem {
                at: Position {
                    file_id: stored.file_id,
                    item_idx: stored.item_idx,
                },
                item: stored.item,
            });
        }
        let upto = match &self.carry {
            Some(c) => Position {
                file_id: c.file_id,
                item_idx: c.item_idx,
            },
            None => self.cursor.position(),
        };
        Ok(Batch { upto, items })
    }

    fn send(&mut self, s: &mut TcpStream, batch: &Batch) -> Result<(), SessionError> {
        let mut frame = std::mem::take(&mut self.out);
        frame.clear();
        let start = begin_frame(FrameType::Items, &mut frame);
        batch.encode_into(&mut frame);
        finish_frame(&mut frame, start);
        s.write_all(&frame)
            .map_err(|e| fail(format!("send: {e}")))?;
        let frame_len = frame.len() as u64;
        self.out = frame;
        let n = batch.items.len() as u64;
        self.inflight.push_back((batch.upto, n));
        self.st.sent_items.fetch_add(n, Ordering::Relaxed);
        self.st.sent_bytes.fetch_add(frame_len, Ordering::Relaxed);
        Ok(())
    }

    fn on_ack(&mut self, r: Result<Position, String>) -> Result<(), SessionError> {
        let upto = r.map_err(fail)?;
        match self.inflight.pop_front() {
            Some((want, n)) if want == upto => {
                self.acked = upto;
                self.unsaved_items += n;
                self.progress = true;
                self.st.acked_items.fetch_add(n, Ordering::Relaxed);
                Ok(())
            }
            other => Err(fail(format!(
                "ack for {upto}, expected {}",
                other.map(|(p, _)| p.to_string()).unwrap_or("none".into())
            ))),
        }
    }

    /// Writes the acknowledged position if it moved.
    fn save(&mut self) -> Result<(), SessionError> {
        if self.acked != self.saved {
            write_position(&self.st.spec.position_file, self.acked).map_err(fail)?;
            self.saved = self.acked;
            if let Ok(mut p) = self.st.saved.lock() {
                *p = self.acked;
            }
        }
        self.unsaved_items = 0;
        self.last_save = Instant::now();
        Ok(())
    }
}

/// Acks arrive on their own thread so sending never waits for them needlessly.
fn spawn_ack_reader(
    s: &TcpStream,
    max_frame: usize,
) -> Result<Receiver<Result<Position, String>>, SessionError> {
    let r = s.try_clone().map_err(fail)?;
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name("sender-acks".into())
        .spawn(move || {
            let mut r = BufReader::new(r);
            loop {
                let msg = match read_frame(&mut r, max_frame) {
                    Ok(f) if f.kind == FrameType::Ack => {
                        let mut fl = Fields::new(&f.payload, "ACK");
                        position(&mut fl)
                            .and_then(|p| fl.end().map(|()| p))
                            .map_err(|e| e.to_string())
                    }
                    Ok(f) if f.kind == FrameType::Error => Err(ErrorMsg::decode(&f.payload)
                        .map(|e| {
                            format!("refused by the receiver (code {}): {}", e.code, e.message)
                        })
                        .unwrap_or_else(|e| e.to_string())),
                    Ok(f) => Err(format!("unexpected {:?} frame", f.kind)),
                    Err(FrameError::Closed) => Err("the receiver closed the connection".into()),
                    Err(e) => Err(e.to_string()),
                };
                let end = msg.is_err();
                if tx.send(msg).is_err() || end {
                    return;
                }
            }
        })
        .map_err(fail)?;
    Ok(rx)
}
