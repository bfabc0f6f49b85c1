//! The seam between the crawler and whatever downloads pages: requests go in with a token,
//! completions come out. The shape is focuser-fetch's (libcurl multi): its fetcher plugs in
//! here; [`super::mirror::Mirror`] reads a local mirror tree.

use std::time::Duration;

/// A page to download; `token` comes back with its completion (the URL id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub token: u64,
    pub url: String,
}

/// A document as downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    /// Where the last redirect led.
    pub final_url: String,
}

/// Why a download failed after its tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailKind {
    Connect,
    Timeout,
    /// A 5xx or 429 answer.
    Http,
    TooManyRedirects,
    /// Reading the mirror.
    Io,
    Other,
}

impl FailKind {
    /// The label of the `yacobot_fetch_errors_total` figure.
    pub fn name(self) -> &'static str {
        match self {
            FailKind::Connect => "connect",
            FailKind::Timeout => "timeout",
            FailKind::Http => "http",
            FailKind::TooManyRedirects => "redirects",
            FailKind::Io => "io",
            FailKind::Other => "other",
        }
    }
}

/// What became of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Fetched(Document),
    /// 404 or 410: the page is gone.
    Gone {
        status: u16,
    },
    /// robots.txt forbids it.
    Disallowed,
    /// Longer than `Fetch.MaxBytes`; the transfer was aborted.
    TooLarge {
        limit: u64,
    },
    /// A content type not in `Fetch.MimeTypes`.
    WrongType {
        content_type: String,
    },
    /// Network errors, 5xx, 429, redirect loops: given up after the fetcher's tries.
    Failed {
        kind: FailKind,
        reason: String,
        status: Option<u16>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    pub request: Request,
    pub outcome: Outcome,
    pub elapsed: Duration,
    pub tries: u32,
}

#[derive(Debug, thiserror::Error)]
#[error("downloader: {0}")]
pub struct DownloadError(pub String);

/// A downloader: at most its own number of transfers in flight, the rest pending.
pub trait Downloader: Send {
    fn submit(&mut self, request: Request);
    /// Requests not started yet.
    fn pending(&self) -> usize;
    fn in_flight(&self) -> usize;
    /// Works for at most `max_wait` and returns what completed meanwhile.
    fn perform(&mut self, max_wait: Duration) -> Result<Vec<Completed>, DownloadError>;
    /// Requests waiting for their host's politeness delay.
    fn host_waits(&self) -> usize {
        0
    }
}
