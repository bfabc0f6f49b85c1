//! filter_url (docs/design.md#master-cycle, step 4): what happens to one URL given its current_log
//! entry and what this cycle brought. Pure, so every rule is tested on its own.

/// A URL's state in current_log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    pub id: u64,
    /// When it was last forwarded (seconds since the epoch).
    pub fwd_ts: i64,
    /// The updatetag it was last forwarded with (or the last one seen since; empty: none).
    pub tag: &'a str,
    /// Hits received and not yet forwarded.
    pub pending: u64,
    /// Its latest hit.
    pub last_seen: i64,
}

/// What this cycle's reflog lines say about one URL (group_sum's result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incoming<'a> {
    /// The latest timestamp of its lines.
    pub ts: i64,
    pub hits: u64,
    /// The last non-empty updatetag in timestamp order (ties: file and line order).
    pub tag: &'a str,
}

/// Why a URL was forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Not in current_log.
    New,
    /// `Filter.Window` passed since it was last forwarded.
    Window,
    /// Its updatetag changed.
    Updatetag,
}

/// The verdict for one URL: its next current_log entry (None: it leaves) and, if forwarded,
/// with how many hits and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision<'a> {
    pub next: Option<Entry<'a>>,
    pub forward: Option<(u64, Reason)>,
    /// In current_log, not in this cycle, and past `Filter.Retention`.
    pub expired: bool,
}

