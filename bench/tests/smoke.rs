//! Every benchmark once at a smoke size, so that they keep working (not timed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

/// Runs a benchmark with `--work` set to `work` and the given arguments; its standard output,
/// once it has exited successfully and printed every `expected` line.
fn run(bin: &str, args: &[&str], work: &Path, expected: &[&str]) -> String {
    let out = Command::new(bin)
        .args(args)
        .arg("--work")
        .arg(work)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for e in expected {
        assert!(stdout.contains(e), "{stdout}");
    }
    stdout
}

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
        "master CPU (user + sys)",
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
fn bench_fetch_at_a_smoke_size() {
    let work = tempfile::tempdir().unwrap();
    let expected = [
        "(ii) plain libcurl multi loop (limit)",
        "(ii') plain loop, hosts in turn",
        "(iii) xargs -P 32 curl",
        "(i) Fetcher, HostDelay 0",
        "fetcher / xargs-curl:",
        "(iv) Fetcher, HostDelay 1 s, 2 s:",
    ];
    run(
        env!("CARGO_BIN_EXE_bench-fetch"),
        &["--smoke"],
        work.path(),
        &expected,
    );
    // nginx is stopped and its document root gone.
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
}

#[test]
fn bench_yacobot_at_a_smoke_size() {
    let work = tempfile::tempdir().unwrap();
    let expected = [
        "(a1) loader, empty url table",
        "limit: LOAD DATA of the same rows, empty table",
        "(a2) loader, full url table (10000 rows)",
        "limit: LOAD DATA REPLACE of the same rows, full table",
        "(a2) ratio:",
        // Every queued URL became one row: 5000 rows loaded and compared.
        "(a1) ratio:",
        "(5000 rows;",
        // (b) and (c): every page fetched, archived and booked (checked by the benchmark).
        "crawl: 200 pages",
        "(b) plain libcurl multi loop (limit)",
        "(b) yacobot crawl, HostDelay 0",
        "(b) xargs -P 32 curl",
        "(b) yacobot / xargs-curl:",
        "(b) yacobot / plain loop:",
        "(c) yacobot crawl, HostDelay 1 s: 40 pages (2 a host)",
    ];
    let args = [
        "--urls",
        "5000",
        "--others",
        "5000",
        "--files",
        "2",
        "--rules",
        "400",
        "--pages",
        "200",
        "--hosts",
        "20",
        "--polite-per-host",
        "2",
        "--repeat",
        "1",
    ];
    let dir = work.path().join("w");
    run(env!("CARGO_BIN_EXE_bench-yacobot"), &args, &dir, &expected);
    // Its own files are gone.
    assert!(!dir.exists());
}

#[test]
fn bench_feed_at_a_smoke_size() {
    let work = tempfile::tempdir().unwrap();
    let expected = [
        "limit: raw read (64 KiB buffers)",
        "limit: quick-xml event loop",
        "extract + canonical form + MD5",
    ];
    run(
        env!("CARGO_BIN_EXE_bench-feed"),
        &["--mib", "2"],
        work.path(),
        &expected,
    );
    // Its own feed is gone.
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
}

#[test]
fn bench_resources_at_a_smoke_size() {
    let work = tempfile::tempdir().unwrap();
    run(
        env!("CARGO_BIN_EXE_bench-resources"),
        &["--smoke"],
        work.path(),
        &[
            "(1) first run: every item new",
            "limit: LOAD DATA of the same vr_data rows",
            "(1) ratio:",
            "(2) second run: 10 % of the items changed",
        ],
    );
    // Its own data is gone.
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
}

