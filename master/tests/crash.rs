//! kill -9 at random moments of cycles: after restarts, the same queue files, current_log,
//! rejects, done files and partner_domain rows as a run that was never interrupted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Child;
use std::time::Instant;

use common::{line, nodes, partner_domains, Site, T0};
use focuser_tests::TestDb;

const FILES: usize = 50;
const LINES: usize = 200_000;

/// 200 k lines over 50 files and three hours: 20 k URLs on 400 domains, updatetags that
/// change now and then, and a few bad lines.
fn reflogs() -> Vec<(String, Vec<String>)> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let per_file = LINES / FILES;
    (0..FILES)
        .map(|f| {
            let lines = (0..per_file)
                .map(|i| {
                    let r = next();
                    if r % 997 == 0 {
                        return "garbage line\n".to_string();
                    }
                    let url = (r >> 8) % 20_000;
                    let ts = T0 + (f * per_file + i) as i64 * 10_800 / LINES as i64;
                    let tag = if (r >> 40) % 50 == 0 {
                        format!("v{}", (r >> 48) % 3)
                    } else {
                        String::new()
                    };
                    line(
                        ts,
                        &format!("http://d{}.example/p/{url}", url % 400),
                        (r >> 32) % 4,
                        &tag,
                    )
                })
                .collect();
            (format!("reflog-{f:03}.log"), lines)
        })
        .collect()
}

fn setup(files: &[(String, Vec<String>)]) -> (TestDb, Site) {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true), ("yb2", true), ("yb3", true)]);
    let site = Site::new(db.url(), "Cycle.MaxFiles = 1\n");
    for (name, lines) in files {
        site.reflog(name, lines);
    }
    (db, site)
}

fn once(site: &Site) -> Child {
    site.spawn(&["--once", "--now", &common::stamp(T0 + 10_800)])
}

fn finished(site: &Site) -> bool {
    std::fs::read_dir(site.root().join("incoming"))
        .unwrap()
        .next()
        .is_none()
        && !site.root().join("state/cycle.journal").exists()
}

fn outputs(site: &Site) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for sub in ["queue", "state", "done", "rejects"] {
        collect(&site.root().join(sub), sub, &mut out);
    }
    out
}

fn collect(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = format!("{prefix}/{}", e.file_name().to_string_lossy());
        if e.file_type().unwrap().is_dir() {
            collect(&e.path(), &name, out);
        } else {
            out.insert(name, std::fs::read(e.path()).unwrap());
        }
    }
}

#[test]
fn kill_9_at_random_moments_changes_nothing() {
    let files = reflogs();

    // The uninterrupted run, timing its cycles.
    let (db_a, a) = setup(&files);
    let started = Instant::now();
    let mut runs = 0;
    while !finished(&a) {
        assert!(once(&a).wait().unwrap().success());
        runs += 1;
    }
    assert_eq!(runs, FILES);
    let mut cycle = started.elapsed() / FILES as u32;

    // The same, killed at random moments while cycles remain: a run is left alone only now
    // and then, so that the work moves on between kills.
    let (db_b, b) = setup(&files);
    let mut seed: u64 = 42;
    let mut kills = 0;
    let mut attempts = 0;
    while !finished(&b) {
        attempts += 1;
        assert!(attempts < 1000, "no progress");
        let mut child = once(&b);
        if attempts % 5 == 0 {
            assert!(child.wait().unwrap().success());
            continue;
        }
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = cycle.mul_f64((seed >> 11) as f64 / (1u64 << 53) as f64);
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        } else {
            // The machine got faster than when the cycle was timed (its load moves): aim
            // earlier, so that kills keep landing while cycles remain.
            cycle = cycle.mul_f64(0.8);
        }
        child.wait().unwrap();
    }
    assert!(
        kills >= 50,
        "only {kills} kills landed while cycles remained"
    );
    eprintln!("{kills} kills in {attempts} attempts; a cycle takes {cycle:?}");

    let (out_a, out_b) = (outputs(&a), outputs(&b));
    assert_eq!(
        out_a.keys().collect::<Vec<_>>(),
        out_b.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &out_a {
        assert!(bytes == &out_b[name], "{name} differs after the crashes");
    }
    assert_eq!(partner_domains(&db_a), partner_domains(&db_b));
    assert!(out_a.keys().filter(|k| k.starts_with("queue/")).count() >= FILES * 3 - 5);
}
