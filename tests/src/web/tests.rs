#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::{Behaviour, WebServer};

/// Sends raw bytes and reads until the server closes or `timeout` passes.
fn exchange(server: &WebServer, request: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn serves_by_host_with_keep_alive_and_logs_requests() {
    let server = WebServer::start().unwrap();
    server.set("a.test", "/x", Behaviour::html("<p>a</p>"));
    server.set("*", "/x", Behaviour::html("<p>any</p>"));
    let mut s = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for (host, want) in [("a.test", "<p>a</p>"), ("B.test:80", "<p>any</p>")] {
        write!(s, "GET /x HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
        let mut len = 0;
        loop {
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                len = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).unwrap();
        assert_eq!(String::from_utf8(body).unwrap(), want);
    }
    let log = server.log();
    assert_eq!(log.len(), 2);
    assert_eq!(
        log[0].connection, log[1].connection,
        "one keep-alive connection"
    );
    assert_eq!(log[1].host, "b.test");
    assert!(log.iter().all(|l| l.concurrent == 1 && !l.aborted));
}

#[test]
fn bad_requests_get_400_and_the_server_goes_on() {
    let server = WebServer::start().unwrap();
    for bad in [
        &b"\x00\x01\x02 garbage\r\n\r\n"[..],
        b"GET /x HTTP/1.1\r\n\r\n",
        b"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: lots\r\n\r\n",
        b"GET /x HTTP/1.1\r\nHost a\r\n\r\n",
        b"GET nopath HTTP/1.1\r\nHost: a\r\n\r\n",
    ] {
        let answer = exchange(&server, bad);
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer:?}");
    }
    let huge = format!(
        "GET /x HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
        "y".repeat(70_000)
    );
    assert!(exchange(&server, huge.as_bytes()).starts_with("HTTP/1.1 431"));
    let ok = exchange(&server, b"GET /x HTTP/1.0\r\nHost: a\r\n\r\n");
    assert!(
        ok.starts_with("HTTP/1.1 200") && ok.ends_with("</html>\n"),
        "{ok}"
    );
}

#[test]
fn sequences_robots_and_generated_pages() {
    let server = WebServer::start().unwrap();
    server.set(
        "a.test",
        "/s",
        Behaviour::sequence(vec![Behaviour::status(503), Behaviour::html("ok")]),
    );
    let first = exchange(
        &server,
        b"GET /s HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    );
    let second = exchange(
        &server,
        b"GET /s HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    );
    let third = exchange(
        &server,
        b"GET /s HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    );
    assert!(first.starts_with("HTTP/1.1 503"));
    assert!(second.starts_with("HTTP/1.1 200") && third.starts_with("HTTP/1.1 200"));
    let robots = exchange(
        &server,
        b"GET /robots.txt HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    );
    assert!(robots.starts_with("HTTP/1.1 404"));
    assert_eq!(super::page_body("h", "/p", 5000).len(), 5000);
    assert_eq!(
        super::page_body("h", "/p", 5000),
        super::page_body("h", "/p", 5000)
    );
}
