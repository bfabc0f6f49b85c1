//! Crash loops: a writer producing items, two receiver groups (2 + 1), and kill -9 of the
//! writer, the sender and the receivers at random moments, each restarted at once. At the end
//! every receiver holds exactly its partition's items, each once, in order.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Child;
use std::time::{Duration, Instant};

use common::*;

const TOTAL: u64 = 6000;

fn writer_args() -> Vec<&'static str> {
    vec![
        "--rate",
        "500",
        "--min",
        "50",
        "--max",
        "600",
        "--max-items",
        "300",
        "--sync-items",
        "20",
        "--sync-ms",
        "20",
    ]
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn kill_9_anywhere_still_delivers_every_item_exactly_once_in_order() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("crash loop seed {seed}");
    let mut rng = Rng(seed);
    let rig = Rig::new();
    let (a_cf, a) = rig.receiver_cf("a", "");
    let (b_cf, b) = rig.receiver_cf("b", "");
    let (c_cf, c) = rig.receiver_cf("c", "");
    let s_cf = rig.sender_cf(
        &[("Index.0", &[a, b]), ("Summary.0", &[c])],
        "Send.SaveEvery = 50\nStore.CheckInterval = 1",
    );
    let mut receivers = vec![
        Proc::start(&["-c", a_cf.to_str().unwrap(), "--recv"]),
        Proc::start(&["-c", b_cf.to_str().unwrap(), "--recv"]),
        Proc::start(&["-c", c_cf.to_str().unwrap(), "--recv"]),
    ];
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    let mut writer: Option<Child> = Some(rig.writer(TOTAL, &writer_args()));
    let mut kills = [0u32; 3]; // writer, sender, receivers
    let started = Instant::now();
    // Until enough kills of each kind have landed (the writer's only while it runs): kinds
    // are drawn at random, and a run once drew the sender 4 times in 36.
    let enough = |k: &[u32; 3], writer_running: bool| {
        k.iter().sum::<u32>() >= 36 && k[1] >= 5 && k[2] >= 5 && (k[0] >= 3 || !writer_running)
    };
    while !enough(&kills, writer.is_some()) || started.elapsed() < Duration::from_secs(8) {
        std::thread::sleep(Duration::from_millis(50 + rng.next() % 350));
        let writer_done = match writer.as_mut().map(|w| w.try_wait().unwrap()) {
            Some(Some(st)) => {
                assert!(st.success(), "the writer failed: {st}");
                writer = None;
                true
            }
            Some(None) => false,
            None => true,
        };
        match rng.next() % 3 {
            0 if !writer_done => {
                let w = writer.as_mut().unwrap();
                w.kill().unwrap();
                w.wait().unwrap();
                writer = Some(rig.writer(TOTAL, &writer_args()));
                kills[0] += 1;
            }
            1 => {
                sender.restart();
                kills[1] += 1;
            }
            _ => {
                let k = (rng.next() % 3) as usize;
                receivers[k].restart();
                kills[2] += 1;
            }
        }
    }
    eprintln!(
        "kills: writer {}, sender {}, receivers {}",
        kills[0], kills[1], kills[2]
    );
    assert!(kills.iter().sum::<u32>() >= 30, "{kills:?}");
    assert!(
        kills[0] >= 3 && kills[1] >= 5 && kills[2] >= 5,
        "each of writer, sender and receivers killed: {kills:?}"
    );
    // Let the writer finish (restarting it if it was killed last), then wait for delivery.
    loop {
        match writer.as_mut() {
            None => break,
            Some(w) => {
                let st = w.wait().unwrap();
                assert!(st.success(), "the writer failed: {st}");
                writer = None;
            }
        }
    }
    let written = ns(&rig.store());
    // Retention may have deleted the oldest segments; what is left is a contiguous tail.
    assert_eq!(*written.last().unwrap(), TOTAL);
    let dirs = [
        (rig.root().join("a/received"), 2, 0),
        (rig.root().join("b/received"), 2, 1),
        (rig.root().join("c/received"), 1, 0),
    ];
    let t = Instant::now();
    loop {
        let done = dirs
            .iter()
            .all(|(d, n, k)| ns(d).len() >= expected(TOTAL, *n, *k).len());
        if done || t.elapsed() > Duration::from_secs(90) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    for (d, n, k) in &dirs {
        let got = ns(d);
        let want = expected(TOTAL, *n, *k);
        if got != want {
            let dup = got.len() - {
                let mut u = got.clone();
                u.sort();
                u.dedup();
                u.len()
            };
            let wanted: std::collections::BTreeSet<u64> = want.iter().copied().collect();
            let held: std::collections::BTreeSet<u64> = got.iter().copied().collect();
            let foreign: Vec<u64> = held.difference(&wanted).take(8).copied().collect();
            let missing: Vec<u64> = wanted.difference(&held).take(8).copied().collect();
            panic!(
                "{}: {} items, {} expected, {dup} duplicates; first difference at {:?}; \
                 first held: {:?}; not of this receiver: {} (e.g. {foreign:?}); missing: {} \
                 (e.g. {missing:?}) (seed {seed})",
                d.display(),
                got.len(),
                want.len(),
                got.iter().zip(&want).position(|(x, y)| x != y),
                &got[..got.len().min(8)],
                held.difference(&wanted).count(),
                wanted.difference(&held).count(),
            );
        }
    }
    assert!(sender.stop());
    for r in &mut receivers {
        assert!(r.stop());
    }
}
