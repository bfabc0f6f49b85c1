//! Recurring problems logged as episodes: one line when a problem starts, a summary while it
//! lasts, one line when it ends — never a line per occurrence. A full disk retried every
//! 100 ms, a database down for a minute or a flood of refused connections would otherwise bury
//! the log (and the status page's recent errors) under copies of one line.

use std::collections::HashMap;
use std::fmt::Display;
use std::hash::Hash;
use std::time::{Duration, Instant};

use log::Level;

/// How often an open episode repeats its line, with the count since the last one.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(60);

/// One kind of problem that comes and goes: `occurred` each time it happens, `resolved` when
/// the work that failed succeeds again.
#[derive(Debug)]
pub struct Episode {
    what: String,
    summary_every: Duration,
    open: Option<Open>,
}

#[derive(Debug)]
struct Open {
    since: Instant,
    last_line: Instant,
    total: u64,
    since_line: u64,
}

impl Episode {
    /// `what` names the problem in every line ("segment store /x: write failed").
    pub fn new(what: impl Into<String>) -> Episode {
        Episode {
            what: what.into(),
            summary_every: SUMMARY_EVERY,
            open: None,
        }
    }

    pub fn summary_every(mut self, every: Duration) -> Episode {
        self.summary_every = every;
        self
    }

    /// Notes one occurrence; logs it at `level` if it opens the episode or a summary is due.
    /// Returns whether a line was logged.
    pub fn occurred(&mut self, level: Level, detail: &dyn Display) -> bool {
        self.occurred_at(Instant::now(), level, detail)
    }

    pub fn occurred_at(&mut self, now: Instant, level: Level, detail: &dyn Display) -> bool {
        match &mut self.open {
            None => {
                self.open = Some(Open {
                    since: now,
                    last_line: now,
                    total: 1,
                    since_line: 0,
                });
                log::log!(level, "{}: {detail}", self.what);
                true
            }
            Some(open) => {
                open.total += 1;
                open.since_line += 1;
                if now.duration_since(open.last_line) < self.summary_every {
                    return false;
                }
                log::log!(
                    level,
                    "{}: still failing after {} s ({} times, {} since the last line): {detail}",
                    self.what,
                    now.duration_since(open.since).as_secs(),
                    open.total,
                    open.since_line
                );
                open.last_line = now;
                open.since_line = 0;
                true
            }
        }
    }

    /// Ends an open episode with one line saying how it ended, how long it lasted and how often
    /// it occurred. Returns whether a line was logged (false when no episode was open).
    pub fn resolved(&mut self, how: &dyn Display) -> bool {
        self.resolved_at(Instant::now(), how)
    }

    pub fn resolved_at(&mut self, now: Instant, how: &dyn Display) -> bool {
        let Some(open) = self.open.take() else {
            return false;
        };
        log::warn!(
            "{}: {how} after {} s ({} times)",
            self.what,
            now.duration_since(open.since).as_secs(),
            open.total
        );
        true
    }

    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Occurrences in the open episode (0 when none is open).
    pub fn count(&self) -> u64 {
        self.open.as_ref().map_or(0, |o| o.total)
    }
}

/// Episodes keyed by what they are about (a peer address, a file name). Keys are forgotten
/// once their episode has been quiet for a summary interval, and at most `cap` are tracked:
/// beyond that, occurrences go to one shared "other" episode, so that memory stays bounded
/// whoever sends what.
#[derive(Debug)]
pub struct Episodes<K> {
    what: String,
    cap: usize,
    summary_every: Duration,
    by_key: HashMap<K, (Episode, Instant)>,
    other: Episode,
}

impl<K: Hash + Eq + Display> Episodes<K> {
    pub fn new(what: impl Into<String>, cap: usize) -> Episodes<K> {
        let what = what.into();
        Episodes {
            other: Episode::new(format!("{what} (other sources)")),
            what,
            cap: cap.max(1),
            summary_every: SUMMARY_EVERY,
            by_key: HashMap::new(),
        }
    }

    pub fn summary_every(mut self, every: Duration) -> Episodes<K> {
        self.summary_every = every;
        self.other = self.other.summary_every(every);
        self
    }

    pub fn occurred(&mut self, key: K, level: Level, detail: &dyn Display) -> bool {
        self.occurred_at(Instant::now(), key, level, detail)
    }

    pub fn occurred_at(
        &mut self,
        now: Instant,
        key: K,
        level: Level,
        detail: &dyn Display,
    ) -> bool {
        let every = self.summary_every;
        self.by_key
            .retain(|_, (_, last)| now.duration_since(*last) < every);
        if !self.by_key.contains_key(&key) && self.by_key.len() >= self.cap {
            return self.other.occurred_at(now, level, detail);
        }
        let what = &self.what;
        let (episode, last) = self.by_key.entry(key).or_insert_with_key(|k| {
            (
                Episode::new(format!("{what} ({k})")).summary_every(every),
                now,
            )
        });
        *last = now;
        episode.occurred_at(now, level, detail)
    }

    /// Keys with an open episode.
    pub fn open(&self) -> usize {
        self.by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_episode_logs_its_start_a_summary_when_due_and_its_end() {
        let t0 = Instant::now();
        let mut e = Episode::new("disk").summary_every(Duration::from_secs(10));
        assert!(e.occurred_at(t0, Level::Error, &"full"));
        for ms in (100..9_900).step_by(100) {
            assert!(!e.occurred_at(t0 + Duration::from_millis(ms), Level::Error, &"full"));
        }
        assert!(e.occurred_at(t0 + Duration::from_secs(10), Level::Error, &"full"));
        assert_eq!(e.count(), 100);
        assert!(e.resolved_at(t0 + Duration::from_secs(11), &"recovered"));
        assert!(!e.is_open());
        assert!(!e.resolved_at(t0 + Duration::from_secs(12), &"recovered"));
        assert!(e.occurred_at(t0 + Duration::from_secs(13), Level::Error, &"again"));
    }

    #[test]
    fn keyed_episodes_stay_bounded_and_forget_quiet_keys() {
        let t0 = Instant::now();
        let mut e: Episodes<u32> =
            Episodes::new("refused", 4).summary_every(Duration::from_secs(5));
        let logged: usize = (0..100)
            .filter(|k| e.occurred_at(t0, *k, Level::Warn, &"x"))
            .count();
        // Four keys of their own, then one line for everything else.
        assert_eq!(logged, 5);
        assert_eq!(e.open(), 4);
        assert!(e.occurred_at(t0 + Duration::from_secs(6), 99, Level::Warn, &"x"));
        assert_eq!(e.open(), 1);
    }
}