/// The rules: `now` is the cycle's clock; `window` and `retention` are in seconds.
pub fn decide<'a>(
    id: u64,
    current: Option<&Entry<'a>>,
    incoming: Option<&Incoming<'a>>,
    now: i64,
    window: i64,
    retention: i64,
) -> Decision<'a> {
    match (current, incoming) {
        (None, Some(i)) => Decision {
            next: Some(Entry {
                id,
                fwd_ts: i.ts,
                tag: i.tag,
                pending: 0,
                last_seen: i.ts,
            }),
            forward: Some((i.hits, Reason::New)),
            expired: false,
        },
        (Some(c), Some(i)) => {
            // An empty updatetag carries no news: never a change, never stored over one.
            let changed = !i.tag.is_empty() && i.tag != c.tag;
            let aged = i.ts - c.fwd_ts >= window;
            let last_seen = c.last_seen.max(i.ts);
            if changed || aged {
                let tag = if i.tag.is_empty() { c.tag } else { i.tag };
                Decision {
                    next: Some(Entry {
                        id,
                        fwd_ts: i.ts,
                        tag,
                        pending: 0,
                        last_seen,
                    }),
                    forward: Some((
                        c.pending + i.hits,
                        if changed {
                            Reason::Updatetag
                        } else {
                            Reason::Window
                        },
                    )),
                    expired: false,
                }
            } else {
                Decision {
                    next: Some(Entry {
                        pending: c.pending + i.hits,
                        last_seen,
                        ..*c
                    }),
                    forward: None,
                    expired: false,
                }
            }
        }
        (Some(c), None) => {
            let keep = now - c.last_seen < retention;
            Decision {
                next: keep.then_some(*c),
                forward: None,
                expired: !keep,
            }
        }
        (None, None) => Decision {
            next: None,
            forward: None,
            expired: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: i64 = 3600;
    const R: i64 = 36000;
    const T: i64 = 1_700_000_000;

    fn entry(fwd_ts: i64, tag: &'static str, pending: u64, last_seen: i64) -> Entry<'static> {
        Entry {
            id: 1,
            fwd_ts,
            tag,
            pending,
            last_seen,
        }
    }

    fn inc(ts: i64, hits: u64, tag: &'static str) -> Incoming<'static> {
        Incoming { ts, hits, tag }
    }

    /// (case, current, incoming, now) -> (next entry, forward)
    #[test]
    fn every_rule() {
        type Case = (
            &'static str,
            Option<Entry<'static>>,
            Option<Incoming<'static>>,
            i64,
            Option<Entry<'static>>,
            Option<(u64, Reason)>,
        );
        let cases: Vec<Case> = vec![
            // The source's URL_A: incoming only.
            (
                "URL_A new",
                None,
                Some(inc(T, 3, "u1")),
                T,
                Some(entry(T, "u1", 0, T)),
                Some((3, Reason::New)),
            ),
            (
                "new with empty tag",
                None,
                Some(inc(T, 1, "")),
                T,
                Some(entry(T, "", 0, T)),
                Some((1, Reason::New)),
            ),
            (
                "new with 0 hits is still forwarded",
                None,
                Some(inc(T, 0, "")),
                T,
                Some(entry(T, "", 0, T)),
                Some((0, Reason::New)),
            ),
            // The source's URL_B: current_log only, kept within retention, dropped after.
            (
                "URL_B within retention",
                Some(entry(T, "u", 2, T)),
                None,
                T + R - 1,
                Some(entry(T, "u", 2, T)),
                None,
            ),
            (
                "URL_B at the retention boundary",
                Some(entry(T, "u", 2, T)),
                None,
                T + R,
                None,
                None,
            ),
            (
                "URL_B past retention",
                Some(entry(T, "u", 2, T)),
                None,
                T + R + 1,
                None,
                None,
            ),
            (
                "retention counts from last_seen, not fwd_ts",
                Some(entry(T, "u", 2, T + 5000)),
                None,
                T + R + 10,
                Some(entry(T, "u", 2, T + 5000)),
                None,
            ),
            // The source's URL_C: in both.
            (
                "URL_C within the window, same tag: held",
                Some(entry(T, "u", 2, T)),
                Some(inc(T + 10, 5, "u")),
                T + 10,
                Some(entry(T, "u", 7, T + 10)),
                None,
            ),
            (
                "URL_C window passed: forward pending + hits",
                Some(entry(T, "u", 2, T + 100)),
                Some(inc(T + W, 5, "u")),
                T + W,
                Some(entry(T + W, "u", 0, T + W)),
                Some((7, Reason::Window)),
            ),
            (
                "URL_C one second short of the window",
                Some(entry(T, "u", 2, T)),
                Some(inc(T + W - 1, 5, "")),
                T + W,
                Some(entry(T, "u", 7, T + W - 1)),
                None,
            ),
            (
                "URL_C tag changed within the window",
                Some(entry(T, "u1", 2, T)),
                Some(inc(T + 10, 5, "u2")),
                T + 10,
                Some(entry(T + 10, "u2", 0, T + 10)),
                Some((7, Reason::Updatetag)),
            ),
            (
                "tag change and window both: counted as updatetag",
                Some(entry(T, "u1", 0, T)),
                Some(inc(T + W, 1, "u2")),
                T + W,
                Some(entry(T + W, "u2", 0, T + W)),
                Some((1, Reason::Updatetag)),
            ),
            (
                "empty incoming tag is no change",
                Some(entry(T, "u1", 0, T)),
                Some(inc(T + 10, 1, "")),
                T + 10,
                Some(entry(T, "u1", 1, T + 10)),
                None,
            ),
            (
                "empty incoming tag never replaces a stored one",
                Some(entry(T, "u1", 1, T)),
                Some(inc(T + W, 1, "")),
                T + W,
                Some(entry(T + W, "u1", 0, T + W)),
                Some((2, Reason::Window)),
            ),
            (
                "a first tag after an empty one is a change",
                Some(entry(T, "", 0, T)),
                Some(inc(T + 1, 1, "u1")),
                T + 1,
                Some(entry(T + 1, "u1", 0, T + 1)),
                Some((1, Reason::Updatetag)),
            ),
            (
                "ties in timestamps: same second, held",
                Some(entry(T, "u", 0, T)),
                Some(inc(T, 4, "u")),
                T,
                Some(entry(T, "u", 4, T)),
                None,
            ),
            (
                "late lines never move last_seen back",
                Some(entry(T, "u", 0, T + 50)),
                Some(inc(T + 20, 1, "u")),
                T + 50,
                Some(entry(T, "u", 1, T + 50)),
                None,
            ),
        ];
        for (name, current, incoming, now, next, forward) in cases {
            let d = decide(1, current.as_ref(), incoming.as_ref(), now, W, R);
            assert_eq!(d.next, next, "{name}: next entry");
            assert_eq!(d.forward, forward, "{name}: forward");
            assert_eq!(
                d.expired,
                current.is_some() && incoming.is_none() && next.is_none(),
                "{name}: expired"
            );
        }
    }
}
