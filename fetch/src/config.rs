//! What the fetcher is told: the `Fetch.*` keys of the yacobot config, as one struct.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::guard::AllowedPrivate;
use crate::proxy::{NoProxy, Proxy, ProxyAuth};
use crate::FetchError;

/// One host's own politeness, replacing `Fetch.HostDelay` and `Fetch.PerHost` for it (the
/// resources' `Resources.HostDelay` and `Resources.PerHost`). A robots.txt Crawl-delay longer
/// than the delay still wins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostPoliteness {
    pub delay: Option<Duration>,
    pub per_host: Option<usize>,
}

/// The fetcher's settings. Field names follow the config keys (`Fetch.Connections` → `connections`);
/// [`FetchConfig::default`] holds the documented defaults (docs/operations.md).
#[derive(Debug, Clone, PartialEq)]
pub struct FetchConfig {
    /// `Fetch.Connections`: transfers in flight at most, robots.txt fetches included.
    pub connections: usize,
    /// `Fetch.PerHost`: transfers to one host at once at most.
    pub per_host: usize,
    /// `Fetch.HostDelay`: least time between the starts of two requests to one host. A robots.txt
    /// Crawl-delay longer than this replaces it for that host.
    pub host_delay: Duration,
    /// `Fetch.MaxRedirects`: redirects followed for one request; one more is an error.
    pub max_redirects: u32,
    /// `Fetch.ConnectTimeout`.
    pub connect_timeout: Duration,
    /// `Fetch.Timeout`: one transfer, from its start to its last byte.
    pub timeout: Duration,
    /// `Fetch.MaxBytes`: largest document; a transfer that goes beyond it is aborted.
    pub max_bytes: u64,
    /// `Fetch.AllowedTypes`: MIME types a document may have (`text/html`, or `text/*`); empty
    /// allows every type.
    pub allowed_types: Vec<String>,
    /// `Fetch.UserAgent`: sent with every request; its product token (before the first `/` or
    /// space) is the name robots.txt groups are matched against.
    pub user_agent: String,
    /// `Fetch.RobotsTtl`: how long a host's robots.txt is trusted before it is fetched again.
    pub robots_ttl: Duration,
    /// `Fetch.RobotsRetry`: how long a host whose robots.txt answered 5xx or not at all is
    /// treated as disallowing everything before robots.txt is tried again.
    pub robots_retry: Duration,
    /// `Fetch.RobotsCache`: hosts remembered at most once idle (their robots.txt is fetched again
    /// after being forgotten).
    pub robots_cache: usize,
    /// `Fetch.Retries`: tries per URL for network errors, 5xx and 429 (the first one included).
    pub retries: u32,
    /// `Fetch.RetryDelay`: least time between two tries of one URL.
    pub retry_delay: Duration,
    /// `Fetch.MaxRetryAfter`: a 429 whose Retry-After asks for longer fails at once instead.
    pub max_retry_after: Duration,
    /// `Fetch.KeepAlive`: idle connections kept open for reuse (libcurl's connection cache; a
    /// connection serves one host, so with many hosts and a host delay this wants to be about
    /// the number of hosts fetched from within a few delays).
    pub keep_alive: usize,
    /// `Fetch.Pending`: the caller keeps [`crate::Fetcher::pending`] below this (memory bound).
    pub pending: usize,
    /// `Fetch.Resolve`: `host:port:address` entries as curl's `--resolve`; the host `*` stands for
    /// every host (tests and benchmarks point many names at 127.0.0.1 with it).
    pub resolve: Vec<String>,
    /// `Fetch.AllowPrivate`: addresses that are not public (loopback, private, link-local …)
    /// fetched from all the same — addresses, `address/prefix` networks, or `*` for all: test
    /// setups and benchmarks serve their web on 127.0.0.1. Other such addresses, at a URL's
    /// host or as a host name's address, fail with kind `refused` (see `guard`).
    pub allow_private: Vec<String>,
    /// `Fetch.Proxy`: `http://`, `https://`, `socks5://` or `socks5h://` `host:port` every
    /// request goes through; empty: none (and never one from the environment's `http_proxy`).
    pub proxy: String,
    /// `Fetch.ProxyAuthFile`'s credentials for the proxy (the caller reads the file).
    pub proxy_auth: Option<ProxyAuth>,
    /// `Fetch.NoProxy`: host names (and the names under them) and addresses fetched directly.
    pub no_proxy: Vec<String>,
    /// Per host name (lower case, no port): its own politeness.
    pub host_politeness: BTreeMap<String, HostPoliteness>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            connections: 64,
            per_host: 1,
            host_delay: Duration::from_secs(1),
            max_redirects: 5,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(60),
            max_bytes: 4 << 20,
            allowed_types: vec!["text/html".into(), "application/xhtml+xml".into()],
            user_agent: "yacobot/1.0".into(),
            robots_ttl: Duration::from_secs(24 * 3600),
            robots_retry: Duration::from_secs(600),
            robots_cache: 100_000,
            retries: 3,
            retry_delay: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(600),
            keep_alive: 1024,
            pending: 4096,
            resolve: Vec::new(),
            allow_private: Vec::new(),
            proxy: String::new(),
            proxy_auth: None,
            no_proxy: Vec::new(),
            host_politeness: BTreeMap::new(),
        }
    }
}

