//! robots.txt per host (RFC 9309 through `texting_robots`), and what its answer means:
//!
//! - 2xx: the rules for our User-Agent's product token (or `*`); Crawl-delay raises the host's
//!   delay; an unparseable file allows everything;
//! - 4xx (404, 401, 403 …): there are no rules, everything is allowed;
//! - 5xx, or no answer at all (after redirects): everything is disallowed for `Fetch.RobotsRetry`;
//!   the host's requests fail with kind `robots` until robots.txt is tried again.
//!
//! A known answer is kept for `Fetch.RobotsTtl`; the file is then fetched again before the next
//! request to that host.

use std::time::{Duration, Instant};

use texting_robots::Robot;

use crate::outcome::FailKind;

/// What we know of one host's robots.txt.
#[derive(Debug)]
pub(crate) enum RobotsState {
    /// Never fetched, or forgotten after its TTL.
    Unknown,
    /// Its fetch is in flight (or waiting on a redirect hop).
    Fetching,
    /// Rules (`None`: allow all) trusted until `until`.
    Known {
        rules: Option<Box<Robot>>,
        crawl_delay: Option<Duration>,
        until: Instant,
    },
    /// 5xx or unreachable: disallow everything until `until`; the host's requests fail with
    /// `kind` (`robots`, or `refused` when the host's address is one not fetched from).
    Unavailable {
        until: Instant,
        reason: String,
        kind: FailKind,
    },
}

impl RobotsState {
    /// The state's meaning at `now` (an expired one is Unknown).
    pub fn current(&self, now: Instant) -> Current<'_> {
        match self {
            RobotsState::Unknown => Current::Fetch,
            RobotsState::Fetching => Current::Wait,
            RobotsState::Known { rules, until, .. } if *until > now => {
                Current::Rules(rules.as_deref())
            }
            RobotsState::Unavailable {
                until,
                reason,
                kind,
            } if *until > now => Current::Unavailable(*kind, reason),
            _ => Current::Fetch,
        }
    }

    pub fn crawl_delay(&self) -> Option<Duration> {
        match self {
            RobotsState::Known { crawl_delay, .. } => *crawl_delay,
            _ => None,
        }
    }

    /// Has this state run out (so a host holding nothing else may be forgotten)?
    pub fn expired(&self, now: Instant) -> bool {
        match self {
            RobotsState::Unknown => true,
            RobotsState::Fetching => false,
            RobotsState::Known { until, .. } | RobotsState::Unavailable { until, .. } => {
                *until <= now
            }
        }
    }
}

pub(crate) enum Current<'a> {
    Fetch,
    Wait,
    Rules(Option<&'a Robot>),
    Unavailable(FailKind, &'a str),
}

/// The state after a robots.txt answer with `status` and `body`.
pub(crate) fn from_answer(
    agent: &str,
    status: u16,
    body: &[u8],
    now: Instant,
    ttl: Duration,
    retry: Duration,
) -> RobotsState {
    match status {
        200..=299 => {
            let rules = Robot::new(agent, body).ok();
            let crawl_delay = rules
                .as_ref()
                .and_then(|r| r.delay)
                .filter(|d| d.is_finite() && *d > 0.0)
                .map(|d| Duration::from_secs_f64(f64::from(d).min(86_400.0)));
            RobotsState::Known {
                rules: rules.map(Box::new),
                crawl_delay,
                until: now + ttl,
            }
        }
        400..=499 => RobotsState::Known {
            rules: None,
            crawl_delay: None,
            until: now + ttl,
        },
        _ => RobotsState::Unavailable {
            until: now + retry,
            reason: format!("robots.txt answered {status}"),
            kind: FailKind::Robots,
        },
    }
}

/// robots.txt of a host as a caller kept it (from an earlier [`crate::RobotsReport`]): a 2xx
/// with its file, or a 4xx, still trusted for `remaining`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RobotsSeed<'a> {
    pub status: u16,
    pub body: &'a [u8],
    pub remaining: Duration,
}

/// The state a seed gives, if it is one the fetcher takes (2xx or 4xx, not run out).
pub(crate) fn from_seed(agent: &str, seed: RobotsSeed<'_>, now: Instant) -> Option<RobotsState> {
    if !(200..=499).contains(&seed.status) || seed.remaining.is_zero() {
        return None;
    }
    // The retry is never used: a 2xx or 4xx is Known.
    let state = from_answer(
        agent,
        seed.status,
        seed.body,
        now,
        seed.remaining,
        seed.remaining,
    );
    matches!(state, RobotsState::Known { .. }).then_some(state)
}

/// The state after robots.txt could not be fetched at all.
pub(crate) fn unreachable(reason: String, now: Instant, retry: Duration) -> RobotsState {
    RobotsState::Unavailable {
        until: now + retry,
        reason: format!("robots.txt unreachable: {reason}"),
        kind: FailKind::Robots,
    }
}

/// The state after the host's address was refused (not public): its requests fail with kind
/// `refused` until robots.txt is tried again.
pub(crate) fn refused(reason: String, now: Instant, retry: Duration) -> RobotsState {
    RobotsState::Unavailable {
        until: now + retry,
        reason: format!("refused: {reason}"),
        kind: FailKind::Refused,
    }
}

/// `http://host:port/robots.txt` for a URL.
pub(crate) fn robots_url(url: &url::Url) -> String {
    let mut u = url.clone();
    u.set_path("/robots.txt");
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn rules(state: &RobotsState, now: Instant) -> Option<&Robot> {
        match state.current(now) {
            Current::Rules(r) => r,
            _ => panic!("not known: {state:?}"),
        }
    }

    #[test]
    fn answers_map_to_states() {
        let now = Instant::now();
        let ttl = Duration::from_secs(60);
        let retry = Duration::from_secs(5);
        let txt = b"User-agent: yacobot\nDisallow: /private\nCrawl-delay: 2\n\nUser-agent: *\nDisallow: /\n";
        let s = from_answer("yacobot", 200, txt, now, ttl, retry);
        let r = rules(&s, now).unwrap();
        assert!(!r.allowed("http://a.test/private/x"));
        assert!(r.allowed("http://a.test/public"));
        assert_eq!(s.crawl_delay(), Some(Duration::from_secs(2)));
        // Another agent falls to `*`.
        let s = from_answer("otherbot", 200, txt, now, ttl, retry);
        assert!(!rules(&s, now).unwrap().allowed("http://a.test/public"));

        let s = from_answer("yacobot", 404, b"", now, ttl, retry);
        assert!(rules(&s, now).is_none());
        assert!(matches!(s.current(now + ttl), Current::Fetch));

        let s = from_answer("yacobot", 503, b"", now, ttl, retry);
        assert!(matches!(
            s.current(now),
            Current::Unavailable(FailKind::Robots, _)
        ));
        assert!(matches!(s.current(now + retry), Current::Fetch));
    }

    #[test]
    fn robots_url_drops_path_and_query() {
        let u = url::Url::parse("http://a.test:8080/x/y?q=1#f").unwrap();
        assert_eq!(robots_url(&u), "http://a.test:8080/robots.txt");
    }
}
