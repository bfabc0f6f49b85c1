//! One libcurl transfer: the handler that collects an answer (and aborts it when it is too large
//! or of a type we do not want), the options every transfer gets, and what a finished one means.

use std::sync::Arc;
use std::time::Duration;

use curl::easy::{Easy2, Handler, List, WriteError};

use crate::config::FetchConfig;
use crate::guard::{self, SocketGuard};
use crate::outcome::FailKind;

/// Why the handler stopped a transfer itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Abort {
    TooLarge,
    WrongType(String),
}

/// A `Server` header is kept up to this many characters.
const SERVER_CHARS: usize = 255;

/// Collects one answer. Bodies of non-2xx answers are counted but not kept.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    max_bytes: u64,
    /// `None`: every type is allowed (robots.txt, or an empty `Fetch.AllowedTypes`).
    allowed: Option<Vec<String>>,
    pub status: Option<u16>,
    pub content_type: Option<String>,
    pub content_length: Option<u64>,
    pub location: Option<String>,
    pub retry_after: Option<String>,
    /// The answer's `Server` header (for the caller's record of the host).
    pub server: Option<String>,
    pub body: Vec<u8>,
    pub received: u64,
    pub abort: Option<Abort>,
    /// Decides on every address the handle connects to; kept for the handle's whole life
    /// (libcurl holds a pointer to it).
    pub guard: Arc<SocketGuard>,
}

impl Collector {
    /// A collector for a new handle, whose sockets `guard` decides on.
    pub fn guarded(guard: SocketGuard) -> Self {
        Collector {
            guard: Arc::new(guard),
            ..Collector::default()
        }
    }

    #[cfg(test)]
    pub fn new(max_bytes: u64, allowed: Option<Vec<String>>) -> Self {
        Collector {
            max_bytes,
            allowed,
            ..Collector::default()
        }
    }

    /// Ready for the next transfer, keeping the body's allocation and the guard.
    pub fn reset(&mut self, max_bytes: u64, allowed: Option<Vec<String>>) {
        let mut body = std::mem::take(&mut self.body);
        body.clear();
        let guard = Arc::clone(&self.guard);
        *self = Collector {
            max_bytes,
            allowed,
            body,
            guard,
            ..Collector::default()
        };
    }

    pub fn take_body(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.body)
    }

    fn success(&self) -> bool {
        matches!(self.status, Some(200..=299))
    }

    /// At the end of the headers of a 2xx answer: is it one we want?
    fn check_headers(&mut self) -> bool {
        if !self.success() {
            return true;
        }
        if let Some(allowed) = &self.allowed {
            let ct = self.content_type.clone().unwrap_or_default();
            if !type_allowed(allowed, &ct) {
                self.abort = Some(Abort::WrongType(ct));
                return false;
            }
        }
        if self.content_length.is_some_and(|n| n > self.max_bytes) {
            self.abort = Some(Abort::TooLarge);
            return false;
        }
        true
    }
}

impl Handler for Collector {
    fn header(&mut self, data: &[u8]) -> bool {
        let line = String::from_utf8_lossy(data);
        let line = line.trim_end_matches(['\r', '\n']);
        if line.starts_with("HTTP/") {
            // A new answer (after a 100 Continue, say): forget the last one's headers.
            let received = self.received;
            let allowed = self.allowed.take();
            self.reset(self.max_bytes, allowed);
            self.received = received;
            self.status = line.split_whitespace().nth(1).and_then(|s| s.parse().ok());
            return true;
        }
        if line.is_empty() {
            return self.check_headers();
        }
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-type" => self.content_type = Some(value.to_string()),
                "content-length" => self.content_length = value.parse().ok(),
                "location" => self.location = Some(value.to_string()),
                "retry-after" => self.retry_after = Some(value.to_string()),
                "server" => self.server = Some(value.chars().take(SERVER_CHARS).collect()),
                _ => {}
            }
        }
        true
    }

    fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        self.received += data.len() as u64;
        if self.received > self.max_bytes {
            // Returning fewer bytes than given makes libcurl abort the transfer.
            if self.success() {
                self.abort = Some(Abort::TooLarge);
            }
            return Ok(0);
        }
        if self.success() {
            self.body.extend_from_slice(data);
        }
        Ok(data.len())
    }
}

/// `text/html; charset=utf-8` against `text/html` or `text/*`, ignoring case.
pub(crate) fn type_allowed(allowed: &[String], content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    allowed.iter().any(|a| {
        let a = a.trim().to_ascii_lowercase();
        match a.strip_suffix("/*") {
            Some(major) => essence.split('/').next() == Some(major) && essence.contains('/'),
            None => a == essence,
        }
    })
}

