//! Masters that duplicate each other (`Loader.Mode = duplicate`, docs/formats.md "How a node
//! applies a queue file"): both are fed the same reflogs, so both forward the same hits. The
//! node applies the primary's files; another master's files are held while the primary keeps
//! up, dropped once the primary's watermark has passed them, and applied only when the primary
//! has handled no file for `Loader.FailoverAfter` seconds. Each master's watermark (the latest
//! `time=` of its files handled) moves in the transaction that applies or skips the file.

use chrono::{DateTime, NaiveDateTime};
use focuser_schema::models::LoaderWatermark;

/// What the watermarks make of a file, decided in the transaction that applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Every record counts.
    Apply,
    /// Only the records whose latest hit is after this time (seconds): another master's files
    /// counted the hits up to it.
    ApplyAfter(i64),
    /// None: another master's files covered the file's whole period.
    Skip,
}

pub fn secs(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp()
}

pub fn datetime(secs: i64) -> NaiveDateTime {
    DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .naive_utc()
}

/// The latest time the masters other than `master` have covered.
fn others(marks: &[LoaderWatermark], master: &str) -> Option<i64> {
    marks
        .iter()
        .filter(|m| m.master != master)
        .map(|m| secs(m.covered))
        .max()
}

/// The fate of a file of `master` whose header says `time=`. A file whose period another
/// master covered is skipped, whatever its own master did. One not covered whose time is
/// before its own master's watermark is bad: that master went back in time (a restored state,
/// a clock set back, a late file of a cycle before one applied), and which of its hits were
/// counted cannot be told.
pub fn decide(marks: &[LoaderWatermark], master: &str, time: i64) -> Result<Fate, String> {
    let own = marks
        .iter()
        .find(|m| m.master == master)
        .map(|m| secs(m.covered));
    let other = others(marks, master);
    if other.is_some_and(|other| time <= other) {
        return Ok(Fate::Skip);
    }
    if let Some(own) = own.filter(|&own| time < own) {
        return Err(format!(
            "time={} is before the watermark of master {master} ({}): its files went back in time (Loader.Mode = duplicate)",
            datetime(time).format("%Y%m%d%H%M%S"),
            datetime(own).format("%Y%m%d%H%M%S"),
        ));
    }
    Ok(match other {
        // The file's period (from its master's previous file on) begins after every hit the
        // others counted.
        None => Fate::Apply,
        Some(other) if own.is_some_and(|own| own >= other) => Fate::Apply,
        Some(other) => Fate::ApplyAfter(other),
    })
}

/// Whether a file of a master other than the primary waits, outside the transaction: it does
/// while the primary keeps up (it handled a file less than `failover_after` seconds ago, or,
/// before its first file, the loader started less than that ago) and no master has covered it
/// yet (one covered is skipped at once). A restart does not wait again: every pass handles
/// the primary's inbox first.
pub fn held(
    marks: &[LoaderWatermark],
    primary: &str,
    time: i64,
    started: i64,
    now: i64,
    failover_after: u64,
) -> bool {
    let covered = marks.iter().map(|m| secs(m.covered)).max();
    if covered.is_some_and(|c| time <= c) {
        return false;
    }
    let progress = marks
        .iter()
        .find(|m| m.master == primary)
        .map_or(started, |m| secs(m.handled_at));
    now.saturating_sub(progress) < i64::try_from(failover_after).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(master: &str, covered: i64, handled: i64) -> LoaderWatermark {
        LoaderWatermark {
            master: master.into(),
            covered: datetime(covered),
            handled_at: datetime(handled),
        }
    }

    #[test]
    fn fates() {
        let marks = [mark("m1", 1000, 5000), mark("m2", 800, 4000)];
        assert_eq!(decide(&[], "m1", 10), Ok(Fate::Apply));
        assert_eq!(decide(&marks, "m1", 1100), Ok(Fate::Apply));
        assert_eq!(decide(&marks, "m2", 900), Ok(Fate::Skip));
        assert_eq!(decide(&marks, "m2", 1000), Ok(Fate::Skip));
        assert_eq!(decide(&marks, "m2", 1200), Ok(Fate::ApplyAfter(1000)));
        assert_eq!(decide(&marks[..1], "m2", 1200), Ok(Fate::ApplyAfter(1000)));
        assert_eq!(decide(&marks, "m2", 700), Ok(Fate::Skip), "covered by m1");
        assert_eq!(decide(&marks, "m1", 700), Ok(Fate::Skip), "covered by m2");
        assert!(decide(&marks, "m1", 999).unwrap_err().contains("went back"));
        let marks = [mark("m1", 600, 5000), mark("m2", 700, 4000)];
        assert!(decide(&marks, "m2", 650).unwrap_err().contains("went back"));
    }

    #[test]
    fn holding() {
        let marks = [mark("m1", 1000, 5000)];
        assert!(held(&marks, "m1", 1200, 0, 5100, 600));
        assert!(!held(&marks, "m1", 900, 0, 5100, 600), "covered: skipped");
        assert!(!held(&marks, "m1", 1200, 0, 5600, 600), "failover");
        assert!(!held(&marks, "m1", 1200, 5500, 5600, 600), "restarted");
        assert!(held(&[], "m1", 1200, 5500, 5600, 600));
        assert!(!held(&[], "m1", 1200, 4000, 5600, 600));
    }
}
