//! The daemon's stop: one flag, set once by SIGTERM or SIGINT (or a failed worker), that every
//! thread looks at between units of work; and the one sleep that ends early when it is set.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a sleeping thread looks at the flags: the longest a stop waits for a sleeper.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// A shared stop flag. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    /// The stop of a flag someone else owns (the runtime's).
    pub fn from_flag(flag: Arc<AtomicBool>) -> Stop {
        Stop(flag)
    }

    /// The flag itself, for code that takes an `AtomicBool`.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    pub fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Sleeps `d`, or less if the stop is set; returns whether the daemon goes on.
    pub fn sleep(&self, d: Duration) -> bool {
        self.sleep_or_wake(d, None)
    }

    /// Sleeps `d`, or less if the stop is set or `wake` is (which it clears: a signal for this
    /// sleeper, such as SIGUSR1's rotate); returns whether the daemon goes on.
    pub fn sleep_or_wake(&self, d: Duration, wake: Option<&AtomicBool>) -> bool {
        let until = Instant::now() + d;
        loop {
            if self.is_set() {
                return false;
            }
            if wake.is_some_and(|w| w.swap(false, Ordering::SeqCst)) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(LOOK_EVERY));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_ends_early_on_stop_or_wake_and_says_which() {
        let stop = Stop::new();
        let t = Instant::now();
        assert!(stop.sleep(Duration::from_millis(20)));
        assert!(t.elapsed() >= Duration::from_millis(20));

        let wake = AtomicBool::new(true);
        let t = Instant::now();
        assert!(stop.sleep_or_wake(Duration::from_secs(30), Some(&wake)));
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(!wake.load(Ordering::SeqCst), "a wake is taken once");

        let other = stop.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            other.set();
        });
        let t = Instant::now();
        assert!(!stop.sleep(Duration::from_secs(30)));
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(setter.join().is_ok());
    }
}
