//! The status endpoint under abuse from a peer allowdb lets in: a flood of wrong passwords,
//! a huge request header, a huge or chunked body. GETs keep being answered at once, password
//! checks are rationed, and the daemon's memory does not follow what the peer sends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Testd;
use focuser_tests::{free_port, http, http_on, wait_exit};
use nix::sys::signal::Signal;

const SECS: fn(u64) -> Duration = Duration::from_secs;

fn endpoint() -> (Testd, SocketAddr) {
    let port = free_port();
    let t = Testd::new(&format!(
        "status_listen = 127.0.0.1:{port}\nallowdb = conf/hosts.allow\npwfile = conf/focuser.passwd\n"
    ));
    std::fs::create_dir_all(t.root().join("conf")).unwrap();
    std::fs::write(t.root().join("conf/hosts.allow"), "127.0.0.1\n127.0.0.2\n").unwrap();
    let mut child = t
        .command()
        .args(["passwd", "ops"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"s3cret\n").unwrap();
    assert!(child.wait().unwrap().success());
    (t, format!("127.0.0.1:{port}").parse().unwrap())
}

/// A connection from 127.0.0.2 (another address allowdb lets in).
fn from_other(addr: SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(&"127.0.0.2:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    socket.connect(&addr.into()).unwrap();
    TcpStream::from(socket)
}

#[test]
fn wrong_passwords_are_rationed_and_never_hold_up_gets() {
    let (t, addr) = endpoint();
    let mut child = t.spawn();

    // 200 wrong passwords from 8 clients at once, while GETs go on.
    let flooding = Arc::new(AtomicBool::new(true));
    let posters: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                (0..25)
                    .map(|_| http(addr, "POST", "/reload", Some("ops:wrong")).0)
                    .collect::<Vec<u16>>()
            })
        })
        .collect();
    let getter = {
        let flooding = Arc::clone(&flooding);
        std::thread::spawn(move || {
            let mut slowest = Duration::ZERO;
            let mut gets = 0;
            while flooding.load(Ordering::SeqCst) {
                let asked = Instant::now();
                assert_eq!(http(addr, "GET", "/status.json", None).0, 200);
                slowest = slowest.max(asked.elapsed());
                gets += 1;
            }
            (gets, slowest)
        })
    };
    let statuses: Vec<u16> = posters
        .into_iter()
        .flat_map(|p| p.join().unwrap())
        .collect();
    flooding.store(false, Ordering::SeqCst);
    let (gets, slowest) = getter.join().unwrap();

    let checked = statuses.iter().filter(|s| **s == 401).count();
    let paused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(checked + paused, 200, "{statuses:?}");
    // Five wrong passwords, then the address's checks pause: no more hashing.
    assert!(
        (1..=5).contains(&checked),
        "{checked} checked: {statuses:?}"
    );
    assert!(gets >= 1);
    // Each GET is answered at once (generous for a loaded machine; serial checks took 2.5 s).
    assert!(slowest < SECS(2), "a GET waited {slowest:?}");

    // The flood's concurrent requests were mostly answered 429 while one of the address's
    // checks was under way, which is not a failure; wrong passwords one after the other reach
    // the pause within five more.
    let sequential = (0..=5)
        .map(|_| http(addr, "POST", "/reload", Some("ops:wrong")).0)
        .position(|s| s == 429);
    assert!(sequential.is_some(), "the address's checks never paused");
    // The paused address is refused even with the right password; another one is not.
    let (status, head, _) = http(addr, "POST", "/rotate", Some("ops:s3cret"));
    assert_eq!(status, 429);
    assert!(head.contains("Retry-After: "), "{head}");
    let (status, _, body) = http_on(from_other(addr), "POST", "/rotate", Some("ops:s3cret"));
    assert_eq!((status, body.trim()), (200, "rotate requested"));
    t.wait_log("rotate hook: rotation 1", SECS(10));

    // The flood is a line or two in the log, not 200.
    let log = t.log_text();
    let lines = log
        .lines()
        .filter(|l| l.contains("status: refused (127.0.0.1)"))
        .count();
    assert!((1..=2).contains(&lines), "{lines} lines:\n{log}");
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Sends `head` and reads the answer's status line.
fn status_of(addr: SocketAddr, head: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(SECS(20))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer.lines().next().unwrap_or("").to_string()
}

#[test]
fn a_huge_header_or_body_is_refused_and_costs_no_memory() {
    let (t, addr) = endpoint();
    let mut child = t.spawn();
    assert_eq!(http(addr, "GET", "/", None).0, 200);
    let before = rss_kib(child.id());

    // A header that never ends: 64 MiB offered, refused long before.
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(SECS(20))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let mut sent = 0usize;
        let _ = writer.write_all(b"GET / HTTP/1.1\r\nX-Big: ");
        let chunk = vec![b'a'; 64 << 10];
        while sent < 64 << 20 {
            if writer.write_all(&chunk).is_err() {
                break;
            }
            sent += chunk.len();
        }
        sent
    });
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let sent = sender.join().unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large"),
        "{answer}"
    );
    assert!(sent < 64 << 20, "the daemon read all {sent} bytes");
    let after = rss_kib(child.id());
    assert!(
        after < before + (16 << 10),
        "RSS grew from {before} KiB to {after} KiB"
    );

    assert_eq!(
        status_of(
            addr,
            "POST /reload HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n"
        ),
        "HTTP/1.1 413 Content Too Large"
    );
    assert_eq!(
        status_of(
            addr,
            "POST /reload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        ),
        "HTTP/1.1 411 Length Required"
    );
    let many: String = (0..200).map(|i| format!("X-{i}: y\r\n")).collect();
    assert_eq!(
        status_of(addr, &format!("GET / HTTP/1.1\r\n{many}\r\n")),
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
    // And the endpoint answers as before.
    assert_eq!(http(addr, "GET", "/metrics", None).0, 200);
    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child, SECS(10)).success());
}