/// Sets the options of one transfer on a (reset) handle.
pub(crate) fn prepare(
    easy: &mut Easy2<Collector>,
    cfg: &FetchConfig,
    url: &str,
    resolve: Option<String>,
) -> Result<(), curl::Error> {
    easy.url(url)?;
    easy.useragent(&cfg.user_agent)?;
    easy.connect_timeout(cfg.connect_timeout)?;
    easy.timeout(cfg.timeout)?;
    // Redirects are followed by the fetcher, so that every hop goes through robots.txt and the
    // politeness of its own host.
    easy.follow_location(false)?;
    easy.accept_encoding("")?;
    easy.tcp_nodelay(true)?;
    easy.signal(false)?;
    let socket_guard = Arc::clone(&easy.get_ref().guard);
    guard::install(easy, &socket_guard)?;
    if let Some(entry) = resolve {
        let mut list = List::new();
        list.append(&entry)?;
        easy.resolve(list)?;
    }
    Ok(())
}

/// libcurl's code for an answer that is not HTTP (the crate has no predicate for it).
const CURLE_WEIRD_SERVER_REPLY: u32 = 8;

/// The kind of a libcurl error, and whether another try could help.
pub(crate) fn classify(err: &curl::Error) -> FailKind {
    if err.is_couldnt_resolve_host() {
        FailKind::Dns
    } else if err.is_couldnt_connect() {
        FailKind::Connect
    } else if err.is_operation_timedout() {
        FailKind::Timeout
    } else if err.is_ssl_connect_error()
        || err.is_peer_failed_verification()
        || err.is_ssl_certproblem()
        || err.is_ssl_cipher()
        || err.is_ssl_cacert()
    {
        FailKind::Tls
    } else if err.code() == CURLE_WEIRD_SERVER_REPLY
        || err.is_bad_content_encoding()
        || err.is_unsupported_protocol()
        || err
            .extra_description()
            .is_some_and(|d| d.to_ascii_lowercase().contains("chunk"))
    {
        FailKind::Protocol
    } else if err.is_url_malformed() {
        FailKind::Url
    } else {
        FailKind::Network
    }
}

/// Parses a Retry-After value: delta-seconds or an HTTP date (a past date is zero).
pub(crate) fn retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn allowed_types_match_essence_and_wildcards() {
        let allowed = vec!["text/html".to_string(), "application/*".to_string()];
        assert!(type_allowed(&allowed, "text/html"));
        assert!(type_allowed(&allowed, "Text/HTML; charset=UTF-8"));
        assert!(type_allowed(&allowed, "application/xml"));
        assert!(!type_allowed(&allowed, "text/plain"));
        assert!(!type_allowed(&allowed, ""));
        assert!(!type_allowed(&allowed, "application"));
    }

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        let now = SystemTime::now();
        assert_eq!(retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        let d = retry_after(&later, now).unwrap();
        assert!(
            d <= Duration::from_secs(30) && d >= Duration::from_secs(28),
            "{d:?}"
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(retry_after(&past, now), Some(Duration::ZERO));
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("-3", now), None);
    }

    #[test]
    fn handler_keeps_success_bodies_within_the_limit() {
        let mut c = Collector::new(10, Some(vec!["text/html".into()]));
        assert!(c.header(b"HTTP/1.1 200 OK\r\n"));
        assert!(c.header(b"Content-Type: text/html\r\n"));
        assert!(c.header(b"\r\n"));
        assert_eq!(c.write(b"12345").unwrap(), 5);
        assert_eq!(c.write(b"678901").unwrap(), 0);
        assert_eq!(c.abort, Some(Abort::TooLarge));

        let mut c = Collector::new(10, Some(vec!["text/html".into()]));
        assert!(c.header(b"HTTP/1.1 200 OK\r\n"));
        assert!(c.header(b"content-type: image/png\r\n"));
        assert!(!c.header(b"\r\n"));
        assert_eq!(c.abort, Some(Abort::WrongType("image/png".into())));

        let mut c = Collector::new(10, None);
        assert!(c.header(b"HTTP/1.1 200 OK\r\n"));
        assert!(c.header(b"Content-Length: 11\r\n"));
        assert!(!c.header(b"\r\n"));
        assert_eq!(c.abort, Some(Abort::TooLarge));

        // The body of an error page is counted, not kept, and never an abort reason.
        let mut c = Collector::new(10, None);
        assert!(c.header(b"HTTP/1.1 404 Not Found\r\n"));
        assert!(c.header(b"Content-Length: 11\r\n"));
        assert!(c.header(b"\r\n"));
        assert_eq!(c.write(b"1234").unwrap(), 4);
        assert!(c.body.is_empty() && c.abort.is_none());
        assert_eq!(c.status, Some(404));
    }
}
