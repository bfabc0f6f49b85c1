//! The re-index bookkeeping (docs/design.md#yacobot-bookkeeping), as pure functions of the
//! config and the clock.
//!
//! After a URL is indexed: `next_indexed = now + min(D, steady_level)` days, where D is the
//! days until the next ad dictionary (at least 1), or `Url.ReindexPeriod` when the current
//! dictionary is older than `Url.DictAge` (or missing). The next dictionary is expected
//! `Url.DictPeriod` days after the current one, whose date is the newest of `Url.DictFile`'s
//! modification time and the last `yacobot dict load` (`binding_dict.loaded_at`).
//!
//! `steady_level` (days the content is expected to stay the same) adapts to each download, as
//! Nutch's adaptive fetch schedule does: content MD5 unchanged → × `Url.SteadyGrow` (1.4),
//! changed → × `Url.SteadyShrink` (0.8); the first download leaves it as it is; always within
//! `Url.SteadyMin`..`Url.SteadyMax`.

use std::path::Path;
use std::time::SystemTime;

use chrono::{NaiveDateTime, TimeDelta};

use crate::config::UrlConfig;

const DAY_SECONDS: f64 = 86_400.0;

/// The age in days of the dictionary file; `None` if there is none.
pub fn dictionary_age(file: Option<&Path>, now: SystemTime) -> Option<f64> {
    let modified = std::fs::metadata(file?).and_then(|m| m.modified()).ok()?;
    let age = now
        .duration_since(modified)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    Some(age / DAY_SECONDS)
}

/// The age in days of a dictionary loaded into SQL at `loaded_at` (`yacobot dict load`).
pub fn loaded_age(loaded_at: Option<NaiveDateTime>, now: NaiveDateTime) -> Option<f64> {
    let secs = (now - loaded_at?).num_seconds().max(0);
    Some(secs as f64 / DAY_SECONDS)
}

/// The age of the newest of two dictionaries (`None`: neither exists).
pub fn newest(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Days until the URL must be re-indexed on account of the dictionary.
pub fn dictionary_days(age: Option<f64>, cfg: &UrlConfig) -> f64 {
    match age {
        Some(age) if age <= cfg.dict_age => (cfg.dict_period - age).max(1.0),
        _ => cfg.reindex_period,
    }
}

/// `now` plus `days` (fractional), in whole seconds.
pub fn after_days(now: NaiveDateTime, days: f64) -> NaiveDateTime {
    let secs = (days * DAY_SECONDS).round().clamp(0.0, 1e10) as i64;
    now + TimeDelta::seconds(secs)
}

/// When a URL indexed `now` is due again.
pub fn next_indexed(now: NaiveDateTime, steady_level: f64, dictionary_days: f64) -> NaiveDateTime {
    after_days(now, dictionary_days.min(steady_level))
}

/// The new `steady_level` after a download: `changed` is `None` for the first download.
pub fn adapt_steady(old: f64, changed: Option<bool>, cfg: &UrlConfig) -> f64 {
    let new = match changed {
        None => old,
        Some(true) => old * cfg.steady_shrink,
        Some(false) => old * cfg.steady_grow,
    };
    new.clamp(cfg.steady_min, cfg.steady_max)
}

/// When a URL whose fetch failed `errors` times in a row is tried again: `retry_delay`
/// seconds, doubling with each failure, at most `Url.ReindexPeriod` days.
pub fn retry_at(
    now: NaiveDateTime,
    errors: u16,
    retry_delay: u64,
    cfg: &UrlConfig,
) -> NaiveDateTime {
    let doublings = u32::from(errors.saturating_sub(1)).min(30);
    let secs = (retry_delay as f64) * f64::from(1u32 << doublings);
    after_days(now, (secs / DAY_SECONDS).min(cfg.reindex_period))
}

/// Whether a URL downloaded at `last` is still fresh enough to be re-indexed from the
/// archive: less than `steady_level` days ago.
pub fn recently_downloaded(
    last: Option<NaiveDateTime>,
    steady_level: f64,
    now: NaiveDateTime,
) -> bool {
    last.is_some_and(|t| now < after_days(t, steady_level))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> NaiveDateTime {
        chrono::DateTime::from_timestamp(1_700_000_000, 0)
            .unwrap()
            .naive_utc()
    }

    #[test]
    fn dictionary_days_fresh_soon_and_stale() {
        let cfg = UrlConfig::default(); // period 7, age 14, reindex 7
        assert_eq!(dictionary_days(Some(2.0), &cfg), 5.0);
        assert_eq!(dictionary_days(Some(6.5), &cfg), 1.0, "at least one day");
        assert_eq!(
            dictionary_days(Some(10.0), &cfg),
            1.0,
            "overdue, not yet stale"
        );
        assert_eq!(
            dictionary_days(Some(15.0), &cfg),
            7.0,
            "stale: ReindexPeriod"
        );
        assert_eq!(dictionary_days(None, &cfg), 7.0, "missing: ReindexPeriod");
        assert_eq!(next_indexed(t0(), 3.0, 5.0), t0() + TimeDelta::days(3));
        assert_eq!(next_indexed(t0(), 30.0, 1.5), t0() + TimeDelta::hours(36));
    }

    #[test]
    fn steady_level_grows_and_shrinks_within_bounds() {
        let cfg = UrlConfig::default(); // 1..60, ×1.4, ×0.8
        assert_eq!(adapt_steady(2.0, None, &cfg), 2.0);
        assert!((adapt_steady(2.0, Some(false), &cfg) - 2.8).abs() < 1e-9);
        assert!((adapt_steady(2.0, Some(true), &cfg) - 1.6).abs() < 1e-9);
        assert_eq!(adapt_steady(1.1, Some(true), &cfg), 1.0);
        assert_eq!(adapt_steady(50.0, Some(false), &cfg), 60.0);
    }

    #[test]
    fn retries_double_up_to_the_reindex_period() {
        let cfg = UrlConfig::default();
        assert_eq!(retry_at(t0(), 1, 300, &cfg), t0() + TimeDelta::seconds(300));
        assert_eq!(
            retry_at(t0(), 3, 300, &cfg),
            t0() + TimeDelta::seconds(1200)
        );
        assert_eq!(retry_at(t0(), 40, 300, &cfg), t0() + TimeDelta::days(7));
        assert!(recently_downloaded(
            Some(t0()),
            1.0,
            t0() + TimeDelta::hours(23)
        ));
        assert!(!recently_downloaded(
            Some(t0()),
            1.0,
            t0() + TimeDelta::hours(25)
        ));
        assert!(!recently_downloaded(None, 1.0, t0()));
    }
}
