//! The main job's bindings end to end, at a small size: page analysis, bindings and the path
//! binder on every node (the sample model, the sample dictionaries loaded with `yacobot dict
//! load`), each node's bindings store and stubs store shipped by readers of their own to the
//! ad-server receiver. Two reflogs:
//!
//! 1. a clean run: every page fetched is bound, and every binding and stub the nodes hold
//!    reaches the ad server once, item by item (the stores are kept whole);
//! 2. `kill -9` of a bindings reader, a stubs reader and of the ad-server receiver while the
//!    phase runs, all restarted through the init script: still every item once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::start_pipeline_with;
use focuser_tests::pipeline::Allow;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

#[test]
fn every_binding_reaches_the_ad_server_once_through_kill_9() {
    let p = start_pipeline_with(2, 10, 0.1, true);
    let plan = p.plan().clone();
    assert_eq!(p.run.dictionaries.len(), 3, "{:?}", p.run.dictionaries);

    // 1. A clean run.
    let mut reflogs = vec![p.run.drop_reflog(0).unwrap()];
    p.settle("bindings, phase 1");
    let r = p.check("bindings, phase 1", &reflogs, &Allow::default());
    let b = r.bindings.clone().unwrap();
    let fetched: usize = r.fetched.iter().sum();
    assert!(fetched > 50, "{fetched}");
    assert_eq!(
        b.stored.iter().sum::<usize>(),
        fetched,
        "every page fetched is bound"
    );
    assert_eq!(b.bindings, fetched);
    assert_eq!(b.updates, fetched, "each binding shipped once");
    assert!(b.phrases["direct"] > 0, "{b:?}");
    assert!(b.phrases.get("media").copied().unwrap_or(0) > 0, "{b:?}");
    assert!(b.tragic < b.bindings, "{b:?}");
    let stubs = &b.stubs;
    assert!(stubs.stubs > 0, "sample sections get stubs: {stubs:?}");
    assert_eq!(
        stubs.stored.iter().sum::<usize>(),
        stubs.stubs + stubs.query_args,
        "{stubs:?}"
    );

    // 2. kill -9 of node 1's bindings reader and of the ad-server receiver mid-phase.
    reflogs.push(p.run.drop_reflog(1).unwrap());
    let sender = p.run.instance("reader-bind-yb1").unwrap();
    let stubs_sender = p.run.instance("reader-stubs-yb2").unwrap();
    let adserver = p.run.instance("adserver1").unwrap();
    let before = b.updates;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    // Wait until the phase's bindings have begun to arrive, so that the kills cut shipping.
    while focuser_tests::pipeline::bindings::delivered(&plan)
        .unwrap()
        .len()
        == before
    {
        assert!(
            std::time::Instant::now() < deadline,
            "phase 2 bound nothing"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for i in [&sender, &stubs_sender, &adserver] {
        kill(Pid::from_raw(i.pid().unwrap()), Signal::SIGKILL).unwrap();
    }
    for i in [&adserver, &sender, &stubs_sender] {
        let t = std::time::Instant::now();
        while i.init(&plan, "status").unwrap().status.code() != Some(1) {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{} did not die",
                i.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        p.init(i, "start");
    }
    p.settle("bindings, phase 2");
    let r = p.check("bindings, phase 2 (kill -9)", &reflogs, &Allow::default());
    let b = r.bindings.unwrap();
    let fetched: usize = r.fetched.iter().sum();
    assert_eq!(b.bindings, fetched);
    assert_eq!(b.updates, fetched, "each binding shipped once");
    assert!(b.stubs.stubs >= stubs.stubs, "{:?}", b.stubs);
}
