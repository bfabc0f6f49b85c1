//! The record per host (the source's srv.db; docs/operations.md "yacobot: the record per
//! host"): the fetcher's reports are gathered here between two bookings and written with them,
//! in their transaction, one statement for every host of the batch ([`Host::record_batch`]);
//! the fetcher itself does no SQL. When a claim brings URLs of hosts whose robots.txt the
//! fetcher does not know (after a restart, or once it forgot them), the record's robots.txt
//! is handed to it while it is trusted ([`seeds`]), so it is not fetched again.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime};

use chrono::{NaiveDateTime, TimeDelta};
use focuser_fetch::{DelaySource as Source, HostReport};
use focuser_schema::models::{DelaySource, HostRow, KeptRobots, RobotsAnswer};

use super::book::md5_hex;

/// `host.last_error` and `host.server` hold 255 characters.
const TEXT_CHARS: usize = 255;

/// One host's news since the last write.
#[derive(Debug, Default)]
struct News {
    documents: u64,
    bytes: u64,
    transfer_time: Duration,
    answers: u64,
    server: Option<String>,
    errors: u32,
    errors_in_row: u32,
    last_error: Option<String>,
    last_error_at: Option<NaiveDateTime>,
    last_answer_at: Option<NaiveDateTime>,
    delay_ms: Option<u32>,
    delay_source: Option<DelaySource>,
    robots: Option<Robots>,
}

#[derive(Debug)]
struct Robots {
    fetched_at: NaiveDateTime,
    expires: NaiveDateTime,
    status: Option<u16>,
    md5: Option<String>,
    bytes: Option<u32>,
    txt: Option<Vec<u8>>,
}

/// The news gathered and not yet written, by host.
#[derive(Debug, Default)]
pub struct HostNews {
    hosts: HashMap<String, News>,
}

fn cut(s: &str) -> String {
    s.chars().take(TEXT_CHARS).collect()
}

fn stamp(t: SystemTime) -> NaiveDateTime {
    chrono::DateTime::<chrono::Utc>::from(t).naive_utc()
}

impl HostNews {
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Adds the fetcher's reports, taken at `now`; a robots.txt file is kept if it is at most
    /// `robots_bytes` long (else only its digest and length).
    pub fn note(&mut self, reports: Vec<HostReport>, now: NaiveDateTime, robots_bytes: usize) {
        for r in reports {
            let n = self.hosts.entry(r.host).or_default();
            n.documents += r.documents;
            n.bytes += r.bytes;
            n.answers += r.answers;
            n.transfer_time += r.transfer_time;
            if let Some(s) = r.server {
                n.server = Some(cut(&s));
            }
            let errors = u32::try_from(r.errors).unwrap_or(u32::MAX);
            let in_row = u32::try_from(r.errors_in_row).unwrap_or(u32::MAX);
            n.errors = n.errors.saturating_add(errors);
            if r.answered {
                n.errors_in_row = in_row;
                n.last_answer_at = Some(now);
            } else {
                n.errors_in_row = n.errors_in_row.saturating_add(in_row);
            }
            if let Some(e) = r.last_error {
                n.last_error = Some(cut(&e));
                n.last_error_at = Some(now);
            }
            n.delay_ms = Some(u32::try_from(r.delay.as_millis()).unwrap_or(u32::MAX));
            n.delay_source = Some(match r.delay_source {
                Source::Config => DelaySource::HostDelay,
                Source::CrawlDelay => DelaySource::CrawlDelay,
            });
            if let Some(robots) = r.robots {
                let fetched_at = stamp(robots.fetched_at);
                let ttl = TimeDelta::from_std(robots.ttl).unwrap_or(TimeDelta::MAX);
                let ok = robots.status.is_some_and(|s| (200..=299).contains(&s));
                let len = robots.body.len();
                n.robots = Some(Robots {
                    fetched_at,
                    expires: fetched_at.checked_add_signed(ttl).unwrap_or(fetched_at),
                    status: robots.status,
                    md5: ok.then(|| md5_hex(&robots.body)),
                    bytes: ok.then(|| u32::try_from(len).unwrap_or(u32::MAX)),
                    txt: (ok && len <= robots_bytes).then_some(robots.body),
                });
            }
        }
    }

    /// The rows to write: what the record adds to `host`.
    pub fn rows(&self) -> Vec<HostRow<'_>> {
        self.hosts
            .iter()
            .map(|(name, n)| {
                let secs = n.transfer_time.as_secs_f64();
                HostRow {
                    name,
                    documents: n.documents,
                    bytes: n.bytes,
                    bps: (n.answers > 0 && secs > 0.0).then(|| n.bytes as f64 / secs),
                    server: n.server.as_deref(),
                    errors: n.errors,
                    errors_in_row: n.errors_in_row,
                    last_error: n.last_error.as_deref(),
                    last_error_at: n.last_error_at,
                    last_answer_at: n.last_answer_at,
                    delay_ms: n.delay_ms,
                    delay_source: n.delay_source,
                    robots: n.robots.as_ref().map(|r| RobotsAnswer {
                        fetched_at: r.fetched_at,
                        expires: r.expires,
                        status: r.status,
                        md5: r.md5.as_deref(),
                        bytes: r.bytes,
                        txt: r.txt.as_deref(),
                    }),
                }
            })
            .collect()
    }

    /// Written: forgotten.
    pub fn clear(&mut self) {
        self.hosts.clear();
    }
}