impl FetchConfig {
    /// Refuses settings the fetcher cannot work with.
    pub fn validate(&self) -> Result<(), FetchError> {
        let bad = |why: &str| Err(FetchError::Config(why.to_string()));
        if self.connections == 0 {
            return bad("Fetch.Connections must be at least 1");
        }
        if self.per_host == 0 {
            return bad("Fetch.PerHost must be at least 1");
        }
        if self.retries == 0 {
            return bad("Fetch.Retries must be at least 1 (the first try counts)");
        }
        if self.max_bytes == 0 {
            return bad("Fetch.MaxBytes must be at least 1");
        }
        if self.pending == 0 {
            return bad("Fetch.Pending must be at least 1");
        }
        if self.user_agent.trim().is_empty() {
            return bad("Fetch.UserAgent must not be empty");
        }
        AllowedPrivate::parse(&self.allow_private)
            .map_err(|e| FetchError::Config(format!("Fetch.AllowPrivate: {e}")))?;
        self.proxy()
            .map_err(|e| FetchError::Config(format!("Fetch.Proxy: {e}")))?;
        NoProxy::parse(&self.no_proxy)
            .map_err(|e| FetchError::Config(format!("Fetch.NoProxy: {e}")))?;
        if self.host_politeness.values().any(|p| p.per_host == Some(0)) {
            return bad("a host's own per-host limit must be at least 1");
        }
        for entry in &self.resolve {
            if parse_resolve(entry).is_none() {
                return Err(FetchError::Config(format!(
                    "Fetch.Resolve entry {entry:?} is not host:port:address"
                )));
            }
        }
        Ok(())
    }

    /// The same settings with `Fetch.PerHost` and `Fetch.HostDelay` replaced.
    pub fn with_politeness(mut self, per_host: usize, host_delay: Duration) -> Self {
        self.per_host = per_host;
        self.host_delay = host_delay;
        self
    }

    /// `Fetch.Proxy`, parsed (`None`: no proxy).
    pub fn proxy(&self) -> Result<Option<Proxy>, String> {
        match self.proxy.trim() {
            "" => Ok(None),
            text => Proxy::parse(text).map(Some),
        }
    }

    /// The politeness of host `name` (lower case): its delay and transfers at once.
    pub fn politeness_of(&self, name: &str) -> (Duration, usize) {
        let own = self.host_politeness.get(name).copied().unwrap_or_default();
        (
            own.delay.unwrap_or(self.host_delay),
            own.per_host.unwrap_or(self.per_host),
        )
    }

    /// The name robots.txt groups are matched against: the User-Agent's product token.
    pub fn robots_agent(&self) -> &str {
        let ua = self.user_agent.trim();
        let end = ua.find(['/', ' ']).unwrap_or(ua.len());
        &ua[..end]
    }
}

/// `host:port:address` → its parts (the address may hold colons: IPv6).
pub(crate) fn parse_resolve(entry: &str) -> Option<(&str, u16, &str)> {
    let mut parts = entry.splitn(3, ':');
    let host = parts.next().filter(|h| !h.is_empty())?;
    let port = parts.next()?.parse().ok()?;
    let addr = parts.next().filter(|a| !a.is_empty())?;
    Some((host, port, addr))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn robots_agent_is_the_product_token() {
        let mut cfg = FetchConfig {
            user_agent: "yacobot/2.1 (+http://example.com/bot)".into(),
            ..FetchConfig::default()
        };
        assert_eq!(cfg.robots_agent(), "yacobot");
        cfg.user_agent = "Plain Bot".into();
        assert_eq!(cfg.robots_agent(), "Plain");
    }

    #[test]
    fn bad_settings_are_refused() {
        let ok = FetchConfig::default();
        ok.validate().unwrap();
        for bad in [
            FetchConfig {
                connections: 0,
                ..ok.clone()
            },
            FetchConfig {
                per_host: 0,
                ..ok.clone()
            },
            FetchConfig {
                retries: 0,
                ..ok.clone()
            },
            FetchConfig {
                resolve: vec!["a.test:80".into()],
                ..ok.clone()
            },
            FetchConfig {
                resolve: vec!["a.test:x:127.0.0.1".into()],
                ..ok.clone()
            },
            FetchConfig {
                allow_private: vec!["1".into()],
                ..ok.clone()
            },
            FetchConfig {
                proxy: "ftp://p.test:21".into(),
                ..ok.clone()
            },
            FetchConfig {
                no_proxy: vec!["*".into()],
                ..ok.clone()
            },
            FetchConfig {
                host_politeness: [(
                    "a.test".into(),
                    HostPoliteness {
                        delay: None,
                        per_host: Some(0),
                    },
                )]
                .into(),
                ..ok.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        assert_eq!(parse_resolve("*:8080:::1"), Some(("*", 8080, "::1")));
    }

    #[test]
    fn a_host_of_its_own_keeps_its_politeness_and_the_others_the_defaults() {
        let fast = HostPoliteness {
            delay: Some(Duration::from_millis(50)),
            per_host: Some(4),
        };
        let only_delay = HostPoliteness {
            delay: Some(Duration::ZERO),
            per_host: None,
        };
        let cfg = FetchConfig {
            host_politeness: [("feeds.test".into(), fast), ("b.test".into(), only_delay)].into(),
            ..FetchConfig::default()
        };
        cfg.validate().unwrap();
        assert_eq!(
            cfg.politeness_of("feeds.test"),
            (Duration::from_millis(50), 4)
        );
        assert_eq!(cfg.politeness_of("b.test"), (Duration::ZERO, 1));
        assert_eq!(cfg.politeness_of("other.test"), (Duration::from_secs(1), 1));
    }
}
