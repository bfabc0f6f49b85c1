//! `vr_resource.fetch_detail`: the short report of a run that a person reads to act on it —
//! which sources or feeds failed and why, the item counts, the safety valve, up to 20 failed
//! keys (docs/formats.md "fetch_detail").

use std::fmt::{self, Display, Write};

use crate::diff::{Plan, ValveReason};
use crate::items::FailedKey;

/// Default cap of the report, in bytes (the column is TEXT; people read it).
pub const MAX_DETAIL_BYTES: usize = 2000;
/// Failed keys quoted in the report.
pub const MAX_FAILED_KEYS: usize = 20;
/// Failed sources or feeds quoted one a line; the rest are counted.
const MAX_FAILURE_LINES: usize = 10;
/// Characters of one quoted failed key.
const KEY_CHARS: usize = 80;

/// The item counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub new: u64,
    pub changed: u64,
    pub unchanged: u64,
    pub deleted: u64,
    pub withheld: u64,
    pub duplicates: u64,
    pub failed: u64,
}

impl Counts {
    pub fn of(plan: &Plan, failed_keys: u64) -> Counts {
        Counts {
            new: plan.inserts.len() as u64,
            changed: plan.updates.len() as u64,
            unchanged: plan.unchanged as u64,
            deleted: plan.deletes.len() as u64,
            withheld: plan.withheld as u64,
            duplicates: plan.duplicates.len() as u64,
            failed: failed_keys,
        }
    }
}

impl Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "items: {} new, {} changed, {} deleted, {} unchanged, {} failed keys",
            self.new, self.changed, self.deleted, self.unchanged, self.failed
        )?;
        if self.duplicates > 0 {
            write!(f, ", {} duplicate keys", self.duplicates)?;
        }
        if self.withheld > 0 {
            write!(f, ", {} kept though missing", self.withheld)?;
        }
        Ok(())
    }
}

/// Collects a run's report; [`FetchDetail::render`] writes it.
#[derive(Debug, Clone, Default)]
pub struct FetchDetail {
    failures: Vec<String>,
    failure_count: usize,
    notes: Vec<String>,
    counts: Option<Counts>,
    valve: Option<String>,
    failed_keys: Vec<String>,
    failed_key_count: u64,
    unknown_locations: Vec<String>,
    unknown_location_count: u64,
}

impl FetchDetail {
    pub fn new() -> Self {
        FetchDetail::default()
    }

    /// A data source that failed as a whole (its sitemap), by its name.
    pub fn source_failed(&mut self, source: &str, reason: &dyn Display) {
        self.failure(format!("source \"{source}\": {reason}"));
    }

    /// One feed URL of a source that failed (fetch, encoding, XML).
    pub fn feed_failed(&mut self, source: &str, url: &str, reason: &dyn Display) {
        self.failure(format!("source \"{source}\", {url}: {reason}"));
    }

    /// Any other failure of the run, as a line of its own (a class whose rules cannot be used).
    pub fn failure(&mut self, line: String) {
        self.failure_count += 1;
        if self.failures.len() < MAX_FAILURE_LINES {
            self.failures.push(line);
        }
    }

    /// A line that is not a failure (a source skipped because its sitemap did not change).
    pub fn note(&mut self, line: String) {
        if self.notes.len() < MAX_FAILURE_LINES {
            self.notes.push(line);
        }
    }

    pub fn counts(&mut self, counts: Counts) {
        self.counts = Some(counts);
    }

    pub fn valve(&mut self, reason: &ValveReason) {
        self.valve = Some(reason.to_string());
    }

    /// Counts a failed key and keeps the first 20 to quote.
    pub fn failed_key(&mut self, failed: &FailedKey) {
        self.failed_key_count += 1;
        if self.failed_keys.len() < MAX_FAILED_KEYS {
            self.failed_keys
                .push(cut_chars(&failed.to_string(), KEY_CHARS));
        }
    }

    /// Counts an item whose location the location list does not know (written without a
    /// `loc_id`), and keeps the first 20 to quote.
    pub fn unknown_location(&mut self, key: &str, location: &str) {
        self.unknown_location_count += 1;
        if self.unknown_locations.len() < MAX_FAILED_KEYS {
            self.unknown_locations
                .push(cut_chars(&format!("{key}: \"{location}\""), KEY_CHARS));
        }
    }

    pub fn unknown_location_count(&self) -> u64 {
        self.unknown_location_count
    }

    /// True when the report says the run failed (a source, a feed, the valve).
    pub fn is_error(&self) -> bool {
        self.valve.is_some() || self.failure_count > 0
    }

    /// The report, one line per matter, most important first, at most `max_bytes` bytes (cut
    /// on a character boundary, ending in `…`).
    pub fn render(&self, max_bytes: usize) -> String {
        let mut s = String::new();
        if let Some(v) = &self.valve {
            let _ = writeln!(s, "error: {v}");
        }
        for f in &self.failures {
            let _ = writeln!(s, "{f}");
        }
        if self.failure_count > self.failures.len() {
            let _ = writeln!(
                s,
                "… and {} more failed sources or feeds",
                self.failure_count - self.failures.len()
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "{n}");
        }
        if let Some(c) = &self.counts {
            let _ = writeln!(s, "{c}");
        }
        if !self.failed_keys.is_empty() {
            let _ = write!(s, "failed keys");
            if self.failed_key_count > self.failed_keys.len() as u64 {
                let _ = write!(
                    s,
                    " (first {} of {})",
                    self.failed_keys.len(),
                    self.failed_key_count
                );
            }
            let _ = writeln!(s, ": {}", self.failed_keys.join("; "));
        }
        if !self.unknown_locations.is_empty() {
            let _ = write!(s, "unknown locations");
            if self.unknown_location_count > self.unknown_locations.len() as u64 {
                let _ = write!(
                    s,
                    " (first {} of {})",
                    self.unknown_locations.len(),
                    self.unknown_location_count
                );
            }
            let _ = writeln!(s, ": {}", self.unknown_locations.join("; "));
        }
        if s.ends_with('\n') {
            s.pop();
        }
        cut_bytes(s, max_bytes)
    }
}

fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// At most `max` bytes, cut on a character boundary, `…` marking the cut.
fn cut_bytes(mut s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let ellipsis = "…";
    let mut at = max.saturating_sub(ellipsis.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    s.truncate(at);
    if max >= ellipsis.len() {
        s.push_str(ellipsis);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_char_boundaries() {
        let s = "中".repeat(100);
        for max in 0..40 {
            let c = cut_bytes(s.clone(), max);
            assert!(c.len() <= max, "{max}: {c}");
        }
        assert_eq!(cut_bytes("abc".into(), 3), "abc");
        assert_eq!(cut_bytes("abcdef".into(), 5), "ab…");
        assert_eq!(cut_chars("中文abc", 2), "中文…");
    }
}