/// The URLs of each host whose robots.txt the fetcher does not know, by host name (`unknown`
/// asks the fetcher).
pub fn wanted<'u>(
    urls: impl IntoIterator<Item = &'u str>,
    unknown: impl Fn(&str) -> bool,
) -> BTreeMap<String, Vec<&'u str>> {
    let mut out: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for url in urls {
        if !unknown(url) {
            continue;
        }
        if let Some(name) = focuser_fetch::host_name_of(url) {
            out.entry(name).or_default().push(url);
        }
    }
    out
}

/// What to seed the fetcher with: each kept robots.txt, for every URL of its host, with how
/// long it is still trusted at `now`.
pub fn seeds<'k, 'u>(
    kept: &'k [KeptRobots],
    wanted: &BTreeMap<String, Vec<&'u str>>,
    now: NaiveDateTime,
) -> Vec<(&'u str, focuser_fetch::RobotsSeed<'k>)> {
    let mut out = Vec::new();
    for k in kept {
        let Some(urls) = wanted.get(&k.name) else {
            continue;
        };
        let Ok(remaining) = (k.expires - now).to_std() else {
            continue;
        };
        let seed = focuser_fetch::RobotsSeed {
            status: k.status,
            body: k.txt.as_deref().unwrap_or_default(),
            remaining,
        };
        out.extend(urls.iter().map(|u| (*u, seed)));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use focuser_fetch::RobotsReport;

    fn t(s: i64) -> NaiveDateTime {
        chrono::DateTime::from_timestamp(1_800_000_000 + s, 0)
            .unwrap()
            .naive_utc()
    }

    fn report(host: &str) -> HostReport {
        HostReport {
            host: host.into(),
            documents: 0,
            answers: 0,
            bytes: 0,
            transfer_time: Duration::ZERO,
            server: None,
            errors: 0,
            errors_in_row: 0,
            answered: false,
            last_error: None,
            delay: Duration::from_secs(1),
            delay_source: Source::Config,
            robots: None,
        }
    }

    #[test]
    fn reports_add_up_per_host_until_written() {
        let mut news = HostNews::default();
        let a = HostReport {
            documents: 2,
            answers: 2,
            bytes: 3000,
            transfer_time: Duration::from_millis(500),
            server: Some("x".repeat(300)),
            errors: 1,
            errors_in_row: 1,
            answered: true,
            last_error: Some("timeout".into()),
            ..report("a:80")
        };
        let body = b"User-agent: *\nDisallow: /\n".to_vec();
        let a2 = HostReport {
            errors: 2,
            errors_in_row: 2,
            last_error: Some("reset".into()),
            delay: Duration::from_millis(2500),
            delay_source: Source::CrawlDelay,
            robots: Some(RobotsReport {
                fetched_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
                ttl: Duration::from_secs(60),
                status: Some(200),
                body: body.clone(),
            }),
            ..report("a:80")
        };
        news.note(vec![a, report("b:80")], t(0), 1000);
        news.note(vec![a2], t(5), 10);
        assert_eq!(news.len(), 2);
        let rows = news.rows();
        let a = rows.iter().find(|r| r.name == "a:80").unwrap();
        assert_eq!((a.documents, a.errors, a.errors_in_row), (2, 3, 3));
        assert_eq!(a.bps, Some(6000.0));
        assert_eq!(a.server.unwrap().len(), 255);
        assert_eq!(
            (a.last_error, a.last_error_at, a.last_answer_at),
            (Some("reset"), Some(t(5)), Some(t(0)))
        );
        assert_eq!(
            (a.delay_ms, a.delay_source),
            (Some(2500), Some(DelaySource::CrawlDelay))
        );
        let r = a.robots.as_ref().unwrap();
        assert_eq!(
            (r.fetched_at, r.expires, r.status),
            (t(0), t(60), Some(200))
        );
        assert_eq!(r.md5.unwrap(), md5_hex(&body));
        assert_eq!(
            (r.bytes, r.txt),
            (Some(body.len() as u32), None),
            "longer than 10 bytes"
        );
        let b = rows.iter().find(|r| r.name == "b:80").unwrap();
        assert_eq!(
            (b.bps, b.last_answer_at, b.robots.is_none()),
            (None, None, true)
        );
        drop(rows);
        news.clear();
        assert!(news.is_empty());
    }

    #[test]
    fn kept_robots_seed_every_url_of_their_host_while_trusted() {
        let urls = [
            "http://a.test/1",
            "http://a.test/2",
            "http://b.test:81/",
            "http://known.test/",
        ];
        let want = wanted(urls, |u| !u.contains("known"));
        assert_eq!(want.keys().collect::<Vec<_>>(), ["a.test:80", "b.test:81"]);
        let kept = vec![
            KeptRobots {
                name: "a.test:80".into(),
                status: 200,
                txt: Some(b"Disallow: /x".to_vec()),
                expires: t(100),
            },
            KeptRobots {
                name: "b.test:81".into(),
                status: 404,
                txt: None,
                expires: t(-1),
            },
        ];
        let s = seeds(&kept, &want, t(40));
        assert_eq!(s.len(), 2, "b.test's has run out");
        assert_eq!(s[0].0, "http://a.test/1");
        assert_eq!(s[1].1.remaining, Duration::from_secs(60));
        assert_eq!(s[1].1.body, b"Disallow: /x");
    }
}
