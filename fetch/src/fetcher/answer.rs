//! The rules for a finished transfer: a page's answer becomes an outcome, a retry or a redirect
//! hop; a robots.txt answer becomes the host's robots state.

use std::cmp::Reverse;
use std::time::{Duration, Instant, SystemTime};

use super::{Fetcher, Finished};
use crate::guard;
use crate::hosts::Job;
use crate::outcome::{Document, FailKind, Outcome};
use crate::robots;
use crate::transfer::{self, Abort};

impl Fetcher {
    pub(super) fn page_done(
        &mut self,
        id: usize,
        url: &str,
        mut job: Job,
        done: Finished,
        now: Instant,
    ) {
        self.report_answer(id, &done);
        job.tries += 1;
        job.hop_tries += 1;
        job.fetch_time += done.took;
        job.bytes += done.received;
        job.status = done.status;
        match done.abort {
            Some(Abort::TooLarge) => {
                let limit = self.cfg.max_bytes;
                return self.finish(job, Outcome::TooLarge { limit });
            }
            Some(Abort::WrongType(content_type)) => {
                return self.finish(job, Outcome::WrongType { content_type });
            }
            None => {}
        }
        let status = match (done.result, done.status) {
            (Err(e), _) if e.is_couldnt_connect() && done.refused.is_some() => {
                let refusal = done.refused.map(|r| r.to_string()).unwrap_or_default();
                return self.fail(job, FailKind::Refused, format!("{url}: {refusal}"));
            }
            (Err(e), _) => {
                let kind = transfer::classify(&e);
                let reason = format!("{url}: {e}");
                return match kind {
                    FailKind::Tls | FailKind::Url => self.fail(job, kind, reason),
                    _ => self.retry(id, job, kind, reason, self.cfg.retry_delay, now),
                };
            }
            (Ok(()), None) => {
                let reason = format!("{url}: an answer without a status line");
                return self.fail(job, FailKind::Protocol, reason);
            }
            (Ok(()), Some(status)) => status,
        };
        match (status, done.location) {
            (200..=299, _) => {
                let document = Document {
                    content_type: done.content_type.unwrap_or_default(),
                    body: done.body,
                    redirects: std::mem::take(&mut job.redirects),
                };
                self.finish(job, Outcome::Fetched(document));
            }
            (301 | 302 | 303 | 307 | 308, Some(location)) => self.redirect(job, &location, now),
            (404 | 410, _) => self.finish(job, Outcome::Gone { status }),
            (429, _) => {
                let wait = done
                    .retry_after
                    .as_deref()
                    .and_then(|v| transfer::retry_after(v, SystemTime::now()))
                    .unwrap_or(self.cfg.retry_delay);
                let reason = format!("{url}: 429 Too Many Requests, Retry-After {wait:?}");
                if wait > self.cfg.max_retry_after {
                    return self.fail(job, FailKind::RateLimited, reason);
                }
                // The whole host is asked to slow down, not only this URL.
                if let Some(host) = self.hosts.get(id) {
                    host.next_start = host.next_start.max(now + wait);
                }
                self.retry(id, job, FailKind::RateLimited, reason, wait, now);
            }
            (500..=599, _) => {
                let reason = format!("{url}: server error {status}");
                self.retry(id, job, FailKind::Server, reason, self.cfg.retry_delay, now);
            }
            _ => self.fail(
                job,
                FailKind::Http,
                format!("{url}: unexpected status {status}"),
            ),
        }
    }

    /// Tries again after `wait` if tries are left, else fails with `kind`.
    fn retry(
        &mut self,
        id: usize,
        job: Job,
        kind: FailKind,
        reason: String,
        wait: Duration,
        now: Instant,
    ) {
        if job.hop_tries >= self.cfg.retries {
            let reason = format!("{reason} (after {} tries)", job.hop_tries);
            return self.fail(job, kind, reason);
        }
        log::debug!("retry in {wait:?}: {reason}");
        self.stats.retries += 1;
        self.seq += 1;
        self.delayed.push(Reverse((now + wait, self.seq)));
        self.delayed_jobs.insert(self.seq, (id, job));
        if let Some(host) = self.hosts.get(id) {
            host.delayed += 1;
        }
    }

