//! `reader resend`: a receiver whose store was wiped gets the sender's live set again, while
//! normal shipping goes on, throttled, through a kill -9; bad requests are refused and counted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::*;
use focuser_formats::segment::{Item, Origin, Status, SyncPolicy, Writer, WriterOptions};
use focuser_tests::{free_port, get, wait_for};

/// Appends `(doc, status, version)` items to the store.
fn write_items(store: &Path, items: &[(u32, Status, u32)]) {
    let opts = WriterOptions {
        max_age_s: 0,
        max_items: 100,
        max_bytes: 1 << 30,
        sync: SyncPolicy {
            every_items: 50,
            every_ms: 20,
        },
    };
    let (mut w, _) = Writer::open(store, opts).unwrap();
    for &(doc, status, v) in items {
        w.append(&Item {
            status,
            doc_id: format!("doc-{doc}").into_bytes(),
            url: format!("http://site.example/{doc}").into_bytes(),
            content: format!("doc {doc} version {v}").into_bytes(),
            time_ms: 1,
            origin: Origin::default(),
        })
        .unwrap();
        w.rotate_if_due().unwrap();
    }
    w.close().unwrap();
}

/// docs 0..n at version 1; every third at version 2; every fifth deleted.
fn history(n: u32) -> Vec<(u32, Status, u32)> {
    let mut out: Vec<_> = (0..n).map(|d| (d, Status::Update, 1)).collect();
    out.extend((0..n).step_by(3).map(|d| (d, Status::Update, 2)));
    out.extend((0..n).step_by(5).map(|d| (d, Status::Delete, 0)));
    out
}

/// Per live document (its last item an UPDATE) its content, as a store holds them.
fn live(store: &Path) -> BTreeMap<String, String> {
    let mut last = BTreeMap::new();
    for s in items(store) {
        last.insert(
            String::from_utf8_lossy(&s.item.doc_id).into_owned(),
            (
                s.item.status,
                String::from_utf8_lossy(&s.item.content).into_owned(),
            ),
        );
    }
    last.into_iter()
        .filter(|(_, (st, _))| *st == Status::Update)
        .map(|(d, (_, c))| (d, c))
        .collect()
}

/// No item of any stream stored twice at the receiver.
fn assert_no_duplicates(store: &Path) {
    let mut seen = HashSet::new();
    for s in items(store) {
        let o = s.item.origin;
        assert!(
            seen.insert((o.stream, o.file_id, o.item_idx)),
            "item {}:{} of stream {} stored twice",
            o.file_id,
            o.item_idx,
            o.stream
        );
    }
}

fn reader(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_reader"))
        .args(args)
        .output()
        .unwrap()
}

struct Setup {
    rig: Rig,
    r_cf: PathBuf,
    s_cf: PathBuf,
    address: String,
    s_port: u16,
    received: PathBuf,
    state: PathBuf,
}

fn setup(rate: u32, docs: u32) -> Setup {
    let rig = Rig::new();
    write_items(&rig.store(), &history(docs));
    let (r_cf, r) = rig.receiver_cf("r", "");
    let s_port = free_port();
    let s_cf = rig.sender_cf(
        &[("Index.0", &[r])],
        &format!("status_listen = 127.0.0.1:{s_port}\nSend.ResendRate = {rate}"),
    );
    let received = rig.root().join("r/received");
    let state = rig.root().join("sender/state");
    Setup {
        rig,
        r_cf,
        s_cf,
        address: format!("127.0.0.1:{r}"),
        s_port,
        received,
        state,
    }
}

impl Setup {
    fn request(&self) -> PathBuf {
        let safe = self.address.replace(':', "_");
        self.state.join(format!("resend_Index.0_0_{safe}.req"))
    }

    /// The receiver's store wiped while it is down.
    fn wipe(&self, recv: &mut Proc) {
        assert!(recv.stop());
        std::fs::remove_dir_all(&self.received).unwrap();
        recv.restart();
    }

    fn resend(&self) -> Output {
        reader(&[
            "-c",
            self.s_cf.to_str().unwrap(),
            "resend",
            "--group",
            "Index.0",
            "--address",
            &self.address,
        ])
    }
}

