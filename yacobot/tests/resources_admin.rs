//! `yacobot resource add|list|show|fetch-now|disable`, and the admin.sql query for feed
//! URLs in error, against a real database and a real run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::feeds::{items, resource_cmd, resource_row, rules, serve_feed, serve_text, site};
use focuser_schema::models::{FetchStatus, ResStatus};
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

fn yacobot(site: &common::Site, args: &[&str]) -> (bool, String) {
    let (code, text) = resource_cmd(site, args);
    (code == 0, text)
}

#[test]
fn resources_admin_commands_add_list_show_fetch_now_disable() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    serve_text(
        &server,
        "p.test",
        "/sitemap.txt",
        &format!(
            "{}\n{}\n",
            server.url("p.test", "/ok.xml"),
            server.url("p.test", "/gone.xml")
        ),
    );
    serve_feed(&server, "p.test", "/ok.xml", &items("k", 4));
    server.set("p.test", "/gone.xml", Behaviour::status(404));
    let site = site(&db, &server, "");
    let src = format!("partner={}", server.url("p.test", "/sitemap.txt"));
    let (ok, out) = yacobot(
        &site,
        &["add", "shop", "--class", "7", "--source", &src, "--manual"],
    );
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "resource 1 \"shop\" saved");
    let (ok, out) = yacobot(
        &site,
        &["add", "bad", "--class", "7", "--source", "x=ftp://a"],
    );
    assert!(!ok && out.contains("NAME=URL"), "{out}");

    // Manual and not asked for: the scan leaves it alone.
    site.once();
    assert_eq!(resource_row(c, 1).fetch_status, FetchStatus::Never);
    let (ok, out) = yacobot(&site, &["fetch-now", "shop"]);
    assert!(ok && out.contains("a run is asked for"), "{out}");
    let (_, out) = yacobot(&site, &["list"]);
    assert!(out.contains("(run asked for)"), "{out}");
    site.once();
    let r = resource_row(c, 1);
    assert_eq!(r.fetch_status, FetchStatus::Error, "{:?}", r.fetch_detail);
    assert!(!r.manual_update);

    let (ok, out) = yacobot(&site, &["show", "1"]);
    assert!(ok, "{out}");
    for want in [
        "resource 1 \"shop\"",
        "(manual only)",
        "live items: 4",
        "source \"partner\" (priority 1): http://p.test:",
        "/gone.xml: could not be fetched: HTTP 404",
        "items: 4 new",
        ": error from ",
    ] {
        assert!(out.contains(want), "{want:?} not in:\n{out}");
    }
    let (_, out) = yacobot(&site, &["list"]);
    let line = out.lines().find(|l| l.contains("shop")).unwrap();
    assert!(
        line.contains("error") && line.trim_end().ends_with('4'),
        "{out}"
    );

    // The operator's query names the feed that failed.
    let sql = std::fs::read_to_string(focuser_tests::repo_root().join("conf/admin.sql")).unwrap();
    let query = sql
        .split("-- [")
        .find(|b| b.starts_with("resource_feeds_in_error]"))
        .unwrap();
    let query = query.split_once('\n').unwrap().1;
    let out = db
        .client()
        .args(["--batch", "--raw", "-e", query])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{text}");
    assert!(
        rows[0].contains("/gone.xml")
            && rows[0].contains("HTTP 404")
            && rows[0].contains("partner"),
        "{text}"
    );

    // Disabled: withdrawn at the next scan (resources_withdraw.rs), then never run, even
    // when a run is asked for.
    let (ok, out) = yacobot(&site, &["disable", "shop"]);
    assert!(ok && out.contains("withdrawal asked for"), "{out}");
    site.once();
    let withdrawn = resource_row(c, 1);
    assert_eq!(withdrawn.res_status, ResStatus::Disabled);
    let (_, out) = yacobot(&site, &["list"]);
    let line = out.lines().find(|l| l.contains("shop")).unwrap();
    assert!(
        line.contains(" no ") && line.trim_end().ends_with('0'),
        "{out}"
    );
    yacobot(&site, &["fetch-now", "1"]);
    site.once();
    let after = resource_row(c, 1);
    assert_eq!(
        (after.fetch_time, after.last_fetch_time),
        (withdrawn.fetch_time, withdrawn.last_fetch_time),
        "a disabled resource ran"
    );
    assert!(after.manual_update);
    let (ok, out) = yacobot(&site, &["show", "nosuch"]);
    assert!(!ok && out.contains("no resource \"nosuch\""), "{out}");
}
