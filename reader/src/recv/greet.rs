//! The receiver's side of the handshake, with a deadline for all of it: a peer that trickles
//! its bytes (a valid HELLO a byte a second) or does not read ours holds its slot for
//! `Recv.HandshakeTimeout` at most, not for as long as each read keeps coming in time.

use std::io::BufReader;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use focuser_formats::segment::Position;

use super::admit::{frame_class, Refusal, RefusedError};
use super::{files, lock, RecvShared};
use crate::wire::handshake::{self, Accepted, ProtoError};
use crate::wire::messages::code;
use crate::wire::{FrameError, Mode};

/// The handshake up to WELCOME, all of it within `Recv.HandshakeTimeout`; after it the
/// connection has `Recv.IdleTimeout` between frames.
pub(super) fn greet(
    r: &mut BufReader<TcpStream>,
    w: &mut TcpStream,
    sh: &RecvShared,
) -> Result<Accepted, RefusedError> {
    let mut both = Deadline {
        r,
        w,
        until: Instant::now() + sh.handshake_timeout,
        limit: sh.handshake_timeout,
    };
    let refused = |e: ProtoError| {
        let (reason, class) = match &e {
            ProtoError::Auth(_) => (Refusal::Auth, ""),
            ProtoError::BadStream { reason, .. } => (Refusal::BadName, *reason),
            ProtoError::Frame(FrameError::Io(io)) if timed_out(io) => {
                (Refusal::HandshakeTimeout, "")
            }
            ProtoError::Frame(fe) => (Refusal::Protocol, frame_class(fe)),
            ProtoError::Unexpected(_) => (Refusal::Protocol, "unexpected frame"),
            ProtoError::Refused { .. } => (Refusal::Protocol, "the peer sent ERROR"),
        };
        RefusedError::new(reason, format!("handshake refused: {e}")).class(class)
    };
    let accepted = match handshake::server(&mut both, &sh.secret) {
        Ok(a) => a,
        Err(e) => {
            if let ProtoError::Frame(fe) = &e {
                if !matches!(fe, FrameError::Io(_) | FrameError::Closed) {
                    handshake::refuse(&mut both, code::PROTOCOL, &fe.to_string());
                }
            }
            return Err(refused(e));
        }
    };
    let last = match accepted.hello.mode {
        Mode::Items => lock(&sh.store)
            .map(|mut s| s.resume(&accepted.hello.stream))
            .map_err(|e| RefusedError::new(Refusal::Store, e.to_string()))?,
        Mode::Files => {
            if let Err(e) = files::open_inbox(sh, &accepted.hello.stream) {
                handshake::refuse(
                    &mut both,
                    code::STORE,
                    "the receiver cannot store files now",
                );
                return Err(RefusedError::new(Refusal::Store, format!("{e:#}")));
            }
            Position::default()
        }
    };
    handshake::welcome(&mut both, &accepted, last).map_err(|e| refused(e.into()))?;
    let s = both.r.get_ref();
    s.set_read_timeout(Some(sh.idle))
        .and_then(|()| s.set_write_timeout(Some(sh.idle)))
        .map_err(|e| refused(e.into()))?;
    Ok(accepted)
}

/// What a read or write that ran out of time returns (`SO_RCVTIMEO` gives `EAGAIN`).
pub(super) fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// The handshake's socket: reads from the buffered half, writes to the other, each given
/// only what is left of the deadline, so that a peer trickling its bytes (or not reading
/// ours) cannot hold a slot past it.
struct Deadline<'a> {
    r: &'a mut BufReader<TcpStream>,
    w: &'a mut TcpStream,
    until: Instant,
    limit: Duration,
}

impl Deadline<'_> {
    fn left(&self) -> std::io::Result<Option<Duration>> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(1) {
            return Err(self.too_late());
        }
        Ok(Some(left))
    }

    fn too_late(&self) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "the handshake took longer than Recv.HandshakeTimeout ({} s)",
                self.limit.as_secs()
            ),
        )
    }

    /// A socket timeout is the deadline passing: said so.
    fn checked<T>(&self, r: std::io::Result<T>) -> std::io::Result<T> {
        r.map_err(|e| if timed_out(&e) { self.too_late() } else { e })
    }
}

impl std::io::Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.r.get_ref().set_read_timeout(left)?;
        let r = self.r.read(buf);
        self.checked(r)
    }
}

impl std::io::Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.w.set_write_timeout(left)?;
        let r = self.w.write(buf);
        self.checked(r)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}
