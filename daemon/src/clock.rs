//! The daemons' one clock. The database holds UTC `DATETIME`s (whole seconds, what
//! [`db_now`] gives); files, figures and timeouts use Unix time.

use chrono::{NaiveDateTime, Timelike, Utc};

/// Now as the database stores it: UTC, whole seconds.
pub fn db_now() -> NaiveDateTime {
    let t = Utc::now().naive_utc();
    t.with_nanosecond(0).unwrap_or(t)
}

/// Seconds since the Unix epoch.
pub fn unix_secs() -> i64 {
    Utc::now().timestamp()
}

/// Milliseconds since the Unix epoch.
pub fn unix_millis() -> u64 {
    Utc::now().timestamp_millis().max(0) as u64
}

/// Now for people: `2026-11-26 13:45:00 UTC`.
pub fn utc_stamp() -> String {
    Utc::now().format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_clock_has_whole_seconds_and_agrees_with_unix_time() {
        let t = db_now();
        assert_eq!(t.nanosecond(), 0);
        assert!((t.and_utc().timestamp() - unix_secs()).abs() <= 1);
        assert!((unix_millis() / 1000) as i64 - unix_secs() <= 1);
    }
}
