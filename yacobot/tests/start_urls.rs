//! URLs that do not come from the reflog (the source's starturlfile and turtle_addurl) through
//! the `yacobot` binary: `yacobot url add URL…` and `Url.StartFile`, read when the loader
//! starts. Both crawl what they take; a URL that is not one the master would take, of another
//! node's domain or excluded is refused with its reason (the file's with its line), and the
//! rest goes on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;
use std::time::Duration;

use common::{url_row, Site};
use focuser_schema::models::{FetchState, NewPartnerDomain, NewYacobotNode, PartnerDomain};
use focuser_tests::{check_config, free_port, metric_with, wait_for, TestDb};

/// Nodes yb1 (this one) and yb2, which owns other.test; excluded.test is excluded.
fn setup(db: &TestDb, extra: &str) -> (Site, u32, u32) {
    let c = &mut db.conn();
    let mut node = |name| {
        NewYacobotNode {
            name,
            host: "h",
            enabled: true,
        }
        .insert(c)
        .unwrap()
        .id
    };
    let (me, other) = (node("yb1"), node("yb2"));
    NewPartnerDomain {
        domain: "other.test",
        yacobot_id: other,
        assigned_by: "m1",
    }
    .insert(c)
    .unwrap();
    let site = Site::new(
        db.url(),
        &format!("Qargfilter.Enable = 0\nUrl.ExcludeFile = exclude.conf\n{extra}"),
    );
    std::fs::write(site.root().join("exclude.conf"), "domain excluded.test\n").unwrap();
    for page in ["a.test/x", "a.test/y", "excluded.test/p"] {
        site.page(page, "<html><body>a page</body></html>");
    }
    (site, me, other)
}

