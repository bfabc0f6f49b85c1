//! Just enough HTTP/1.x for the status endpoint, with limits a hostile or broken peer cannot
//! talk past: the request head is read within [`HEAD_DEADLINE`] and at most
//! [`MAX_HEAD_BYTES`] (431 beyond), a body is at most [`MAX_BODY_BYTES`] (413 beyond) and is
//! read and dropped (no endpoint takes one), and every response closes the connection. Memory
//! per connection is therefore bounded whatever the peer sends.

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// The longest request head (request line and headers) taken.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most header lines taken.
pub const MAX_HEADERS: usize = 100;
/// The longest request body taken (and dropped).
pub const MAX_BODY_BYTES: u64 = 64 * 1024;
/// The time a peer has to send its whole request (head and body).
pub const HEAD_DEADLINE: Duration = Duration::from_secs(10);
/// The time a peer has to take the response.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// A request's head.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The request target as sent (`/metrics?x=1`).
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub peer: IpAddr,
}

impl Request {
    /// The target without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answers.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: String) -> Response {
        Response {
            status,
            content_type,
            body,
            headers: Vec::new(),
        }
    }

    /// A one-line plain-text answer.
    pub fn text(status: u16, body: &str) -> Response {
        Response::new(status, "text/plain; charset=utf-8", format!("{body}\n"))
    }

    pub fn with(mut self, name: &'static str, value: String) -> Response {
        self.headers.push((name, value));
        self
    }
}

/// Why a request was not taken; each but `Gone` is answered with its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The peer went away or the connection failed: nothing to answer.
    Gone,
    Timeout,
    HeadTooLarge,
    BodyTooLarge,
    LengthRequired,
    Malformed,
    Version,
}

impl Refusal {
    pub fn response(self) -> Option<Response> {
        let (status, text) = match self {
            Refusal::Gone => return None,
            Refusal::Timeout => (408, "the request took too long"),
            Refusal::HeadTooLarge => (431, "request header too large (at most 16 KiB)"),
            Refusal::BodyTooLarge => (413, "request body too large (at most 64 KiB)"),
            Refusal::LengthRequired => (411, "send a Content-Length (no chunked bodies)"),
            Refusal::Malformed => (400, "bad request"),
            Refusal::Version => (505, "HTTP/1.0 and HTTP/1.1 only"),
        };
        Some(Response::text(status, text))
    }

    /// For the log.
    pub fn describe(self) -> &'static str {
        match self {
            Refusal::Gone => "connection lost",
            Refusal::Timeout => "request not complete within 10 s",
            Refusal::HeadTooLarge => "request header over 16 KiB",
            Refusal::BodyTooLarge => "request body over 64 KiB",
            Refusal::LengthRequired => "chunked request body",
            Refusal::Malformed => "malformed request",
            Refusal::Version => "unsupported HTTP version",
        }
    }
}

/// Reads into `buf` until `deadline`; `Ok(0)` at the end of the stream.
fn read_some(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<usize, Refusal> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Refusal::Timeout);
    }
    stream
        .set_read_timeout(Some(left))
        .map_err(|_| Refusal::Gone)?;
    match stream.read(buf) {
        Ok(n) => Ok(n),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Err(Refusal::Timeout)
        }
        Err(_) => Err(Refusal::Gone),
    }
}

/// Where the head ends (after its blank line), if it has.
fn head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Reads one request: its head within the limits, and its body (dropped).
pub fn read_request(stream: &mut TcpStream, peer: IpAddr) -> Result<Request, Refusal> {
    let deadline = Instant::now() + HEAD_DEADLINE;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(end) = head_end(&buf) {
            break end;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(Refusal::HeadTooLarge);
        }
        match read_some(stream, &mut chunk, deadline)? {
            0 => return Err(Refusal::Gone),
            n => buf.extend_from_slice(&chunk[..n]),
        }
    };
    if end > MAX_HEAD_BYTES {
        return Err(Refusal::HeadTooLarge);
    }
    let request = parse_head(&buf[..end], peer)?;
    let length = match (
        request.header("Content-Length"),
        request.header("Transfer-Encoding"),
    ) {
        (_, Some(_)) => return Err(Refusal::LengthRequired),
        (Some(n), None) => n.trim().parse::<u64>().map_err(|_| Refusal::Malformed)?,
        (None, None) => 0,
    };
    if length > MAX_BODY_BYTES {
        return Err(Refusal::BodyTooLarge);
    }
    let mut left = length.saturating_sub((buf.len() - end) as u64);
    while left > 0 {
        match read_some(stream, &mut chunk, deadline)? {
            0 => return Err(Refusal::Gone),
            n => left = left.saturating_sub(n as u64),
        }
    }
    Ok(request)
}

fn parse_head(head: &[u8], peer: IpAddr) -> Result<Request, Refusal> {
    let text = std::str::from_utf8(head).map_err(|_| Refusal::Malformed)?;
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
    let first = lines.next().ok_or(Refusal::Malformed)?;
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refusal::Malformed);
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(Refusal::Malformed);
    }
    if !matches!(version, "HTTP/1.0" | "HTTP/1.1") {
        return Err(Refusal::Version);
    }
    let mut headers = Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        if headers.len() == MAX_HEADERS {
            return Err(Refusal::HeadTooLarge);
        }
        let (name, value) = line.split_once(':').ok_or(Refusal::Malformed)?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    Ok(Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        peer,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Writes `response` (without its body for HEAD) and closes the connection. What the peer
/// may still be sending is read and dropped for a moment, so that closing does not reset the
/// connection before the peer has read the answer (a 431 in the middle of a huge header).
pub fn respond(stream: &mut TcpStream, response: &Response, head_only: bool) {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len()
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let written = stream.write_all(head.as_bytes()).and_then(|()| {
        if head_only {
            Ok(())
        } else {
            stream.write_all(response.body.as_bytes())
        }
    });
    if let Err(e) = written {
        log::debug!("status: could not answer {}: {e}", response.status);
        return;
    }
    let _ = stream.shutdown(Shutdown::Write);
    let until = Instant::now() + Duration::from_millis(500);
    let mut chunk = [0u8; 4096];
    let mut drained = 0usize;
    while drained < 1 << 20 {
        match read_some(stream, &mut chunk, until) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_parse_and_bad_ones_are_refused() {
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let r = parse_head(
            b"POST /reload?x=1 HTTP/1.1\r\nHost: h\r\nauthorization:  Basic eDp5\r\n\r\n",
            peer,
        )
        .unwrap();
        assert_eq!((r.method.as_str(), r.path()), ("POST", "/reload"));
        assert_eq!(r.header("Authorization"), Some("Basic eDp5"));
        for bad in [
            &b"GET /\r\n\r\n"[..],
            b"get / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nno colon\r\n\r\n",
            b"GET / HTTP/1.1 extra\r\n\r\n",
            b"GET / HTTP/1.1\r\n\xff: x\r\n\r\n",
        ] {
            assert_eq!(
                parse_head(bad, peer).unwrap_err(),
                Refusal::Malformed,
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_head(b"GET / HTTP/2.0\r\n\r\n", peer).unwrap_err(),
            Refusal::Version
        );
        assert_eq!(head_end(b"GET / HTTP/1.0\n\nrest"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.0\r\nA: b\r\n"), None);
    }
}
