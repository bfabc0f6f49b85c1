//! The main job end to end, at a small size: the real master, three yacobot nodes with their
//! senders and two `reader --recv` receivers, started through the shipped init script with
//! configs made from `conf/`, a database per node, the sample web on loopback (in this
//! process, so that every request it served can be checked). Three reflogs, one a phase:
//!
//! 1. a clean run: every URL the master forwards is fetched by the node owning its domain,
//!    once, and every document reaches the receiver its doc id hashes to, once;
//! 2. SIGUSR1, SIGHUP and SIGUSR2 (`rotate`, `reopen-logs`, `reload`) sent to every daemon
//!    while the phase runs change nothing in what arrives;
//! 3. `kill -9` of one yacobot and of one sender while the phase runs, both restarted through
//!    the init script: every item of every node's store still reaches its receiver once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{start_pipeline, Pipeline, NODES, RECEIVERS, SETTLE};
use focuser_tests::pipeline::{self, db, observe, Allow, Plan, Reflog};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// What the reflogs say must arrive: (pages, gone) documents.
fn expected_docs(reflogs: &[Reflog]) -> (usize, usize) {
    use pipeline::sample::Expect;
    let all = reflogs.iter().flat_map(|r| r.urls.values());
    all.fold((0, 0), |(p, g), u| match u.expect {
        Expect::Page => (p + 1, g),
        Expect::Gone => (p, g + 1),
        Expect::Disallowed => (p, g),
    })
}

/// (UPDATE, DELETE) items the receivers hold, less the feed items (each live feed item is
/// one `UPDATE`; the feeds run once here): what the pages must account for.
fn documents(r: &pipeline::Report) -> (u64, u64) {
    let (u, d) = r
        .received
        .values()
        .fold((0, 0), |(u, d), (u2, d2)| (u + u2, d + d2));
    (u - r.feed_items.iter().sum::<usize>() as u64, d)
}

#[test]
fn the_pipeline_delivers_each_document_once_through_signals_and_kill_9() {
    let p = start_pipeline(3, 20, 0.3);
    let plan = p.plan().clone();
    let mut reflogs = Vec::new();
    let pids = |p: &Pipeline| -> Vec<(String, i32)> {
        p.run
            .instances()
            .iter()
            .map(|i| (i.name.clone(), i.pid().unwrap()))
            .collect()
    };
    let started = pids(&p);

    // 1. A clean run.
    reflogs.push(p.run.drop_reflog(0).unwrap());
    p.settle("phase 1");
    let r1 = p.check("phase 1 (clean run)", &reflogs, &Allow::default());
    let (pages, gone) = expected_docs(&reflogs);
    assert!(
        pages > 200 && gone > 5,
        "a sample too small to mean much: {pages} pages, {gone} gone"
    );
    assert_eq!(documents(&r1), (pages as u64, gone as u64), "{r1:?}");
    assert!(
        r1.forwarded.iter().all(|&n| n > 50),
        "every node has work: {r1:?}"
    );
    assert_eq!(
        r1.received.len(),
        RECEIVERS,
        "both receivers got documents: {r1:?}"
    );

    // 2. Every daemon rotated, reopened its log and reloaded its config, again and again,
    //    while the phase runs.
    let segments_before: Vec<usize> = (1..=NODES).map(|n| segment_count(&plan, n)).collect();
    reflogs.push(p.run.drop_reflog(1).unwrap());
    let t = Instant::now();
    let mut rounds = 0;
    while rounds < 3 || !observe::progress(&plan).unwrap().settled() {
        for i in p.run.instances() {
            for command in ["rotate", "reopen-logs", "reload"] {
                p.init(&i, command);
            }
        }
        rounds += 1;
        assert!(t.elapsed() < SETTLE, "phase 2 did not settle under signals");
        std::thread::sleep(Duration::from_millis(700));
    }
    p.settle("phase 2");
    let r2 = p.check("phase 2 (signals)", &reflogs, &Allow::default());
    let (pages, gone) = expected_docs(&reflogs);
    assert_eq!(documents(&r2), (pages as u64, gone as u64), "{r2:?}");
    assert_eq!(pids(&p), started, "no daemon restarted or died of a signal");
    for n in 1..=NODES {
        assert!(
            segment_count(&plan, n) > segments_before[n - 1],
            "SIGUSR1 sealed node {n}'s segment"
        );
    }
    for i in p.run.instances() {
        let log = std::fs::read_to_string(i.logfile()).unwrap();
        for said in ["rotate requested", "log reopened", "config reloaded"] {
            assert!(
                log.matches(said).count() >= rounds,
                "{} logged `{said}` for each of the {rounds} rounds:\n{}",
                i.name,
                pipeline::daemons::tail(&i.logfile(), 20)
            );
        }
    }

    // 3. kill -9 of a crawler and of a sender while the phase runs; the init script starts
    //    them again (their pidfiles are left behind, stale).
    let victim_yacobot = p.run.instance("yacobot-yb1").unwrap();
    let victim_sender = p.run.instance("reader-yb2").unwrap();
    let before = db::states(&plan.node_dbs[0]).unwrap()[2];
    reflogs.push(p.run.drop_reflog(2).unwrap());
    let phase3_urls = reflogs[2]
        .urls
        .values()
        .filter(|u| owner(&plan, &u.url.domain) == 1)
        .count() as i64;
    let t = Instant::now();
    loop {
        let fetched = db::states(&plan.node_dbs[0]).unwrap()[2] - before;
        if fetched >= phase3_urls / 4 {
            assert!(
                fetched < phase3_urls * 3 / 4,
                "node 1 fetched {fetched} of about {phase3_urls} URLs before the kill: too late to mean much"
            );
            break;
        }
        assert!(t.elapsed() < SETTLE, "node 1 never started on phase 3");
        std::thread::sleep(Duration::from_millis(50));
    }
    for i in [&victim_yacobot, &victim_sender] {
        kill(Pid::from_raw(i.pid().unwrap()), Signal::SIGKILL).unwrap();
    }
    for i in [&victim_yacobot, &victim_sender] {
        let t = Instant::now();
        while i.init(&plan, "status").unwrap().status.code() != Some(1) {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{} did not die",
                i.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(i.pidfile().exists(), "kill -9 leaves the pidfile");
        p.init(i, "start");
    }
    p.settle("phase 3");
    let allow = Allow {
        repeats_from: BTreeSet::from([1]),
    };
    let r3 = p.check("phase 3 (kill -9)", &reflogs, &allow);
    let (pages, gone) = expected_docs(&reflogs);
    let (u, d) = documents(&r3);
    assert!(
        u >= pages as u64 && d == gone as u64,
        "every page at least once, repeats only where a crawler died: {u} UPDATE for {pages} pages, {d} DELETE for {gone} gone ({r3:?})"
    );
    eprintln!(
        "phase 3: {} documents of the killed crawler archived twice (fetched again after its claims lapsed)",
        r3.repeated_docs
    );
}

fn owner(plan: &Plan, domain: &str) -> u32 {
    db::domain_owners(&plan.master_db)
        .unwrap()
        .get(domain)
        .copied()
        .unwrap_or(0)
}

fn segment_count(plan: &Plan, node: usize) -> usize {
    focuser_formats::segment::list_segments(&pipeline::daemons::segments(plan, node))
        .unwrap()
        .len()
}
