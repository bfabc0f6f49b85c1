//! One connection of a sender: handshake, then batches out and cumulative acks back, with a
//! window of batches in flight. The position advances only on an ack, and is saved at least
//! every `Send.SaveEvery` items, every second while it moves, and at stop ([`Saver`]: by a
//! thread of its own, so that shipping does not wait for the fsyncs).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use focuser_formats::segment::{Cursor, Position};

use super::batch::Batcher;
use super::identity;
use super::saver::Saver;
use super::{SendCtx, SenderState, Settings};
use crate::wire::frame::Fields;
use crate::wire::handshake;
use crate::wire::messages::{position, ErrorMsg};
use crate::wire::{read_frame, FrameError, FrameType, Mode};

#[derive(Debug)]
pub(super) struct SessionError {
    pub message: String,
    /// Something was acknowledged before it failed: the backoff starts over.
    pub made_progress: bool,
    /// A position that cannot be this store's ([`super::identity`]): nothing was sent.
    pub mismatch: bool,
    /// The receiver closed the connection with nothing in flight (its `Recv.IdleTimeout`):
    /// not a failure, the sender just connects again.
    pub idle_close: bool,
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub(super) fn fail(message: impl std::fmt::Display) -> SessionError {
    SessionError {
        message: message.to_string(),
        made_progress: false,
        mismatch: false,
        idle_close: false,
    }
}

const CLOSED: &str = "the receiver closed the connection";

/// A stream identity mismatch: `what` is wrong; says what the operator can do about it.
fn mismatch(st: &SenderState, what: String) -> SessionError {
    SessionError {
        message: format!(
            "{what}: this store is not the one that stream {} was shipped from (was the store \
             rebuilt, or its state_dir copied?); nothing is sent to this receiver and retention \
             keeps every segment for it. To ship this store as a new stream, raise \
             stream_epoch (now {}) and restart: see \"Stream identity mismatch\" in \
             docs/operations.md",
            st.spec.stream,
            epoch_of(&st.spec.stream)
        ),
        made_progress: false,
        mismatch: true,
        idle_close: false,
    }
}

/// The `N` of a stream name ending in `.epochN` (0 without).
fn epoch_of(stream: &str) -> u32 {
    stream
        .rsplit_once(".epoch")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(0)
}

/// Refuses a position the store cannot have.
fn check_identity(
    st: &SenderState,
    ctx: &SendCtx,
    next: Position,
    whose: impl FnOnce() -> String,
) -> Result<(), SessionError> {
    match identity::impossible(&ctx.store, next) {
        Ok(None) => Ok(()),
        Ok(Some(why)) => Err(mismatch(st, format!("{} {why}", whose()))),
        Err(e) => Err(fail(format!("reading the store: {e}"))),
    }
}

/// How long an idle sender waits before looking at the store again.
const POLL: Duration = Duration::from_millis(100);
/// At stop, how long to wait for the acks of batches in flight.
const DRAIN: Duration = Duration::from_secs(2);

/// `Send.Timeout`: to connect, to write, to wait for an ack.
fn timeout_of(settings: &Settings) -> Duration {
    Duration::from_secs(settings.send.timeout.max(1))
}

pub(super) fn run(st: &SenderState, ctx: &SendCtx) -> Result<(), SessionError> {
    let settings = ctx.settings();
    let timeout = timeout_of(&settings);
    // A position file of another store is refused before the receiver is even asked.
    let saved = st.saved();
    check_identity(st, ctx, saved, || {
        format!("the position file {}:", st.spec.position_file.display())
    })?;
    let (mut s, last) = connect(st, ctx, timeout)?;
    let mut acked = saved;
    // The receiver holds everything of this stream up to `last`: no need to send it again,
    // if `last` is one of this store's items.
    if last != Position::default() {
        let after = Position {
            file_id: last.file_id,
            item_idx: last.item_idx.saturating_add(1),
        };
        if after > acked {
            check_identity(st, ctx, after, || {
                format!(
                    "the receiver holds stream {} up to {last}, but",
                    st.spec.stream
                )
            })?;
            log::info!(
                "sender {} {}: the receiver holds up to {last}; going on from {after}",
                st.spec.group,
                st.spec.address
            );
            acked = after;
        }
    }
    st.identity_confirmed();
    if let Ok(mut gate) = st.gate.lock() {
        gate.next = acked;
    }
    st.connected.store(true, Ordering::SeqCst);
    s.set_read_timeout(None).map_err(fail)?;
    let acks = spawn_ack_reader(&s, ctx)?;
    std::thread::scope(|scope| {
        let saver = Saver::start(scope, st).map_err(fail)?;
        let mut sess = Session {
            st,
            ctx,
            settings,
            batch: Batcher::new(Cursor::new(&ctx.store, acked, Some(st.spec.partition))),
            verify_until: st.verify_until(),
            acked,
            saved: st.saved(),
            saver,
            unsaved_items: 0,
            last_save: Instant::now(),
            inflight: VecDeque::new(),
            progress: false,
            delivering: false,
        };
        let result = sess.pump(&mut s, &acks);
        // The ack reader holds a clone of the socket: shutting it down ends that thread too.
        let _ = s.shutdown(std::net::Shutdown::Both);
        // Whatever happened, what was acknowledged is kept.
        let saved = sess.save().and_then(|()| sess.saver.finish().map_err(fail));
        let progress = sess.progress;
        if result.is_err() {
            // What was in flight is sent again, read and checked here first: a record
            // damaged on this disk is then skipped rather than failing every session.
            st.verify_to(sess.batch.cursor.position());
        }
        result.and(saved).map_err(|mut e| {
            e.made_progress = progress;
            e
        })
    })
}

/// Connects to `st`'s receiver and opens its stream: where the receiver says it stands.
pub(super) fn connect(
    st: &SenderState,
    ctx: &SendCtx,
    timeout: Duration,
) -> Result<(TcpStream, Position), SessionError> {
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
    let last =
        handshake::client(&mut s, &ctx.secret, Mode::Items, &st.spec.stream).map_err(fail)?;
    st.connects.fetch_add(1, Ordering::Relaxed);
    Ok((s, last))
}

struct Session<'a> {
    st: &'a SenderState,
    ctx: &'a SendCtx,
    /// As they were at this turn of the loop.
    settings: Settings,
    batch: Batcher,
    /// Batches before this position go as ITEMS.
    verify_until: Position,
    acked: Position,
    /// The last position handed to the saver.
    saved: Position,
    saver: Saver<'a>,
    unsaved_items: u64,
    last_save: Instant,
    /// Batches sent and not yet acknowledged: (their end, their items).
    inflight: VecDeque<(Position, u64)>,
    progress: bool,
    /// Whether this session has been seen to deliver (see [`Session::delivering`]).
    delivering: bool,
}

