//! The master as a daemon: a cycle on SIGUSR1, its figures on /metrics, the shipped config.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{line, nodes, Site, T0};
use focuser_tests::{check_config, free_port, get, repo_root, wait_for, TestDb};

/// How long a daemon may take to get somewhere on a loaded machine.
const WAIT: Duration = Duration::from_secs(20);

#[test]
fn sigusr1_runs_a_cycle_at_once_and_metrics_show_it() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let port = free_port();
    let site = Site::new(
        db.url(),
        // debuglevel 40 logs "no reflog files ready", which tells when the first cycle is over.
        &format!("debuglevel = 40\nstatus_listen = {port}\nCycle.Interval = 3600\n"),
    );
    let mut child = site.spawn(&["--now", &common::stamp(T0 + 60)]);
    let log = || std::fs::read_to_string(site.root().join("master.log")).unwrap_or_default();
    wait_for("start", WAIT, || log().contains("started: pid"));
    // "started" is logged before the immediate first cycle runs; only once that cycle has found
    // nothing may r1.log appear, or that cycle (not SIGUSR1's) could take it.
    wait_for("the first cycle", WAIT, || {
        log().contains("no reflog files ready")
    });
    // The first cycle found nothing; the next is an hour away, unless asked for.
    site.reflog(
        "r1.log",
        &[line(T0, "http://a.ru/x", 2, ""), "junk\n".to_string()],
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(site.queue_files().is_empty());
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGUSR1).unwrap();
    wait_for("a cycle", WAIT, || site.queue_files().len() == 1);
    wait_for("its log line", WAIT, || {
        log().contains("cycle 1: 1 files, 2 lines (1 rejected: 1 fields)")
    });
    let metrics = get(port, "/metrics");
    assert!(
        metrics.contains("focuser_master_cycles_total{daemon=\"master\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("focuser_master_rejected_total{daemon=\"master\",reason=\"fields\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("focuser_master_forwarded_total{daemon=\"master\",reason=\"new\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("focuser_master_current_log_entries{daemon=\"master\"} 1"),
        "{metrics}"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn the_shipped_config_checks_out() {
    let conf = repo_root().join("conf/master.cf");
    let out = check_config(env!("CARGO_BIN_EXE_master"), &conf, &[]);
    // The file parses and validates (its effective config is printed); the start-up checks
    // then find that this machine is not the site (its rootdir is not here).
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("rootdir /var/lib/focuser") && !err.contains("master.cf"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Filter.Window = 3600") && text.contains("database = mysql://focuser:***@"),
        "{text}"
    );
}

#[test]
fn operator_tools_take_the_first_address_that_answers() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    // Nothing listens on the first address.
    let dead = format!("mysql://focuser:x@127.0.0.1:{}/{}", free_port(), db.name());
    let site = Site::new(&format!("{dead},{}", db.url()), "");
    let out = site.master(&["assign", "example.org", "yb1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let alone = Site::new(&dead, "");
    let out = alone.master(&["domains"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("connecting to the database"), "{err}");
    assert!(!err.contains("focuser:x@"), "no password: {err}");
}

#[test]
fn assign_and_domains_for_the_operator() {
    let db = TestDb::new();
    let ids = nodes(&db, &[("yb1", true), ("yb2", true), ("off", false)]);
    let site = Site::new(db.url(), "");
    let out = site.master(&["assign", "WWW.Example.org", "yb2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("example.org assigned to node"));
    let out = site.master(&["assign", "example.org", &ids[0].to_string()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!(
        "example.org moved from node {} to node {}",
        ids[1], ids[0]
    )));
    let refused = site.master(&["assign", "example.org", "off"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is disabled"));
    let listed = String::from_utf8_lossy(&site.master(&["domains"]).stdout).into_owned();
    assert!(
        listed.contains(&format!("example.org\t{}", ids[0])),
        "{listed}"
    );
    assert!(
        listed.lines().nth(1).unwrap().trim_end().ends_with('1'),
        "yb1 has one domain: {listed}"
    );
    let row = focuser_schema::models::PartnerDomain::find(&mut db.conn(), "example.org").unwrap();
    assert!(row.assigned_by.starts_with("admin:"));
}

#[test]
fn assign_takes_only_what_the_master_would_make_a_domain_of() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let site = Site::new(db.url(), "");
    for bad in [
        "",
        "<script>",
        "http://x.com/",
        "x.com/path",
        "x.com:80",
        "u@x.com",
        "x.com#f",
        "a b.ru",
        "10.0.0.1",
        "[::1]",
        "localhost",
    ] {
        let out = site.master(&["assign", bad, "yb1"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {err}");
        assert!(err.contains("is not a domain"), "{bad:?}: {err}");
    }
    assert!(common::partner_domains(&db).is_empty());
    // An IDN is kept as a URL's domain is: in punycode, `www.` dropped.
    let out = site.master(&["assign", "WWW.Пример.РФ", "yb1"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("xn--e1afmkfd.xn--p1ai assigned to node"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_damaged_current_log_fails_the_cycle_with_its_place_and_loses_nothing() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true), ("yb2", true)]);
    let site = Site::new(db.url(), "");
    let urls: Vec<String> = (0..60)
        .map(|i| line(T0 + i, &format!("http://d{}.ru/p/{i}", i % 7), 1, ""))
        .collect();
    site.reflog("r1.log", &urls);
    let once = |now: i64| site.master(&["--once", "--now", &common::stamp(now)]);
    let out = once(T0 + 100);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log_path = site.root().join("state/current_log");
    let good = std::fs::read_to_string(&log_path).unwrap();
    // Entries on both sides of the split (ids are spread evenly).
    let ids: Vec<u64> = good
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| u64::from_str_radix(&l[..16], 16).unwrap())
        .collect();
    assert!(ids.iter().any(|&id| id < 1 << 63) && ids.iter().any(|&id| id >= 1 << 63));

    site.reflog("r2.log", &[line(T0 + 150, "http://d1.ru/new", 1, "")]);
    let queues = site.queue_files();
    // A changed URL in the upper half fails the trailer; two entries of the lower half
    // swapped are out of order.
    let lines: Vec<&str> = good.lines().collect();
    let last = lines[lines.len() - 2];
    let mut swapped = lines.clone();
    swapped.swap(1, 2);
    for (damaged, message) in [
        (
            good.replace(last, &last.replace("http://", "https://")),
            "does not match",
        ),
        (
            swapped.join("\n") + "\n",
            "current_log:3: entries out of id order",
        ),
    ] {
        std::fs::write(&log_path, &damaged).unwrap();
        let out = once(T0 + 200);
        assert!(!out.status.success(), "a cycle over a damaged current_log");
        let logged = std::fs::read_to_string(site.root().join("master.log")).unwrap();
        assert!(
            logged.contains(message) && logged.contains("cycle failed"),
            "{message}: {logged}"
        );
        // Nothing moved: the input waits, no queue file, the damaged file as it was.
        assert!(site.root().join("incoming/r2.log").exists());
        assert_eq!(site.queue_files(), queues);
        assert_eq!(std::fs::read_to_string(&log_path).unwrap(), damaged);
    }

    // Put back, the cycle goes through.
    std::fs::write(&log_path, &good).unwrap();
    let out = once(T0 + 200);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(site.root().join("done/r2.log").exists());
    assert!(site.queue_files().len() > queues.len());
}
