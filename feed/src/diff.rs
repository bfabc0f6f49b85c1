//! The write plan of a run: this run's items against the previous run's, by key and MD5, with the
//! safety valve (docs/design.md#yacobot-resources; docs/formats.md "Diff plan and safety valve").

// std's SipHash with random keys: the keys come from partners' feeds.
use std::collections::{HashMap, HashSet};
use std::fmt;

/// A live item of the previous run (`vr_data` with `data_status = 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Previous<'a> {
    pub keyword: &'a str,
    pub md5: &'a str,
    /// The digest of its canonical form, when the item digest file had it.
    pub digest: Option<u128>,
    /// `vr_data.status_id`: the feed URL it came from.
    pub status_id: Option<u64>,
}

/// A good item of this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Current<'a> {
    pub keyword: &'a str,
    /// Its MD5; may be left empty when the previous item of the same key has a digest.
    pub md5: &'a str,
    pub digest: Option<u128>,
}

/// Whether an item is unchanged since the previous run: by digest when both sides have one,
/// else by MD5. An item without either compares as changed (rewritten, never lost).
pub fn same(p: &Previous<'_>, c: &Current<'_>) -> bool {
    match (p.digest, c.digest) {
        (Some(a), Some(b)) => a == b,
        _ => !c.md5.is_empty() && p.md5 == c.md5,
    }
}

/// The safety valve's thresholds, in whole percent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Valve {
    /// A run with fewer good items than this percentage of the previous run's is an error.
    pub min_kept_percent: u64,
    /// A run with more failed keys than this percentage of its items is an error.
    pub max_failed_percent: u64,
}

impl Default for Valve {
    fn default() -> Self {
        Valve {
            min_kept_percent: 20,
            max_failed_percent: 80,
        }
    }
}

/// Why a run is an error: nothing of it is deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValveReason {
    /// The feeds gave no item at all, good or failed.
    NoItems,
    Shrunk {
        items: u64,
        previous: u64,
        min_percent: u64,
    },
    FailedKeys {
        failed: u64,
        total: u64,
        max_percent: u64,
    },
}

impl fmt::Display for ValveReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValveReason::NoItems => write!(f, "the feeds gave no items; nothing deleted"),
            ValveReason::Shrunk {
                items,
                previous,
                min_percent,
            } => write!(
                f,
                "safety valve: {items} items, fewer than {min_percent} % of the previous run's {previous}; nothing deleted"
            ),
            ValveReason::FailedKeys {
                failed,
                total,
                max_percent,
            } => write!(
                f,
                "safety valve: {failed} of {total} items failed validation, more than {max_percent} %; nothing deleted"
            ),
        }
    }
}

/// What to write. Indices are into the `current` and `previous` slices given to [`plan`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// New keys: insert into `vr_data`, emit `UPDATE`.
    pub inserts: Vec<usize>,
    /// Known keys with another MD5: update `vr_data`, emit `UPDATE`.
    pub updates: Vec<usize>,
    /// Known keys with the same MD5: untouched.
    pub unchanged: usize,
    /// Previous keys gone from this run: mark deleted, emit `DELETE`.
    pub deletes: Vec<usize>,
    /// Previous keys gone but kept: their feed URL failed this run, or the valve closed.
    pub withheld: usize,
    /// A key seen again in this run: the first item with it wins, these are dropped.
    pub duplicates: Vec<usize>,
    /// `Some`: the run is an error and `deletes` is empty (inserts and updates still apply).
    pub valve: Option<ValveReason>,
}

/// Compares this run's good items (`current`, in feed order) and its count of failed keys with
/// the previous run's live items. `protected` says which previous items must not be deleted
/// whatever this run says (the caller's feed URLs that failed this run).
pub fn plan(
    previous: &[Previous<'_>],
    current: &[Current<'_>],
    failed_keys: u64,
    valve: Valve,
    protected: impl Fn(&Previous<'_>) -> bool,
) -> Plan {
    let before: HashMap<&str, &Previous<'_>> = previous.iter().map(|p| (p.keyword, p)).collect();
    let mut seen: HashSet<&str> = HashSet::with_capacity(current.len());
    let mut out = Plan::default();
    for (i, c) in current.iter().enumerate() {
        if !seen.insert(c.keyword) {
            out.duplicates.push(i);
            continue;
        }
        match before.get(c.keyword) {
            None => out.inserts.push(i),
            Some(p) if same(p, c) => out.unchanged += 1,
            Some(_) => out.updates.push(i),
        }
    }
    let items = seen.len() as u64;
    let total = items + failed_keys;
    let prev = before.len() as u64;
    out.valve = if total == 0 {
        Some(ValveReason::NoItems)
    } else if failed_keys * 100 > total * valve.max_failed_percent {
        Some(ValveReason::FailedKeys {
            failed: failed_keys,
            total,
            max_percent: valve.max_failed_percent,
        })
    } else if items * 100 < prev * valve.min_kept_percent {
        Some(ValveReason::Shrunk {
            items,
            previous: prev,
            min_percent: valve.min_kept_percent,
        })
    } else {
        None
    };
    for (i, p) in previous.iter().enumerate() {
        if seen.contains(p.keyword) {
            continue;
        }
        if out.valve.is_none() && !protected(p) {
            out.deletes.push(i);
        } else {
            out.withheld += 1;
        }
    }
    out
}
