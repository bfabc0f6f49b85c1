//! A receiver that is down is retried every fraction of a second, and every retry fails the
//! same way: the sender's log says so once per kind of problem (an episode, with a summary
//! every minute while it lasts) and once when shipping works again, not at every retry. A
//! spool file whose name is not UTF-8 is left alone and said so once, not at every look.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use common::*;
use focuser_tests::{free_port, metric, wait_for};

#[test]
fn a_receiver_outage_is_logged_once_per_problem_and_once_when_it_ends() {
    let rig = Rig::new();
    rig.write(100, &[]);
    let spool = rig.root().join("spool");
    std::fs::create_dir_all(&spool).unwrap();
    for name in ["a.q", "b.q", "c.q"] {
        std::fs::write(spool.join(name), name).unwrap();
    }
    let odd = spool.join(std::ffi::OsStr::from_bytes(b"bad\xff.q"));
    std::fs::write(&odd, "odd").unwrap();
    // The receiver's config, with its port; it is not started yet.
    let (r_cf, port) = rig.receiver_cf("r", "");
    let status = free_port();
    let s_cf = rig.sender_cf(
        &[("Index.0", &[port])],
        &format!(
            "status_listen = 127.0.0.1:{status}\nSendFile.0.Address = 127.0.0.1:{port}\n\
             SendFile.0.Dir = {}\nSendFile.0.Pattern = *.q\nSendFile.0.Inbox = master1-node1",
            spool.display()
        ),
    );
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let receiver = format!("receiver=\"127.0.0.1:{port}\"");
    let failures = |name: &str, labels: &str| {
        metric(
            status,
            &format!("focuser_reader_{name}{{daemon=\"reader\",{labels}}}"),
        )
        .unwrap_or(0.0)
    };
    wait_for("many failed attempts", Duration::from_secs(60), || {
        failures(
            "sender_failures_total",
            &format!("group=\"Index.0\",{receiver}"),
        ) >= 8.0
            && failures(
                "sendfile_failures_total",
                &format!("inbox=\"master1-node1\",{receiver}"),
            ) >= 8.0
    });
    let log = rig.log("sender");
    let lines = |log: &str, what: &str| log.lines().filter(|l| l.contains(what)).count();
    let item_sender = format!("sender Index.0 127.0.0.1:{port}");
    let file_sender = format!("sendfile 0 to 127.0.0.1:{port}");
    assert_eq!(lines(&log, &item_sender), 1, "{log}");
    assert_eq!(lines(&log, &file_sender), 1, "{log}");
    assert!(log.contains("Connection refused"), "{log}");
    assert_eq!(lines(&log, "not a UTF-8 file name"), 1, "{log}");

    // The receiver comes up: everything arrives, and each sender says it ships again.
    let _recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    let inbox = rig.root().join("r/inbox/master1-node1");
    let got = rig.root().join("r/received");
    wait_for("everything delivered", Duration::from_secs(60), || {
        let mut files: Vec<String> = std::fs::read_dir(&inbox)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        ns(&got) == (1..=100).collect::<Vec<u64>>() && files == ["a.q", "b.q", "c.q"]
    });
    wait_for(
        "the end of the outage logged",
        Duration::from_secs(10),
        || {
            let log = rig.log("sender");
            lines(&log, "shipping again after") == 2
        },
    );
    let log = rig.log("sender");
    assert_eq!(lines(&log, "not a UTF-8 file name"), 1, "{log}");
    assert!(odd.exists(), "left alone");
    assert!(sender.stop());
}

#[test]
fn a_receiver_closing_an_idle_sender_is_no_failure() {
    let rig = Rig::new();
    rig.write(20, &[]);
    let (r_cf, port) = rig.receiver_cf("r", "Recv.IdleTimeout = 1");
    let _recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    wait_for("the receiver listening", Duration::from_secs(60), || {
        rig.log("r").contains("listening on")
    });
    let status = free_port();
    let s_cf = rig.sender_cf(
        &[("Index.0", &[port])],
        &format!("status_listen = 127.0.0.1:{status}"),
    );
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let got = rig.root().join("r/received");
    wait_for("everything delivered", Duration::from_secs(60), || {
        ns(&got) == (1..=20).collect::<Vec<u64>>()
    });
    // The receiver closes the idle sender every second; the sender connects again.
    wait_for("idle closes", Duration::from_secs(60), || {
        rig.log("r").matches("(Recv.IdleTimeout): closed").count() >= 3
    });
    let labels = format!("daemon=\"reader\",group=\"Index.0\",receiver=\"127.0.0.1:{port}\"");
    let failures = metric(
        status,
        &format!("focuser_reader_sender_failures_total{{{labels}}}"),
    );
    assert_eq!(failures, Some(0.0));
    assert!(sender.stop());
    for (who, log) in [("sender", rig.log("sender")), ("r", rig.log("r"))] {
        let noisy: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
            .collect();
        assert!(noisy.is_empty(), "{who}: {noisy:#?}");
    }
}
