//! Peers that trickle a valid HELLO a byte a second cannot lock senders out of a receiver:
//! one address holds at most Recv.MaxPerAddress connections, and every handshake has
//! Recv.HandshakeTimeout for all of it; the refusals are counted by reason and logged once
//! per address and problem.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use focuser_reader::wire::frame::encode_frame;
use focuser_reader::wire::{FrameType, Hello, Mode};
use focuser_tests::{free_port, metric, wait_for};
use socket2::{Domain, Socket, Type};

/// A connection to the receiver on 127.0.0.1:`port` from `src` (any 127/8 address is this
/// machine's).
fn connect_from(src: Ipv4Addr, port: u16) -> TcpStream {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::from((src, 0)).into()).unwrap();
    s.connect(&SocketAddr::from(([127, 0, 0, 1], port)).into())
        .unwrap();
    s.into()
}

fn hello() -> Vec<u8> {
    let h = Hello {
        mode: Mode::Items,
        stream: "slow.Index.0".into(),
        nonce: [7; 32],
    };
    let mut frame = Vec::new();
    encode_frame(FrameType::Hello, &h.encode(), &mut frame);
    frame
}

/// Sends each connection's HELLO one byte a second, until `stop` (a HELLO takes a minute).
fn trickle(mut conns: Vec<TcpStream>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let frame = hello();
    std::thread::spawn(move || {
        for b in frame {
            for c in &mut conns {
                let _ = c.write_all(&[b]);
            }
            let next = Instant::now() + Duration::from_secs(1);
            while Instant::now() < next {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    })
}

#[test]
fn slow_handshakes_cannot_lock_a_good_sender_out() {
    let rig = Rig::new();
    std::fs::write(rig.root().join("hosts.allow"), "127.0.0.*\n::1\n").unwrap();
    let status = free_port();
    let (r_cf, port) = rig.receiver_cf(
        "r",
        &format!(
            "status_listen = 127.0.0.1:{status}\nRecv.MaxConnections = 16\n\
             Recv.MaxPerAddress = 4\nRecv.HandshakeTimeout = 3"
        ),
    );
    let _recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    wait_for("the receiver listening", Duration::from_secs(60), || {
        rig.log("r").contains("listening on")
    });
    // 8 from one address (4 get in), then one from each of 24 others (12 more get in, the
    // receiver is full): 32 slow peers, 16 of them holding a slot.
    let mut conns: Vec<TcpStream> = (0..8)
        .map(|_| connect_from(Ipv4Addr::new(127, 0, 0, 2), port))
        .collect();
    conns.extend((10..34).map(|k| connect_from(Ipv4Addr::new(127, 0, 0, k), port)));
    let stop = Arc::new(AtomicBool::new(false));
    let slow = trickle(conns, Arc::clone(&stop));
    let refused = |reason: &str| {
        metric(
            status,
            &format!("focuser_reader_recv_refused_total{{daemon=\"reader\",reason=\"{reason}\"}}"),
        )
        .unwrap_or(-1.0)
    };
    wait_for(
        "the slow peers admitted or refused",
        Duration::from_secs(30),
        || refused("address_busy") == 4.0 && refused("busy") == 12.0,
    );

    // A good sender, from 127.0.0.1, gets through once the slow handshakes run out of time,
    // long before their HELLOs would be whole.
    rig.write(50, &[]);
    let s_cf = rig.sender_cf(&[("Index.0", &[port])], "");
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let got = rig.root().join("r/received");
    wait_for("the good sender's items", Duration::from_secs(30), || {
        ns(&got) == (1..=50).collect::<Vec<u64>>()
    });
    assert!(sender.stop());
    wait_for(
        "every slow handshake cut off",
        Duration::from_secs(30),
        || refused("handshake_timeout") == 16.0,
    );
    stop.store(true, Ordering::SeqCst);
    slow.join().unwrap();

    // Four refusals of one address, one line; the receiver says what it refused and why.
    let log = rig.log("r");
    let lines = |what: &str| log.lines().filter(|l| l.contains(what)).count();
    assert_eq!(lines("127.0.0.2 address_busy"), 1, "{log}");
    assert!(log.contains("Recv.MaxPerAddress (4) reached"), "{log}");
    assert!(log.contains("Recv.MaxConnections (16) reached"), "{log}");
    assert!(
        log.contains("took longer than Recv.HandshakeTimeout"),
        "{log}"
    );
    assert_eq!(lines("127.0.0.2 handshake_timeout"), 1, "{log}");
}