    /// Follows a redirect through the target host's queue (robots.txt and politeness of its
    /// own), or fails on a bad target, a loop or too many hops.
    fn redirect(&mut self, mut job: Job, location: &str, now: Instant) {
        let from = job.url.to_string();
        let target = match job
            .url
            .join(location)
            .map_err(|e| e.to_string())
            .and_then(super::checked)
        {
            Ok(t) => t,
            Err(why) => {
                let reason = format!("{from}: bad redirect to {location:?}: {why}");
                return self.fail(job, FailKind::Redirect, reason);
            }
        };
        let to = target.to_string();
        if let Some(why) = guard::refused_url(&target, &self.private) {
            let reason = format!("{from}: redirect to {to}: {why}");
            return self.fail(job, FailKind::Refused, reason);
        }
        let chain = || {
            let mut c = job.redirects.clone();
            c.push(from.clone());
            c.push(to.clone());
            c.join(" -> ")
        };
        if to == from || job.redirects.contains(&to) {
            let reason = format!("redirect loop: {}", chain());
            return self.fail(job, FailKind::Redirect, reason);
        }
        if job.redirects.len() as u32 >= self.cfg.max_redirects {
            let reason = format!(
                "more than {} redirects: {}",
                self.cfg.max_redirects,
                chain()
            );
            return self.fail(job, FailKind::Redirect, reason);
        }
        self.stats.redirects += 1;
        job.redirects.push(from);
        job.url = target;
        job.hop_tries = 0;
        self.enqueue(job, now);
    }

    /// The answer to a robots.txt transfer.
    pub(super) fn robots_answer(
        &mut self,
        id: usize,
        url: &str,
        hops: u32,
        done: Finished,
        now: Instant,
    ) {
        if let (Err(e), Some(refusal)) = (&done.result, done.refused) {
            if e.is_couldnt_connect() {
                let reason = format!("{url}: {refusal}");
                log::info!("{reason}");
                let retry = self.cfg.robots_retry;
                self.robots_settled(id, robots::refused(reason, now, retry));
                return self.report_robots(id, None, Vec::new(), retry, None);
            }
        }
        let status = match (&done.result, done.status, &done.abort) {
            // A file cut at the size limit is read as far as it goes.
            (_, Some(s @ 200..=299), Some(Abort::TooLarge)) => s,
            (Err(e), _, _) => return self.robots_done(id, Err(format!("{url}: {e}")), now, None),
            (Ok(()), None, _) => {
                return self.robots_done(id, Err(format!("{url}: no status")), now, None)
            }
            (Ok(()), Some(s), _) => s,
        };
        if (300..=399).contains(&status) {
            // A redirect to where nothing is fetched from counts as one too many.
            let next = done
                .location
                .as_deref()
                .and_then(|l| url::Url::parse(url).ok()?.join(l).ok())
                .filter(|next| guard::refused_url(next, &self.private).is_none());
            match next {
                Some(next) if hops < self.cfg.max_redirects => {
                    if let Some(host) = self.hosts.get(id) {
                        host.robots_next = Some((next.to_string(), hops + 1));
                    }
                    return;
                }
                // Lost in redirects: RFC 9309 lets us take it as unavailable (4xx): allow all.
                _ => return self.robots_done(id, Ok((404, Vec::new())), now, None),
            }
        }
        let server = done.server.as_deref();
        self.robots_done(id, Ok((status, done.body)), now, server);
    }

    pub(super) fn robots_done(
        &mut self,
        id: usize,
        answer: Result<(u16, Vec<u8>), String>,
        now: Instant,
        server: Option<&str>,
    ) {
        let (ttl, retry) = (self.cfg.robots_ttl, self.cfg.robots_retry);
        let (state, status, body) = match answer {
            Ok((status, body)) => {
                let state = robots::from_answer(&self.agent, status, &body, now, ttl, retry);
                let body = if (200..=299).contains(&status) {
                    body
                } else {
                    Vec::new()
                };
                (state, Some(status), body)
            }
            Err(reason) => {
                log::info!("{reason}");
                (robots::unreachable(reason, now, retry), None, Vec::new())
            }
        };
        let trusted = match state {
            robots::RobotsState::Known { .. } => ttl,
            _ => retry,
        };
        self.robots_settled(id, state);
        self.report_robots(id, status, body, trusted, server);
    }

    /// The host's robots.txt state is now `state`.
    fn robots_settled(&mut self, id: usize, state: robots::RobotsState) {
        if let Some(host) = self.hosts.get(id) {
            // A Crawl-delay counts from the robots.txt request itself.
            if let Some(delay) = state.crawl_delay() {
                host.next_start = host.next_start.max(host.last_start + delay);
            }
            host.robots = state;
            host.robots_next = None;
        }
    }

    fn fail(&mut self, job: Job, kind: FailKind, reason: String) {
        let status = job.status;
        self.finish(job, Outcome::failed(kind, reason, status));
    }
}
