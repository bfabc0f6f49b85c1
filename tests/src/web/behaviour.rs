//! What the test server answers: a [`Behaviour`] per host and path, set by the test.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

/// One answer (or misbehaviour) of the test server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// A generated HTML page of `size` bytes, the same for the same host and path.
    Page { size: usize },
    /// A fixed answer: any status, type, body and extra headers (sitemaps, feeds, error pages).
    Fixed {
        status: u16,
        content_type: String,
        body: Vec<u8>,
        headers: Vec<(String, String)>,
    },
    /// Waits before sending anything, then behaves as the inner one.
    Delay(Duration, Box<Behaviour>),
    /// A page of `size` bytes whose body is sent in `chunks` pieces `interval` apart.
    SlowBody {
        size: usize,
        chunks: usize,
        interval: Duration,
    },
    /// A `text/html` body of `size` bytes streamed as fast as the client takes it (with its
    /// Content-Length, or none so that only the byte count tells).
    Huge { size: u64, content_length: bool },
    /// These bytes as the whole answer, then the connection is closed (garbage status lines,
    /// bodies shorter than their Content-Length, bad chunked encoding).
    Raw(Vec<u8>),
    /// The connection is closed without an answer.
    Close,
    /// The n-th request to this host and path gets the n-th behaviour; the last one repeats.
    Sequence(Vec<Behaviour>),
}

impl Behaviour {
    pub fn page(size: usize) -> Self {
        Behaviour::Page { size }
    }

    pub fn fixed(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Behaviour::Fixed {
            status,
            content_type: content_type.to_string(),
            body: body.into(),
            headers: Vec::new(),
        }
    }

    pub fn html(body: &str) -> Self {
        Self::fixed(200, "text/html; charset=utf-8", body)
    }

    pub fn text(body: &str) -> Self {
        Self::fixed(200, "text/plain", body)
    }

    /// A status with a short HTML body.
    pub fn status(status: u16) -> Self {
        Self::fixed(status, "text/html", format!("<html>status {status}</html>"))
    }

    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Behaviour::Fixed {
                status,
                content_type,
                body,
                mut headers,
            } => {
                headers.push((name.to_string(), value.to_string()));
                Behaviour::Fixed {
                    status,
                    content_type,
                    body,
                    headers,
                }
            }
            other => other,
        }
    }

    pub fn redirect(status: u16, location: &str) -> Self {
        Self::status(status).with_header("Location", location)
    }

    pub fn too_many_requests(retry_after: &str) -> Self {
        Self::status(429).with_header("Retry-After", retry_after)
    }

    pub fn delay(wait: Duration, then: Behaviour) -> Self {
        Behaviour::Delay(wait, Box::new(then))
    }

    pub fn huge(size: u64) -> Self {
        Behaviour::Huge {
            size,
            content_length: true,
        }
    }

    pub fn sequence(steps: Vec<Behaviour>) -> Self {
        Behaviour::Sequence(steps)
    }

    /// A status line that is not HTTP.
    pub fn garbage() -> Self {
        Behaviour::Raw(b"HELLO THERE \x01\x02\r\nnothing: useful\r\n\r\n".to_vec())
    }

    /// A body that stops short of its Content-Length.
    pub fn truncated() -> Self {
        Behaviour::Raw(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n<html>short"
                .to_vec(),
        )
    }

    /// A chunked body whose chunk size is not hexadecimal.
    pub fn bad_chunked() -> Self {
        Behaviour::Raw(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nworld\r\n0\r\n\r\n"
                .to_vec(),
        )
    }
}

/// The behaviours set by the test, looked up by exact host and path, then the host's `*`, then
/// `*` for any host with that path, then `*` and `*`; robots.txt without a setting is 404 and any other path a page.
#[derive(Debug, Default)]
pub(crate) struct Table {
    rules: HashMap<(String, String), Behaviour>,
    hits: HashMap<(String, String), usize>,
    pub default_page: usize,
}

impl Table {
    pub fn set(&mut self, host: &str, path: &str, b: Behaviour) {
        let key = (host.to_ascii_lowercase(), path.to_string());
        self.hits.remove(&key);
        self.rules.insert(key, b);
    }

    /// The behaviour for this request, counting it for sequences.
    pub fn answer(&mut self, host: &str, path: &str) -> Behaviour {
        let keys = [
            (host.to_string(), path.to_string()),
            (host.to_string(), "*".to_string()),
            ("*".to_string(), path.to_string()),
            ("*".to_string(), "*".to_string()),
        ];
        for key in keys {
            if let Some(b) = self.rules.get(&key) {
                let n = self.hits.entry(key).or_insert(0);
                let b = match b {
                    Behaviour::Sequence(steps) if !steps.is_empty() => {
                        steps[(*n).min(steps.len() - 1)].clone()
                    }
                    other => other.clone(),
                };
                *n += 1;
                return b;
            }
        }
        if path == "/robots.txt" {
            Behaviour::status(404)
        } else {
            Behaviour::page(self.default_page)
        }
    }
}

/// A deterministic HTML page of exactly `size` bytes (at least its frame).
pub fn page_body(host: &str, path: &str, size: usize) -> Vec<u8> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (host, path).hash(&mut h);
    let mut x = h.finish() | 1;
    let head = format!("<!DOCTYPE html><html><head><title>{host}{path}</title></head><body><p>");
    let tail = "</p></body></html>\n";
    let frame = head.len();
    let mut out = head.into_bytes();
    const WORDS: [&str; 8] = [
        "alpha ", "beta ", "gamma ", "delta ", "focus ", "crawl ", "page ", "text ",
    ];
    while out.len() + tail.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(WORDS[(x % 8) as usize].as_bytes());
    }
    out.truncate(size.saturating_sub(tail.len()).max(frame));
    out.extend_from_slice(tail.as_bytes());
    out
}
