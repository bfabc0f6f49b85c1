//! Who gets a connection slot, and what is refused: allowdb, `Recv.MaxConnections` and
//! `Recv.MaxPerAddress` at accept, then the handshake's deadline, the secret, names, frames.
//! Each refusal is counted by reason (`reader_recv_refused_total{reason}`) and logged as an
//! episode per address and problem (the reason and a fixed description of what was wrong):
//! one line when it starts, a summary while it lasts, so that a flood from one peer cannot
//! bury the log.

use std::collections::HashMap;
use std::fmt::Display;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use log::Level;

use crate::wire::FrameError;

/// Why a connection was refused or closed by the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    NotAllowed,
    Busy,
    AddressBusy,
    HandshakeTimeout,
    Auth,
    Protocol,
    BadName,
    BadFile,
    Store,
}

impl Refusal {
    pub const ALL: [Refusal; 9] = [
        Refusal::NotAllowed,
        Refusal::Busy,
        Refusal::AddressBusy,
        Refusal::HandshakeTimeout,
        Refusal::Auth,
        Refusal::Protocol,
        Refusal::BadName,
        Refusal::BadFile,
        Refusal::Store,
    ];

    /// The `reason` label of `reader_recv_refused_total`.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::NotAllowed => "not_allowed",
            Refusal::Busy => "busy",
            Refusal::AddressBusy => "address_busy",
            Refusal::HandshakeTimeout => "handshake_timeout",
            Refusal::Auth => "auth",
            Refusal::Protocol => "protocol",
            Refusal::BadName => "bad_name",
            Refusal::BadFile => "bad_file",
            Refusal::Store => "store",
        }
    }

    fn level(self) -> Level {
        match self {
            Refusal::Store => Level::Error,
            _ => Level::Warn,
        }
    }
}

/// Refusals so far, by reason.
#[derive(Default)]
pub struct Refused([AtomicU64; Refusal::ALL.len()]);

impl Refused {
    pub fn add(&self, r: Refusal) {
        self.0[r as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, r: Refusal) -> u64 {
        self.0[r as usize].load(Ordering::Relaxed)
    }

    pub fn total(&self) -> u64 {
        Refusal::ALL.iter().map(|&r| self.get(r)).sum()
    }
}

/// An error that ends a connection with a refusal of this reason (already answered with
/// ERROR where the protocol has one); `class` says what was wrong in a few fixed words.
#[derive(Debug)]
pub struct RefusedError {
    pub reason: Refusal,
    pub class: &'static str,
    pub message: String,
}

impl RefusedError {
    pub fn new(reason: Refusal, message: impl Into<String>) -> RefusedError {
        RefusedError {
            reason,
            class: "",
            message: message.into(),
        }
    }

    pub fn class(mut self, class: &'static str) -> RefusedError {
        self.class = class;
        self
    }

    pub fn problem(&self, ip: IpAddr) -> Problem {
        Problem {
            ip,
            kind: self.reason.label(),
            class: self.class,
        }
    }
}

/// What was wrong with a frame, in fixed words (its details vary from frame to frame).
pub fn frame_class(e: &FrameError) -> &'static str {
    match e {
        FrameError::Closed => "closed",
        FrameError::Io(_) => "i/o error",
        FrameError::TooLarge { .. } => "frame too large",
        FrameError::BadCrc => "frame CRC mismatch",
        FrameError::BadRecord { .. } => "damaged record",
        FrameError::Empty => "empty frame",
        FrameError::UnknownType(_) => "unknown frame type",
        FrameError::BadPayload { reason, .. } => reason,
    }
}

impl Display for RefusedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RefusedError {}

/// What a log episode is about: one address, one kind of problem (a refusal's reason, or
/// `connection`), and what exactly (fixed words; empty if the kind says it all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Problem {
    pub ip: IpAddr,
    pub kind: &'static str,
    pub class: &'static str,
}

impl Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.ip, self.kind)?;
        if !self.class.is_empty() {
            write!(f, ", {}", self.class)?;
        }
        Ok(())
    }
}

impl Problem {
    pub fn refused(ip: IpAddr, r: Refusal) -> Problem {
        Problem {
            ip,
            kind: r.label(),
            class: "",
        }
    }

    pub fn connection(ip: IpAddr, class: &'static str) -> Problem {
        Problem {
            ip,
            kind: "connection",
            class,
        }
    }

    pub fn level(&self) -> Level {
        match Refusal::ALL.iter().find(|r| r.label() == self.kind) {
            Some(r) => r.level(),
            None => Level::Warn,
        }
    }
}

/// Connections open now, in all and per address.
#[derive(Default)]
pub struct Slots {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

impl Slots {
    /// Takes a slot for `ip`, or says why not.
    pub fn take(&mut self, ip: IpAddr, max: usize, per_address: usize) -> Result<usize, Refusal> {
        if self.total >= max {
            return Err(Refusal::Busy);
        }
        let n = self.by_address.entry(ip).or_insert(0);
        if *n >= per_address {
            return Err(Refusal::AddressBusy);
        }
        *n += 1;
        self.total += 1;
        Ok(self.total)
    }

    /// Gives back a slot of `ip`; returns how many are taken now.
    pub fn give_back(&mut self, ip: IpAddr) -> usize {
        if let Some(n) = self.by_address.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                self.by_address.remove(&ip);
            }
            self.total -= 1;
        }
        self.total
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn one_address_cannot_take_every_slot() {
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let mut s = Slots::default();
        for _ in 0..3 {
            s.take(a, 5, 3).unwrap();
        }
        assert_eq!(s.take(a, 5, 3), Err(Refusal::AddressBusy));
        assert_eq!(s.take(b, 5, 3), Ok(4));
        assert_eq!(s.take(b, 5, 3), Ok(5));
        assert_eq!(s.take(b, 5, 3), Err(Refusal::Busy));
        assert_eq!(s.give_back(a), 4);
        assert_eq!(s.take(a, 5, 3), Ok(5));
        for _ in 0..3 {
            s.give_back(a);
        }
        s.give_back(b);
        assert_eq!(s.give_back(b), 0);
        assert!(s.by_address.is_empty());
        // An address without a slot gives nothing back.
        assert_eq!(s.give_back(a), 0);
    }
}
