//! Every benchmark once at a smoke size, so that they keep working (not timed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn bench_master_at_a_smoke_size() {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bench-master"))
        .args([
            "--lines",
            "50000",
            "--urls",
            "20000",
            "--domains",
            "2000",
            "--work",
        ])
        .arg(work.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "(a) classic sort/join/awk",
        "(b) single-pass read",
        "(c) master cycle",
        "master peak RSS",
    ] {
        assert!(stdout.contains(expected), "{stdout}");
    }
    let fwd = stdout
        .lines()
        .find(|l| l.starts_with("forwarded:"))
        .unwrap();
    assert!(
        fwd.ends_with(": true"),
        "master and the classic pipeline disagree: {fwd}"
    );
}

#[test]
fn bench_segments_at_a_smoke_size() {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bench-segments"))
        .args(["--mib", "16", "--work"])
        .arg(work.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "limit: dd conv=fsync",
        "(a) writer, default sync policy",
        "(b) sender -> receiver, durable",
        "limit: raw loopback copy",
        "(c) sender -> receiver that discards",
    ] {
        assert!(stdout.contains(expected), "{stdout}");
    }
    // Its own temporary stores are gone.
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
}

#[test]
fn bench_feed_at_a_smoke_size() {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bench-feed"))
        .args(["--mib", "2", "--work"])
        .arg(work.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "limit: raw read (64 KiB buffers)",
        "limit: quick-xml event loop",
        "extract + canonical form + MD5",
    ] {
        assert!(stdout.contains(expected), "{stdout}");
    }
    // Its own feed is gone.
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
}
