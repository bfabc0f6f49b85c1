//! Signals become one enum delivered to the daemon's main loop.
//!
//! The meanings follow the source's dispatcher, not nginx: HUP reopens the log, USR1 rotates
//! the queue or segment being filled, USR2 reloads the config, TERM and INT stop gracefully.

use std::sync::mpsc::Sender;
use std::thread::JoinHandle;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
use signal_hook::iterator::Signals;

/// What the operator asked for (by signal, or through the status endpoint's POSTs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGHUP: reopen the log file (logrotate's `create` + `postrotate kill -HUP`).
    ReopenLog,
    /// SIGUSR1: close the data file being filled and hand it on.
    Rotate,
    /// SIGUSR2: reload the config file; a bad file is rejected and the old config stays.
    Reload,
    /// SIGTERM, SIGINT: stop gracefully within `stop_timeout`.
    Stop,
}

impl Signal {
    fn from_raw(raw: i32) -> Option<Signal> {
        match raw {
            SIGHUP => Some(Signal::ReopenLog),
            SIGUSR1 => Some(Signal::Rotate),
            SIGUSR2 => Some(Signal::Reload),
            SIGTERM | SIGINT => Some(Signal::Stop),
            _ => None,
        }
    }
}

/// Listens for the daemon's signals on a thread of its own and forwards them. The handlers
/// signal-hook installs only record the signal; everything else happens on that thread.
/// `on_stop(first)` runs on this thread for every stop signal, before the first is forwarded:
/// a main loop busy elsewhere (waiting out a database outage, say) must still learn of it.
/// Later stop signals are not forwarded.
pub(crate) fn listen(
    tx: Sender<Signal>,
    on_stop: impl Fn(bool) + Send + 'static,
) -> std::io::Result<(signal_hook::iterator::Handle, JoinHandle<()>)> {
    let mut signals = Signals::new([SIGHUP, SIGUSR1, SIGUSR2, SIGTERM, SIGINT])?;
    let handle = signals.handle();
    let thread = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut stopping = false;
            for raw in signals.forever() {
                let Some(signal) = Signal::from_raw(raw) else {
                    continue;
                };
                if signal == Signal::Stop {
                    on_stop(!stopping);
                    if stopping {
                        continue;
                    }
                    stopping = true;
                }
                if tx.send(signal).is_err() {
                    break;
                }
            }
        })?;
    Ok((handle, thread))
}
