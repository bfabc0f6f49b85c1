//! A test forward proxy (HTTP/1.1) beside the test web ([`crate::web`]): absolute-form requests
//! (`GET http://a.test:8080/page`) are passed on, and `CONNECT a.test:443` opens a tunnel, to
//! the port asked for on 127.0.0.1 — every name is the test web's, as the fetcher's resolve
//! entries have it. With credentials ([`TestProxy::with_credentials`]) a request without the
//! right `Proxy-Authorization: Basic` gets 407; [`TestProxy::refuse`] makes it answer every
//! request with a status of the test's choosing. Every request is logged ([`ProxyRequest`]) so
//! that a test can count what went through it.
//!
//! Thread per connection, one request per connection (the answer closes it); a bad request
//! gets a 400 and never a panic.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use base64::Engine;

/// One request the proxy read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRequest {
    /// `GET` (absolute-form) or `CONNECT`.
    pub method: String,
    /// The absolute URL, or `host:port` for a CONNECT.
    pub target: String,
    /// `user:password` of its `Proxy-Authorization: Basic`, decoded.
    pub credentials: Option<String>,
    /// Passed on (or tunnelled), rather than refused.
    pub passed: bool,
}

#[derive(Default)]
struct Shared {
    credentials: Option<String>,
    refuse: Mutex<Option<u16>>,
    log: Mutex<Vec<ProxyRequest>>,
    conns: Mutex<Vec<TcpStream>>,
    stop: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct TestProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl TestProxy {
    /// A proxy that passes on every request.
    pub fn start() -> io::Result<TestProxy> {
        Self::spawn(None)
    }

    /// A proxy that asks for `user:password` (407 without it).
    pub fn with_credentials(user: &str, password: &str) -> io::Result<TestProxy> {
        Self::spawn(Some(format!("{user}:{password}")))
    }

    fn spawn(credentials: Option<String>) -> io::Result<TestProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            credentials,
            ..Shared::default()
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("proxy-accept".into())
                .spawn(move || accept(&listener, &shared))?
        };
        Ok(TestProxy {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:port`: the value of `Fetch.Proxy`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port())
    }

    /// From now on every request is answered with `status` (407 with `Proxy-Authenticate`).
    pub fn refuse(&self, status: u16) {
        *lock(&self.shared.refuse) = Some(status);
    }

    /// Every request so far, in the order they were read.
    pub fn requests(&self) -> Vec<ProxyRequest> {
        lock(&self.shared.log).clone()
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
        for c in lock(&self.shared.conns).drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

fn accept(listener: &TcpListener, shared: &Arc<Shared>) {
    for (n, stream) in listener.incoming().enumerate() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if let Ok(copy) = stream.try_clone() {
            lock(&shared.conns).push(copy);
        }
        let shared = Arc::clone(shared);
        let _ = std::thread::Builder::new()
            .name(format!("proxy-conn-{n}"))
            .spawn(move || {
                let _ = serve(stream, &shared);
            });
    }
}

/// A request head: its line's parts and headers (name lower case).
struct Head {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
}

fn read_head(r: &mut impl BufRead) -> io::Result<Option<Head>> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if r.by_ref().take(16 << 10).read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        lines.push(line.to_string());
    }
    let mut first = lines
        .first()
        .map(|l| l.split_whitespace())
        .into_iter()
        .flatten();
    let (Some(method), Some(target)) = (first.next(), first.next()) else {
        return Ok(None);
    };
    let headers = lines[1..]
        .iter()
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Some(Head {
        method: method.to_string(),
        target: target.to_string(),
        headers,
    }))
}

fn serve(client: TcpStream, shared: &Shared) -> io::Result<()> {
    client.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(client.try_clone()?);
    let mut out = client.try_clone()?;
    let Some(head) = read_head(&mut reader)? else {
        return answer(&mut out, 400, &[]);
    };
    let credentials = head
        .headers
        .iter()
        .find(|(n, _)| n == "proxy-authorization")
        .and_then(|(_, v)| v.strip_prefix("Basic "))
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
        })
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let refusal = match *lock(&shared.refuse) {
        Some(status) => Some(status),
        None if shared.credentials.is_some() && credentials != shared.credentials => Some(407),
        None => None,
    };
    let connect = head.method.eq_ignore_ascii_case("CONNECT");
    // Where to: the port asked for, on 127.0.0.1.
    let port = authority(&head.target, connect).and_then(|a| a.rsplit_once(':')?.1.parse().ok());
    lock(&shared.log).push(ProxyRequest {
        method: head.method.clone(),
        target: head.target.clone(),
        credentials,
        passed: refusal.is_none() && port.is_some(),
    });
    if let Some(status) = refusal {
        let challenge = [("Proxy-Authenticate", "Basic realm=\"test proxy\"")];
        return answer(
            &mut out,
            status,
            if status == 407 { &challenge } else { &[] },
        );
    }
    let Some(port) = port else {
        return answer(&mut out, 400, &[]);
    };
    let Ok(upstream) = TcpStream::connect(("127.0.0.1", port)) else {
        return answer(&mut out, 502, &[]);
    };
    if connect {
        out.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
        return tunnel(reader, out, upstream);
    }
    pass_on(&head, out, upstream)
}

/// `host:port` of an absolute URL (or of a CONNECT's target).
fn authority(target: &str, connect: bool) -> Option<&str> {
    if connect {
        return Some(target);
    }
    let rest = target.strip_prefix("http://")?;
    Some(rest.split('/').next().unwrap_or(rest))
}

/// An absolute-form request in origin form to the web, and its answer back (closing both).
fn pass_on(head: &Head, mut out: TcpStream, mut upstream: TcpStream) -> io::Result<()> {
    let rest = head.target.strip_prefix("http://").unwrap_or(&head.target);
    let path = rest.find('/').map_or("/", |i| &rest[i..]);
    let mut request = format!("{} {path} HTTP/1.1\r\n", head.method);
    for (name, value) in &head.headers {
        if !name.starts_with("proxy-") && name != "connection" {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    request.push_str("Connection: close\r\n\r\n");
    upstream.write_all(request.as_bytes())?;
    // The answer's head with `Connection: close` (this connection ends with it), then the rest.
    let mut from = BufReader::new(upstream);
    let mut answer_head = String::new();
    loop {
        let mut line = String::new();
        if from.read_line(&mut line)? == 0 {
            break;
        }
        if line.trim_end().is_empty() {
            break;
        }
        if !line.to_ascii_lowercase().starts_with("connection:") {
            answer_head.push_str(&line);
        }
    }
    answer_head.push_str("Connection: close\r\n\r\n");
    out.write_all(answer_head.as_bytes())?;
    io::copy(&mut from, &mut out)?;
    out.shutdown(Shutdown::Write)
}

/// Bytes both ways until either side closes.
fn tunnel(
    mut client: BufReader<TcpStream>,
    mut out: TcpStream,
    upstream: TcpStream,
) -> io::Result<()> {
    let mut up_write = upstream.try_clone()?;
    let mut up_read = upstream;
    let back = std::thread::spawn(move || {
        let _ = io::copy(&mut up_read, &mut out);
        let _ = out.shutdown(Shutdown::Both);
    });
    let _ = io::copy(&mut client, &mut up_write);
    let _ = up_write.shutdown(Shutdown::Both);
    let _ = back.join();
    Ok(())
}

fn answer(out: &mut TcpStream, status: u16, headers: &[(&str, &str)]) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} Test Proxy\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Content-Length: 0\r\nConnection: close\r\n\r\n");
    out.write_all(head.as_bytes())?;
    out.shutdown(Shutdown::Write)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::web::WebServer;

    fn through(proxy: &TestProxy, request: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", proxy.port())).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut got = String::new();
        s.read_to_string(&mut got).unwrap();
        got
    }

    #[test]
    fn passes_absolute_requests_on_and_asks_for_credentials() {
        let web = WebServer::start().unwrap();
        let proxy = TestProxy::with_credentials("u", "p").unwrap();
        let url = web.url("a.test", "/page");
        let got = through(
            &proxy,
            &format!("GET {url} HTTP/1.1\r\nHost: a.test\r\n\r\n"),
        );
        assert!(got.starts_with("HTTP/1.1 407"), "{got}");
        assert!(web.log().is_empty());
        // Basic dTpw is u:p.
        let got = through(
            &proxy,
            &format!(
                "GET {url} HTTP/1.1\r\nHost: a.test\r\nProxy-Authorization: Basic dTpw\r\n\r\n"
            ),
        );
        assert!(
            got.starts_with("HTTP/1.1 200") && got.contains("a.test"),
            "{got}"
        );
        assert_eq!(web.requests_to("a.test", "/page").len(), 1);
        let log = proxy.requests();
        assert_eq!(log.len(), 2);
        assert_eq!(
            (log[0].passed, log[0].credentials.as_deref()),
            (false, None)
        );
        assert_eq!(
            (log[1].passed, log[1].credentials.as_deref()),
            (true, Some("u:p"))
        );
        proxy.refuse(403);
        let got = through(&proxy, "CONNECT a.test:443 HTTP/1.1\r\n\r\n");
        assert!(got.starts_with("HTTP/1.1 403"), "{got}");
        assert_eq!(proxy.requests()[2].method, "CONNECT");
        // Not a request at all: a 400.
        let got = through(&TestProxy::start().unwrap(), "\r\n");
        assert!(got.starts_with("HTTP/1.1 400"), "{got}");
    }
}
