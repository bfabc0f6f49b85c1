//! A connection that keeps failing, logged as episodes: a receiver down for a minute is retried
//! a dozen times or more, and each retry's error is the same news. One line per kind of
//! problem when it starts, a summary while it lasts (focuser_daemon's episodes), and one line
//! when shipping works again.

use std::fmt::Display;
use std::time::{Duration, Instant};

use focuser_daemon::episode::Episodes;
use log::Level;

/// Kinds of problem tracked at once; more share one line.
const KINDS: usize = 8;

pub struct Trouble {
    what: String,
    episodes: Episodes<String>,
    /// When the failures in a row began, and how many so far.
    since: Option<(Instant, u64)>,
}

impl Trouble {
    /// `what` names the connection in every line (`sender Index.0 host:port`).
    pub fn new(what: impl Into<String>) -> Trouble {
        let what = what.into();
        Trouble {
            episodes: Episodes::new(what.clone(), KINDS),
            what,
            since: None,
        }
    }

    /// One failure; logged if its kind of problem is new, or a summary is due.
    pub fn failed(&mut self, e: &dyn Display, retry: Duration) {
        let message = e.to_string();
        let (_, n) = self.since.get_or_insert_with(|| (Instant::now(), 0));
        *n += 1;
        let detail = format!("{message} (retrying in {:.1} s)", retry.as_secs_f64());
        self.episodes.occurred(kind(&message), Level::Warn, &detail);
    }

    /// Shipping works again: one line if it had been failing.
    pub fn recovered(&mut self) {
        if let Some((since, n)) = self.since.take() {
            log::warn!(
                "{}: shipping again after {} s ({n} failed attempts)",
                self.what,
                since.elapsed().as_secs()
            );
            self.episodes = Episodes::new(self.what.clone(), KINDS);
        }
    }

    pub fn failing(&self) -> bool {
        self.since.is_some()
    }
}

/// The kind of problem an error message tells: what it says before its first `:` (`connect`,
/// `refused by the receiver (code 7)`), without the details that vary between attempts.
fn kind(message: &str) -> String {
    let head = message.split(':').next().unwrap_or(message);
    head.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_what_an_error_says_before_its_details() {
        assert_eq!(
            kind("connect: Connection refused (os error 111)"),
            "connect"
        );
        assert_eq!(
            kind("refused by the receiver (code 7): too many connections"),
            "refused by the receiver (code 7)"
        );
        assert_eq!(kind("no ack for 5 s"), "no ack for 5 s");
    }

    #[test]
    fn failures_then_a_recovery_reset_the_episode() {
        let mut t = Trouble::new("sender Index.0 127.0.0.1:1");
        for _ in 0..5 {
            t.failed(&"connect: refused", Duration::from_millis(100));
        }
        assert!(t.failing());
        t.recovered();
        assert!(!t.failing());
    }
}