#[test]
fn a_wiped_receiver_gets_exactly_the_live_set_throttled_while_shipping_goes_on() {
    let rate = 150;
    let s = setup(rate, 400);
    let mut recv = Proc::start(&["-c", s.r_cf.to_str().unwrap(), "--recv"]);
    let _sender = Proc::start(&["-c", s.s_cf.to_str().unwrap()]);
    let total = items(&s.rig.store()).len();
    wait_for("everything shipped", Duration::from_secs(30), || {
        items(&s.received).len() == total
    });
    s.wipe(&mut recv);
    let want_before = live(&s.rig.store()).len();
    let asked = Instant::now();
    let out = s.resend();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Shipping goes on meanwhile: new documents, and new versions of old ones the resend may
    // be about to send (it must not overwrite them with their older copies).
    wait_for("the resend taken up", Duration::from_secs(10), || {
        std::fs::read_to_string(s.request()).is_ok_and(|t| t.contains("snapshot"))
    });
    let mut more: Vec<_> = (0..400)
        .step_by(7)
        .map(|d| (d, Status::Update, 3))
        .collect();
    more.extend((400..450).map(|d| (d, Status::Update, 1)));
    more.extend((1..400).step_by(11).map(|d| (d, Status::Delete, 0)));
    write_items(&s.rig.store(), &more);
    wait_for("the resend done", Duration::from_secs(60), || {
        !s.request().exists()
    });
    let took = asked.elapsed();
    let want = live(&s.rig.store());
    wait_for(
        "the receiver holds the live set",
        Duration::from_secs(30),
        || live(&s.received) == want,
    );
    assert_no_duplicates(&s.received);
    // Throttled: the batches after the first (at most `rate` items each) waited their turn.
    let floor = Duration::from_secs_f64((want_before as f64 - f64::from(rate)) / f64::from(rate));
    assert!(
        took >= floor,
        "{want_before} items in {took:?}, at {rate}/s"
    );
    let log = s.rig.log("sender");
    assert!(
        log.contains("resend to Index.0") && log.contains(" done: "),
        "{log}"
    );
    let m = get(s.s_port, "/metrics");
    assert!(
        m.contains("focuser_reader_resends_done_total{daemon=\"reader\"} 1"),
        "{m}"
    );
    // The resend's files are gone: the next one starts afresh.
    let left: Vec<_> = std::fs::read_dir(&s.state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("resend_"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_sender_killed_during_a_resend_goes_on_after_a_restart_nothing_twice_nothing_missing() {
    let s = setup(100, 400);
    let mut recv = Proc::start(&["-c", s.r_cf.to_str().unwrap(), "--recv"]);
    let mut sender = Proc::start(&["-c", s.s_cf.to_str().unwrap()]);
    let total = items(&s.rig.store()).len();
    wait_for("everything shipped", Duration::from_secs(30), || {
        items(&s.received).len() == total
    });
    s.wipe(&mut recv);
    assert!(s.resend().status.success());
    // Killed once some batches of the resend are acknowledged and saved, not all.
    wait_for("a resend position saved", Duration::from_secs(20), || {
        std::fs::read_dir(&s.state).unwrap().any(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            n.starts_with("resend_") && n.ends_with(".dat")
        })
    });
    let held = live(&s.received).len();
    let want = live(&s.rig.store());
    assert!(held < want.len(), "the resend was over before the kill");
    sender.kill9();
    assert!(s.request().exists());
    sender.restart();
    wait_for("the resend done", Duration::from_secs(60), || {
        !s.request().exists()
    });
    wait_for(
        "the receiver holds the live set",
        Duration::from_secs(30),
        || live(&s.received) == want,
    );
    assert_no_duplicates(&s.received);
    // Exactly the live set went by the resend stream: one item for each live document.
    let streams = per_stream(&s.received);
    assert_eq!(streams.len(), 1, "{streams:?}");
    assert_eq!(streams.values().sum::<usize>(), want.len());
}

#[test]
fn bad_resend_requests_are_refused_counted_and_shipping_goes_on() {
    let s = setup(1000, 50);
    // From the command line: an unknown receiver, an unknown group.
    for (group, address) in [
        ("Index.0", "127.0.0.1:1"),
        ("Summary.4", s.address.as_str()),
    ] {
        let out = reader(&[
            "-c",
            s.s_cf.to_str().unwrap(),
            "resend",
            "--group",
            group,
            "--address",
            address,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("no receiver"),
            "{err}"
        );
    }
    // A second request while one is pending.
    std::fs::create_dir_all(&s.state).unwrap();
    assert!(s.resend().status.success());
    let out = s.resend();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("already requested"),
        "{err}"
    );
    // Hostile files, as they would be found in state_dir: another path in the group, huge
    // numbers, a file that is too long, a name of no receiver.
    std::fs::write(s.request(), "group = ../../etc\naddress = x\nid = 1\n").unwrap();
    let other = s.state.join("resend_Index.0_0_10.0.0.1_1.req");
    std::fs::write(&other, "group = Index.0\n").unwrap();
    let mut recv = Proc::start(&["-c", s.r_cf.to_str().unwrap(), "--recv"]);
    let _sender = Proc::start(&["-c", s.s_cf.to_str().unwrap()]);
    wait_for("both refused", Duration::from_secs(20), || {
        s.request().with_extension("req.bad").exists() && other.with_extension("req.bad").exists()
    });
    let safe = s.address.replace(':', "_");
    let huge = s.state.join(format!("resend_Index.0_0_{safe}.req"));
    let head = format!("group = Index.0\naddress = {}\n", s.address);
    for text in [
        format!("{head}id = 99999999999999999999999999\n"),
        format!("{head}id = 5\nsnapshot = 18446744073709551616:1\n"),
        format!("{head}# {}\nid = 5\n", "x".repeat(4000)),
    ] {
        std::fs::remove_file(huge.with_extension("req.bad")).unwrap();
        std::fs::write(&huge, text).unwrap();
        wait_for("refused", Duration::from_secs(20), || {
            huge.with_extension("req.bad").exists() && !huge.exists()
        });
    }
    let log = s.rig.log("sender");
    assert!(log.contains("line 1: group \"../../etc\""), "{log}");
    assert!(log.contains("line 3: id"), "{log}");
    assert!(log.contains("line 4: snapshot"), "{log}");
    assert!(log.contains("longer than 1024 bytes"), "{log}");
    assert!(log.contains("names no sender"), "{log}");
    let m = get(s.s_port, "/metrics");
    assert!(
        m.contains("focuser_reader_resend_bad_requests_total{daemon=\"reader\"} 5"),
        "{m}"
    );
    // Nothing lost: the normal stream shipped everything, and ships what comes.
    write_items(&s.rig.store(), &[(7, Status::Update, 9)]);
    let total = items(&s.rig.store()).len();
    wait_for("everything shipped", Duration::from_secs(30), || {
        items(&s.received).len() == total
    });
    assert!(recv.stop());
}
