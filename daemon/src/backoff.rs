//! Capped exponential backoff: the one policy for waiting between tries of something that
//! failed (a lost database, a receiver that is down, a worker whose step failed).

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Starts at `first`, doubles after every failure, never waits longer than `max`.
    pub fn new(first: Duration, max: Duration) -> Backoff {
        let first = first.min(max);
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// How long to wait after this failure; the next one waits twice as long (up to the cap).
    pub fn failed(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(self.max);
        wait
    }

    /// After a success the next failure waits `first` again.
    pub fn succeeded(&mut self) {
        self.next = self.first;
    }

    /// What the next failure will wait.
    pub fn next_wait(&self) -> Duration {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_and_start_over_after_a_success() {
        let mut b = Backoff::new(Duration::from_millis(250), Duration::from_secs(1));
        let waits: Vec<u64> = (0..5).map(|_| b.failed().as_millis() as u64).collect();
        assert_eq!(waits, [250, 500, 1000, 1000, 1000]);
        b.succeeded();
        assert_eq!(b.failed(), Duration::from_millis(250));
    }
}