impl Session<'_> {
    fn pump(
        &mut self,
        s: &mut TcpStream,
        acks: &Receiver<Result<Position, String>>,
    ) -> Result<(), SessionError> {
        let mut waiting_since: Option<Instant> = None;
        loop {
            self.refresh(s)?;
            let timeout = timeout_of(&self.settings);
            if self.ctx.stop.is_set() {
                let end = Instant::now() + DRAIN;
                while !self.inflight.is_empty() && Instant::now() < end {
                    match acks.recv_timeout(Duration::from_millis(50)) {
                        Ok(r) => self.on_ack(r)?,
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                self.save()?;
                self.saver.finish().map_err(fail)?;
                let _ = s.shutdown(std::net::Shutdown::Both);
                return Ok(());
            }
            let mut sent = false;
            if self.inflight.len() < self.settings.send.window {
                let (upto, count) = self.send_next(s)?;
                if count > 0 {
                    sent = true;
                } else if self.inflight.is_empty() && upto > self.acked {
                    // Only items for other receivers: nothing to wait for.
                    self.acked = upto;
                }
            }
            let idle = !sent && self.inflight.is_empty();
            self.st.caught_up.store(idle, Ordering::SeqCst);
            if idle {
                self.delivering();
            }
            let wait = if self.inflight.len() >= self.settings.send.window || (!sent && !idle) {
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
                    return Err(self.closed(CLOSED.into()));
                }
            }
            if self.unsaved_items >= self.settings.send.save_every
                || (self.acked != self.saved && self.last_save.elapsed() >= Duration::from_secs(1))
            {
                self.save()?;
            }
        }
    }

    /// Builds and sends the next batch: RECORDS, or ITEMS over the stretch a failed
    /// session left to check ([`SenderState::verify_until`]).
    fn send_next(&mut self, s: &mut TcpStream) -> Result<(Position, u32), SessionError> {
        // A resend's batch on the way to this receiver: nothing newer goes before its ack.
        let mut gate = self
            .st
            .gate
            .lock()
            .map_err(|_| fail("the resend gate failed"))?;
        if gate.held {
            return Ok((self.batch.cursor.position(), 0));
        }
        let sent = self.build_and_send(s);
        gate.next = self.batch.cursor.position();
        sent
    }

    fn build_and_send(&mut self, s: &mut TcpStream) -> Result<(Position, u32), SessionError> {
        let verify =
            !self.settings.send.records || self.batch.cursor.position() < self.verify_until;
        let built = if verify {
            self.batch.items(self.st, &self.settings)?
        } else {
            self.batch.records(self.st, &self.settings)?
        };
        if built.count > 0 {
            self.batch.send(s)?;
            let n = u64::from(built.count);
            self.inflight.push_back((built.upto, n));
            self.st.sent_items.fetch_add(n, Ordering::Relaxed);
            self.st.sent_bytes.fetch_add(built.bytes, Ordering::Relaxed);
        }
        Ok((built.upto, built.count))
    }

    fn on_ack(&mut self, r: Result<Position, String>) -> Result<(), SessionError> {
        let upto = r.map_err(|e| self.closed(e))?;
        match self.inflight.pop_front() {
            Some((want, n)) if want == upto => {
                self.acked = upto;
                self.unsaved_items += n;
                self.progress = true;
                self.st.acked_items.fetch_add(n, Ordering::Relaxed);
                self.delivering();
                Ok(())
            }
            other => Err(fail(format!(
                "ack for {upto}, expected {}",
                other.map(|(p, _)| p.to_string()).unwrap_or("none".into())
            ))),
        }
    }

    /// The connection ended on `message`; a close with nothing in flight is the receiver's
    /// idle timeout, not a failure.
    fn closed(&self, message: String) -> SessionError {
        let idle_close = message == CLOSED && self.inflight.is_empty();
        SessionError {
            idle_close,
            ..fail(message)
        }
    }

    /// Takes the settings as they are now (a reload may have changed them); a new
    /// `Send.Timeout` applies to the socket too.
    fn refresh(&mut self, s: &TcpStream) -> Result<(), SessionError> {
        let now = self.ctx.settings();
        if now.send.timeout != self.settings.send.timeout {
            s.set_write_timeout(Some(timeout_of(&now))).map_err(fail)?;
        }
        self.settings = now;
        Ok(())
    }

    /// Acks come back, or everything is sent: whatever failed before works again.
    fn delivering(&mut self) {
        if !self.delivering {
            self.delivering = true;
            self.st.delivering();
        }
    }

    /// Has the acknowledged position written, if it moved.
    fn save(&mut self) -> Result<(), SessionError> {
        if self.acked != self.saved {
            self.saver.save(self.acked).map_err(fail)?;
            self.saved = self.acked;
        }
        self.unsaved_items = 0;
        self.last_save = Instant::now();
        Ok(())
    }
}

