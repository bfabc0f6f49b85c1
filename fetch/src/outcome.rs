//! What the caller gives the fetcher and what it gets back.

use std::fmt;
use std::time::Duration;

/// One URL to fetch. `token` is the caller's own id for it (yacobot: the URL id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub token: u64,
    pub url: String,
}

/// A downloaded document (a 2xx answer of an allowed type, within `Fetch.MaxBytes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub content_type: String,
    pub body: Vec<u8>,
    /// The URLs redirected from, in order (the final URL is [`Completed::final_url`]).
    pub redirects: Vec<String>,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Fetched(Document),
    /// 404 or 410: the URL is gone.
    Gone {
        status: u16,
    },
    /// robots.txt forbids the URL for our User-Agent.
    Disallowed,
    /// The document is larger than `Fetch.MaxBytes`; its transfer was aborted.
    TooLarge {
        limit: u64,
    },
    /// The document's MIME type is not in `Fetch.AllowedTypes`; its transfer was aborted.
    WrongType {
        content_type: String,
    },
    Failed {
        kind: FailKind,
        reason: String,
        status: Option<u16>,
    },
}

impl Outcome {
    pub fn failed(kind: FailKind, reason: String, status: Option<u16>) -> Self {
        Outcome::Failed {
            kind,
            reason,
            status,
        }
    }
}

/// Why a request failed, for counting; the `reason` beside it says the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailKind {
    /// Not an absolute http(s) URL, or a redirect to one.
    Url,
    Dns,
    Connect,
    Timeout,
    /// The connection broke: reset, closed early, a body shorter than its Content-Length.
    Network,
    /// The answer is not HTTP: garbage status line, bad chunked or content encoding.
    Protocol,
    Tls,
    /// A status that is neither success, redirect, gone, 429 nor 5xx (401, 403, 3xx without
    /// Location …).
    Http,
    /// 5xx on every try.
    Server,
    /// 429 on every try, or a Retry-After beyond `Fetch.MaxRetryAfter`.
    RateLimited,
    /// More than `Fetch.MaxRedirects` redirects, or a loop.
    Redirect,
    /// The host's robots.txt answered 5xx or not at all: nothing of the host is fetched for a while.
    Robots,
    /// Not fetched, for safety (server-side request forgery): user info in the URL, or a host
    /// (an IP address, or a name's address) that is loopback, private, link-local … and not in
    /// `Fetch.AllowPrivate`, at the URL itself or at a redirect hop.
    Refused,
    /// The proxy (`Fetch.Proxy`) failed the request: it cannot be reached, answered 407 Proxy
    /// Authentication Required, refused the CONNECT, or a SOCKS error. It says nothing of the
    /// host.
    Proxy,
}

impl FailKind {
    pub const ALL: [FailKind; 14] = [
        FailKind::Url,
        FailKind::Dns,
        FailKind::Connect,
        FailKind::Timeout,
        FailKind::Network,
        FailKind::Protocol,
        FailKind::Tls,
        FailKind::Http,
        FailKind::Server,
        FailKind::RateLimited,
        FailKind::Redirect,
        FailKind::Robots,
        FailKind::Refused,
        FailKind::Proxy,
    ];

    /// A short lower-case name (metrics labels, logs).
    pub fn name(self) -> &'static str {
        match self {
            FailKind::Url => "url",
            FailKind::Dns => "dns",
            FailKind::Connect => "connect",
            FailKind::Timeout => "timeout",
            FailKind::Network => "network",
            FailKind::Protocol => "protocol",
            FailKind::Tls => "tls",
            FailKind::Http => "http",
            FailKind::Server => "server",
            FailKind::RateLimited => "rate_limited",
            FailKind::Redirect => "redirect",
            FailKind::Robots => "robots",
            FailKind::Refused => "refused",
            FailKind::Proxy => "proxy",
        }
    }
}

impl fmt::Display for FailKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A finished request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    pub request: Request,
    pub outcome: Outcome,
    /// The HTTP status of the last answer, if there was one.
    pub status: Option<u16>,
    /// The URL of the last transfer (after redirects).
    pub final_url: String,
    /// Submission to completion, waits for politeness and retries included.
    pub elapsed: Duration,
    /// Time spent in transfers (every try and redirect added up): the fetch time.
    pub fetch_time: Duration,
    /// Body bytes received over every transfer of this request.
    pub bytes: u64,
    /// Transfers made for this request: tries and redirect hops.
    pub tries: u32,
}
