//! Which transfer starts when: jobs queue per host, a host is armed once its delay has passed
//! and it has a free slot, and a starting transfer gets its libcurl handle (robots.txt first,
//! the address guard, the resolve entries).

use super::*;

impl Fetcher {
    pub(super) fn enqueue(&mut self, job: Job, now: Instant) {
        let id = self.hosts.id(&host_key(&job.url), now);
        if let Some(host) = self.hosts.get(id) {
            host.queue.push_back(job);
        }
        self.arm(id, now);
    }

    pub(super) fn arm(&mut self, id: usize, now: Instant) {
        if let Some(wait) = self.hosts.arm(id, self.cfg.per_host, now) {
            if !wait.is_zero() {
                self.stats.host_waits += 1;
                self.stats.host_wait_time += wait;
            }
        }
    }

    /// Jobs whose retry delay is over go back to the front of their host's queue.
    pub(super) fn release_delayed(&mut self, now: Instant) {
        while let Some(Reverse((at, seq))) = self.delayed.peek().copied() {
            if at > now {
                break;
            }
            self.delayed.pop();
            if let Some((id, job)) = self.delayed_jobs.remove(&seq) {
                if let Some(host) = self.hosts.get(id) {
                    host.delayed -= 1;
                    host.queue.push_front(job);
                }
                self.arm(id, now);
            }
        }
    }

    /// Starts transfers of ready hosts while there are free connections.
    pub(super) fn start_ready(&mut self, now: Instant) -> Result<(), FetchError> {
        while self.in_flight < self.cfg.connections {
            let Some(id) = self.hosts.pop_ready(now) else {
                break;
            };
            self.service(id, now)?;
        }
        Ok(())
    }

    /// Starts at most one transfer for a host taken from the ready heap, settling on the way the
    /// requests robots.txt decides alone.
    pub(super) fn service(&mut self, id: usize, now: Instant) -> Result<(), FetchError> {
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        if host.next_start > now {
            // A 429 pushed the host back after it was armed.
            self.arm(id, now);
            return Ok(());
        }
        if host.in_flight >= self.cfg.per_host {
            return Ok(());
        }
        loop {
            let Some(host) = self.hosts.get(id) else {
                return Ok(());
            };
            if let Some((url, hops)) = host.robots_next.take() {
                self.stats.robots_fetches += 1;
                return self.start(id, url, Purpose::Robots { hops }, now);
            }
            if host.queue.is_empty() {
                return Ok(());
            }
            match host.robots.current(now) {
                Current::Wait => return Ok(()),
                Current::Fetch => {
                    let url = host.queue.front().map(|j| robots::robots_url(&j.url));
                    host.robots = robots::RobotsState::Fetching;
                    host.robots_next = url.map(|u| (u, 0));
                }
                Current::Unavailable(kind, reason) => {
                    let reason = reason.to_string();
                    let jobs: Vec<Job> = host.queue.drain(..).collect();
                    for job in jobs {
                        let reason = format!("{}: {reason}", job.url);
                        let outcome = Outcome::Failed {
                            kind,
                            reason,
                            status: None,
                        };
                        self.finish(job, outcome);
                    }
                    return Ok(());
                }
                Current::Rules(rules) => {
                    let allowed = match (rules, host.queue.front()) {
                        (Some(r), Some(job)) => r.allowed(job.url.as_str()),
                        _ => true,
                    };
                    let Some(job) = host.queue.pop_front() else {
                        return Ok(());
                    };
                    if !allowed {
                        self.finish(job, Outcome::Disallowed);
                        continue;
                    }
                    let url = job.url.to_string();
                    return self.start(id, url, Purpose::Page(job), now);
                }
            }
        }
    }

    /// Adds a transfer to the multi handle and charges it to its host's politeness.
    pub(super) fn start(
        &mut self,
        id: usize,
        url: String,
        purpose: Purpose,
        now: Instant,
    ) -> Result<(), FetchError> {
        let (max_bytes, allowed) = match purpose {
            Purpose::Page(_) => (self.cfg.max_bytes, self.allowed.clone()),
            Purpose::Robots { .. } => (ROBOTS_MAX_BYTES, None),
        };
        let mut easy = match self.idle.pop() {
            Some(easy) => easy,
            None => Easy2::new(Collector::guarded(SocketGuard::new(Arc::clone(
                &self.private,
            )))),
        };
        easy.get_mut().reset(max_bytes, allowed);
        let resolve = self.resolve_entry(&url);
        if let Err(e) = transfer::prepare(&mut easy, &self.cfg, &url, resolve) {
            self.idle.push(easy);
            let outcome = Outcome::Failed {
                kind: FailKind::Url,
                reason: format!("{url}: {e}"),
                status: None,
            };
            match purpose {
                Purpose::Page(job) => self.finish(job, outcome),
                Purpose::Robots { .. } => self.robots_done(id, Err(e.to_string()), now, None),
            }
            self.arm(id, now);
            return Ok(());
        }
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.active.push(None);
            self.active.len() - 1
        });
        let mut handle = self.multi.add2(easy)?;
        handle.set_token(slot)?;
        self.active[slot] = Some(Active {
            handle,
            purpose,
            host: id,
            url,
            started: now,
        });
        self.in_flight += 1;
        self.stats.transfers += 1;
        let delay = self.host_delay(id);
        if let Some(host) = self.hosts.get(id) {
            host.in_flight += 1;
            host.last_start = now;
            host.next_start = now + delay;
        }
        self.arm(id, now);
        Ok(())
    }

    pub(super) fn host_delay(&mut self, id: usize) -> Duration {
        let base = self.cfg.host_delay;
        match self.hosts.get(id).and_then(|h| h.robots.crawl_delay()) {
            Some(d) => base.max(d),
            None => base,
        }
    }

    pub(super) fn resolve_entry(&self, url: &str) -> Option<String> {
        if self.resolve.is_empty() && self.resolve_any.is_empty() {
            return None;
        }
        let u = url::Url::parse(url).ok()?;
        let Some(url::Host::Domain(host)) = u.host() else {
            return None;
        };
        let port = u.port_or_known_default()?;
        let addr = self
            .resolve
            .get(&(host.to_string(), port))
            .or_else(|| self.resolve_any.get(&port))?;
        Some(format!("{host}:{port}:{addr}"))
    }
}
