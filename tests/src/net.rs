//! Talking to a daemon over loopback as a peer or an operator would: a free port to give it,
//! plain HTTP/1.0 requests, its status pages and the series of its `/metrics`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use base64::Engine;

use crate::wait::poll;

/// A port nothing listens on now (the kernel's choice). Another test's daemon may take it
/// before this test's does; tests where that matters tell their peers apart otherwise (the
/// reader's by a secret of their own).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port on 127.0.0.1: {e}"))
}

/// A connection to 127.0.0.1:`port` once something listens there; fails the test when nothing
/// does within `timeout` (a daemon starting on a loaded machine may take its time).
pub fn connect_within(port: u16, timeout: Duration) -> TcpStream {
    let mut last = Err(std::io::ErrorKind::NotConnected.into());
    poll(timeout, || {
        last = TcpStream::connect(loopback(port));
        last.is_ok()
    });
    last.unwrap_or_else(|e| panic!("nothing listens on 127.0.0.1:{port} after {timeout:?}: {e}"))
}

/// A plain HTTP/1.0 request on `stream`, with Basic `auth` (`user:password`) if given, read to
/// the end: (status, head, body). The status is 0 when the answer has no status line.
pub fn request(
    mut stream: TcpStream,
    method: &str,
    path: &str,
    auth: Option<&str>,
) -> std::io::Result<(u16, String, String)> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: localhost\r\nContent-Length: 0\r\n");
    if let Some(a) = auth {
        req.push_str(&format!(
            "Authorization: Basic {}\r\n",
            base64::engine::general_purpose::STANDARD.encode(a)
        ));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes())?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, head.to_string(), body.to_string()))
}

/// [`request`] to `addr`, failing the test when it cannot be made.
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    auth: Option<&str>,
) -> (u16, String, String) {
    let stream =
        TcpStream::connect(addr).unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"));
    http_on(stream, method, path, auth)
}

/// [`request`] on a connection the test made itself, failing the test when it cannot be made.
pub fn http_on(
    stream: TcpStream,
    method: &str,
    path: &str,
    auth: Option<&str>,
) -> (u16, String, String) {
    request(stream, method, path, auth).unwrap_or_else(|e| panic!("{method} {path} failed: {e}"))
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// The body of `GET path` from a status endpoint on 127.0.0.1:`port` (which must answer).
pub fn get(port: u16, path: &str) -> String {
    http(loopback(port), "GET", path, None).2
}

/// The value of one series of the `/metrics` on 127.0.0.1:`port`: `series` is a full name with
/// its labels (`focuser_reader_sender_lost_items_total{daemon="reader",group="Index"}`), or a
/// name alone for the first series of that name, whatever its labels. None when there is no
/// such series, or nothing listens (yet).
pub fn metric(port: u16, series: &str) -> Option<f64> {
    let labelled = series.contains('{');
    metrics(port)?.lines().find_map(|l| {
        let rest = l.strip_prefix(series)?;
        let value = match rest.strip_prefix(' ') {
            Some(value) => value,
            None if !labelled && rest.starts_with('{') => rest.rsplit_once(' ')?.1,
            None => return None,
        };
        value.trim().parse().ok()
    })
}

/// The value of the first `/metrics` series named `name` whose labels hold `label`
/// (`kind="refused"`); None when there is none, or nothing listens (yet).
pub fn metric_with(port: u16, name: &str, label: &str) -> Option<f64> {
    metrics(port)?.lines().find_map(|l| {
        let labels = l.strip_prefix(name)?.strip_prefix('{')?;
        if !labels.contains(label) {
            return None;
        }
        labels.rsplit_once(' ')?.1.trim().parse().ok()
    })
}

/// The `/metrics` text, or None while nothing listens on the port.
fn metrics(port: u16) -> Option<String> {
    let stream = TcpStream::connect(loopback(port)).ok()?;
    Some(http_on(stream, "GET", "/metrics", None).2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serves `text` as `/metrics` once, on a port of its own.
    fn serve_once(text: &'static str) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let answer = format!("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n{text}");
            s.write_all(answer.as_bytes()).unwrap();
        });
        port
    }

    const METRICS: &str = "# TYPE focuser_x_total counter\n\
        focuser_x_total{daemon=\"d\",kind=\"a\"} 1\n\
        focuser_x_total{daemon=\"d\",kind=\"b\"} 2\n\
        focuser_x_total_more{daemon=\"d\"} 9\n\
        focuser_y 7\n";

    #[test]
    fn metric_finds_a_series_by_its_full_name_or_its_name_alone() {
        let full = "focuser_x_total{daemon=\"d\",kind=\"b\"}";
        assert_eq!(metric(serve_once(METRICS), full), Some(2.0));
        assert_eq!(metric(serve_once(METRICS), "focuser_x_total"), Some(1.0));
        assert_eq!(metric(serve_once(METRICS), "focuser_y"), Some(7.0));
        assert_eq!(metric(serve_once(METRICS), "focuser_x"), None);
        assert_eq!(metric(free_port(), "focuser_y"), None);
    }

    #[test]
    fn metric_with_finds_the_first_series_holding_a_label() {
        let port = serve_once(METRICS);
        assert_eq!(
            metric_with(port, "focuser_x_total", "kind=\"b\""),
            Some(2.0)
        );
        let port = serve_once(METRICS);
        assert_eq!(metric_with(port, "focuser_x_total", "kind=\"c\""), None);
    }

    #[test]
    fn get_returns_the_body() {
        assert_eq!(get(serve_once("a\nb\n"), "/metrics"), "a\nb\n");
    }
}