/// Acks arrive on their own thread so sending never waits for them needlessly.
fn spawn_ack_reader(
    s: &TcpStream,
    ctx: &SendCtx,
) -> Result<Receiver<Result<Position, String>>, SessionError> {
    let r = s.try_clone().map_err(fail)?;
    let config = ctx.config.clone();
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name("sender-acks".into())
        .spawn(move || {
            let mut r = BufReader::new(r);
            loop {
                // MaxFrame as it is when the ack arrives (a reload may come while it waits).
                let next = r.fill_buf().map(|_| ()).map_err(FrameError::from);
                let frame = next.and_then(|()| read_frame(&mut r, config.get().daemon.max_frame));
                let msg = ack_of(frame);
                let end = msg.is_err();
                if tx.send(msg).is_err() || end {
                    return;
                }
            }
        })
        .map_err(fail)?;
    Ok(rx)
}

/// What a frame from the receiver says: the position acknowledged, or why the connection ends.
pub(super) fn ack_of(
    frame: Result<crate::wire::frame::Frame, FrameError>,
) -> Result<Position, String> {
    match frame {
        Ok(f) if f.kind == FrameType::Ack => {
            let mut fl = Fields::new(&f.payload, "ACK");
            position(&mut fl)
                .and_then(|p| fl.end().map(|()| p))
                .map_err(|e| e.to_string())
        }
        Ok(f) if f.kind == FrameType::Error => Err(ErrorMsg::decode(&f.payload)
            .map(|e| format!("refused by the receiver (code {}): {}", e.code, e.message))
            .unwrap_or_else(|e| e.to_string())),
        Ok(f) => Err(format!("unexpected {:?} frame", f.kind)),
        Err(FrameError::Closed) => Err(CLOSED.into()),
        Err(e) => Err(e.to_string()),
    }
}