fn url_add(site: &Site, urls: &[&str]) -> (Output, String, String) {
    let out = site
        .command()
        .args(["url", "add"])
        .args(urls)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

#[test]
fn url_add_puts_this_nodes_urls_into_the_frontier_due_now_and_they_are_crawled() {
    let db = TestDb::new();
    let (site, me, other) = setup(&db, "");
    let (out, stdout, stderr) = url_add(
        &site,
        &[
            "http://A.test/x#top",
            "http://other.test/",
            "ftp://a.test/",
            "http://excluded.test/p",
            "http://127.0.0.1/",
            "not a url",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stdout, "http://a.test/x: added, due now\n");
    let file = site.root().join("exclude.conf");
    for line in [
        format!("http://other.test/: refused: domain other.test is node {other}'s, not this node's ({me}): add it there"),
        "ftp://a.test/: refused: not an http or https URL".to_string(),
        format!("http://excluded.test/p: refused: excluded by {}:1 (domain excluded.test)", file.display()),
        "http://127.0.0.1/: refused: URL host is a loopback or private address".to_string(),
        "not a url: refused: URL does not parse".to_string(),
        "yacobot url add: 5 bad inputs (above)".to_string(),
    ] {
        assert!(stderr.lines().any(|l| l == line), "{line:?} not in\n{stderr}");
    }
    // a.test had no node: it is this node's now, as a master's first assignment would make it.
    let d = PartnerDomain::find(&mut db.conn(), "a.test").unwrap();
    assert_eq!((d.yacobot_id, d.assigned_by.as_str()), (me, "yacobot:yb1"));
    assert!(url_row(&db, "http://excluded.test/p").is_none());
    let row = url_row(&db, "http://a.test/x").unwrap();
    assert_eq!(
        (row.hits, row.download_prio),
        (1, 3),
        "as the loader inserts a new URL"
    );
    site.once();
    let row = url_row(&db, "http://a.test/x").unwrap();
    assert_eq!((row.fetch_state, row.hits), (FetchState::Fetched, 0));
    assert!(row.next_indexed > chrono::Utc::now().naive_utc());

    // Known: due now again.
    let (out, stdout, stderr) = url_add(&site, &["http://a.test/x"]);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "http://a.test/x: known, due now\n");
    let row = url_row(&db, "http://a.test/x").unwrap();
    assert_eq!(row.hits, 1);
    assert!(row.next_indexed <= chrono::Utc::now().naive_utc());
}

#[test]
fn url_add_refuses_when_this_node_is_unknown_and_needs_a_url() {
    let db = TestDb::new();
    let site = Site::new(db.url(), "");
    let (out, _, stderr) = url_add(&site, &["http://a.test/"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("node \"yb1\" is not in yacobot_node and node_id is not set"),
        "{stderr}"
    );
    assert!(url_row(&db, "http://a.test/").is_none());
    let out = site.command().args(["url", "add"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "clap: a URL is required");
}

const START: &str = "\
# start URLs
http://a.test/x
  http://a.test/y   # the second

not-a-url
http://a.test/x http://a.test/y
http://other.test/
http://excluded.test/p
ftp://a.test/
HTTP://A.TEST/x
";

#[test]
fn the_start_file_is_read_when_the_loader_starts_and_bad_lines_are_said_with_their_line() {
    let db = TestDb::new();
    let port = free_port();
    let (site, me, other) = setup(
        &db,
        &format!("Url.StartFile = start.urls\nstatus_listen = {port}\nstatus_sample = 1\n"),
    );
    let file = site.root().join("start.urls");
    std::fs::write(&file, START).unwrap();
    site.once();
    let log = site.log();
    let f = file.display();
    for line in [
        format!("{f}:5: URL does not parse"),
        format!("{f}:6: one URL a line, then \"http://a.test/y\""),
        format!("{f}:7: http://other.test/: domain other.test is node {other}'s, not this node's ({me}): add it there"),
        format!("{f}:8: http://excluded.test/p: excluded by "),
        format!("{f}:9: not an http or https URL"),
        format!("{f}: start URLs: 2 added, 1 known already, 1 excluded, 1 of other nodes, 3 bad lines"),
    ] {
        assert!(log.contains(&line), "{line:?} not in\n{log}");
    }
    for url in ["http://a.test/x", "http://a.test/y"] {
        assert_eq!(
            url_row(&db, url).unwrap().fetch_state,
            FetchState::Fetched,
            "{url}"
        );
    }
    assert!(url_row(&db, "http://excluded.test/p").is_none());

    // Read at every start: what is known already is left alone (not made due again).
    let before = url_row(&db, "http://a.test/x").unwrap();
    let daemon = site.spawn();
    let counted = |result: &str| {
        metric_with(
            port,
            "focuser_yacobot_start_urls_total",
            &format!("result=\"{result}\""),
        )
    };
    wait_for("the start file read again", Duration::from_secs(30), || {
        counted("known") == Some(3.0)
    });
    assert_eq!(
        ["added", "excluded", "refused", "bad"].map(counted),
        [Some(0.0), Some(1.0), Some(1.0), Some(3.0)]
    );
    assert!(site
        .log()
        .contains(&format!("{f}: start URLs: 0 added, 3 known already")));
    daemon.stop();
    assert_eq!(
        url_row(&db, "http://a.test/x").unwrap().next_indexed,
        before.next_indexed
    );
}

#[test]
fn a_start_file_that_cannot_be_read_stops_the_start() {
    let db = TestDb::new();
    let site = Site::new(db.url(), "Url.StartFile = none.urls\n");
    let out = check_config(env!("CARGO_BIN_EXE_yacobot"), &site.config, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = site.root().join("none.urls");
    assert!(
        !out.status.success()
            && stderr.contains(&format!("Url.StartFile: {}: cannot read", file.display())),
        "{stderr}"
    );
    let off = Site::new(db.url(), "Url.StartFile = none.urls\nLoader.Enable = 0\n");
    let out = check_config(env!("CARGO_BIN_EXE_yacobot"), &off.config, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Url.StartFile: read by the loader, which is off"),
        "{stderr}"
    );
}