#[test]
fn bench_multidoc_at_a_smoke_size() {
    let work = tempfile::tempdir().unwrap();
    // The development data sits beside the repository (../shared/data); a clone without it
    // gets the benchmark's note on where to find it.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
    let expected: &[&str] = if data.join("extraction/aeb").is_dir() {
        &[
            "AEB shingle-F1",
            "WCXB dev word-F1",
            "DAnIEL-RU word-F1",
            "focuser ",
            "rs_trafilatura_published",
            "dom_smoothie_0.18_measured",
            "focuser: F1",
            "== templater",
            "trust: Big9",
            "whole analysis",
            "memory in flight",
        ]
    } else {
        &["no development data"]
    };
    let data = data.to_string_lossy().into_owned();
    run(
        env!("CARGO_BIN_EXE_bench-multidoc"),
        &["--smoke", "--data", &data],
        work.path(),
        expected,
    );
}

#[test]
fn bench_classify_at_a_smoke_size() {
    let work = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
    if !data.join("classify").is_dir() {
        // Without the development data it says where to get it and exits 2.
        let out = Command::new(env!("CARGO_BIN_EXE_bench-classify"))
            .arg("--work")
            .arg(work.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("../shared/data"));
        return;
    }
    run(
        env!("CARGO_BIN_EXE_bench-classify"),
        &["--smoke"],
        work.path(),
        &[
            "20newsgroups   focuser NB",
            "lenta          focuser NB",
            "reuters        focuser NB",
            "speed: 704 catalog nodes",
            "speed: classify",
        ],
    );
}

#[test]
fn bench_qargfilter_at_a_smoke_size() {
    let work = tempfile::tempdir().unwrap();
    let out = run(
        env!("CARGO_BIN_EXE_bench-qargfilter"),
        &["--hosts", "3", "--rows", "5000", "--batch", "500"],
        work.path(),
        &[
            "(a) before learning:",
            "(a) after merging:",
            "(b) limit: plain SELECT of the rows (table order)",
            "(b) limit: the same in path order (ix_url_path)",
            "(b) qargfilter pass, first (scores, merging)",
            "(b) qargfilter pass, again (nothing new)",
            "(b) ratio:",
        ],
    );
    // The goals hold at this size too: every (path, ignored argument) learned, nothing
    // significant dropped.
    assert!(
        out.contains("significant arguments dropped: 0 (goal 0)"),
        "{out}"
    );
    assert!(
        out.contains("9 of 9 (path, ignored argument) pairs learned"),
        "{out}"
    );
    assert!(out.contains("no longer fetched: 100.0 %"), "{out}");
}

#[test]
fn bench_cluster_at_a_smoke_size() {
    // The cluster of scripts/test.sh (FOCUSER_TEST_CLUSTER_URL), next to the test server.
    let work = tempfile::tempdir().unwrap();
    let args = [
        "--lines",
        "50000",
        "--urls",
        "20000",
        "--domains",
        "2000",
        "--queued",
        "5000",
        "--files",
        "2",
        "--rules",
        "400",
    ];
    let dir = work.path().join("w");
    let out = run(
        env!("CARGO_BIN_EXE_bench-cluster"),
        &args,
        &dir,
        &[
            "master cycle, single server",
            "master cycle, cluster (node 1)",
            "loader, cluster (node 1)",
            "claims, cluster nodes 1 and 2, 1 claimer each",
            "master cycle, cluster / single:",
            "loader, cluster / single rows/s:",
        ],
    );
    // Every queued URL claimed exactly once in each measurement through one server or node
    // (across two cluster nodes some may be claimed twice: measured, not a failure).
    for what in [
        "claims, single server, 1 claimer",
        "claims, single server, 2 claimers",
        "claims, cluster node 1, 1 claimer",
        "claims, cluster node 1, 2 claimers",
    ] {
        let line = out.lines().find(|l| l.starts_with(what)).unwrap();
        assert!(line.contains("(5000 claimed, 0 twice"), "{line}");
    }
    assert!(
        out.contains("URLs claimed twice through one server or node: 0"),
        "{out}"
    );
    assert!(out.contains("URLs claimed twice through two cluster nodes: "));
    assert!(!dir.exists(), "its work directory is removed");
}
