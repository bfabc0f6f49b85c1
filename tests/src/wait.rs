//! Waiting for something to hold, with a deadline: a test polls what it expects rather than
//! sleeping and hoping, and fails (instead of hanging) when it does not come.

use std::time::{Duration, Instant};

/// How often a condition is looked at again.
const EVERY: Duration = Duration::from_millis(50);

/// Polls `check` until it holds or `timeout` passes; whether it held.
pub fn poll(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(EVERY);
    }
}

/// Waits until `check` holds; fails the test, naming `what`, when it does not within `timeout`.
#[track_caller]
pub fn wait_for(what: &str, timeout: Duration, check: impl FnMut() -> bool) {
    if !poll(timeout, check) {
        panic!("timed out waiting for {what} ({timeout:?})");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_says_whether_it_held_in_time() {
        let mut n = 0;
        assert!(poll(Duration::from_secs(10), || {
            n += 1;
            n == 3
        }));
        assert_eq!(n, 3);
        let start = Instant::now();
        assert!(!poll(Duration::from_millis(120), || false));
        assert!(start.elapsed() >= Duration::from_millis(120));
    }

    #[test]
    #[should_panic(expected = "timed out waiting for nothing")]
    fn wait_for_fails_naming_what() {
        wait_for("nothing", Duration::from_millis(60), || false);
    }
}
