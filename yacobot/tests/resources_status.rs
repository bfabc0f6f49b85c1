//! The resources worker's figures on a running yacobot's `/metrics` and status page: runs,
//! items inserted, changed and deleted, failed runs and the resources in error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::feeds::{ask, items, resource, rules, serve_feed, serve_sitemap, site};
use focuser_schema::models::{VrResource, VrResourceChanges};
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;
use focuser_tests::{free_port, get, metric, wait_for};

/// Due once (never run yet), then only when asked for.
fn hourly(c: &mut diesel::MysqlConnection, id: u32) {
    VrResource::update(
        c,
        id,
        &VrResourceChanges {
            frequency: Some(3600),
            ..Default::default()
        },
    )
    .unwrap();
}

#[test]
fn resources_runs_items_and_errors_show_in_metrics_and_on_the_status_page() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let sitemap = serve_sitemap(&server, "a.test", &["/f.xml"]);
    let mut feed = items("a", 10);
    serve_feed(&server, "a.test", "/f.xml", &feed);
    let shop = resource(c, "shop", &[("a", sitemap)]);
    hourly(c, shop);
    // Its sitemap is not there: the run fails.
    server.set("b.test", "/sitemap.txt", Behaviour::status(404));
    let broken = resource(c, "broken", &[("b", server.url("b.test", "/sitemap.txt"))]);
    hourly(c, broken);

    let port = free_port();
    let site = site(
        &db,
        &server,
        &format!("status_listen = {port}\nstatus_sample = 1\n"),
    );
    let daemon = site.spawn();
    wait_for("both runs", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_resource_runs_total") == Some(2.0)
    });
    assert_eq!(
        metric(port, "focuser_yacobot_resource_runs_failed_total"),
        Some(1.0)
    );
    assert_eq!(
        metric(port, "focuser_yacobot_resource_items_inserted_total"),
        Some(10.0)
    );
    assert_eq!(
        metric(port, "focuser_yacobot_resource_items_emitted_total"),
        Some(10.0)
    );
    assert_eq!(
        metric(port, "focuser_yacobot_resource_feeds_total"),
        Some(1.0)
    );
    assert_eq!(
        metric(port, "focuser_yacobot_resource_sitemap_errors_total"),
        Some(1.0)
    );
    wait_for(
        "the resources in error, counted at the next scan",
        Duration::from_secs(30),
        || metric(port, "focuser_yacobot_resources_in_error") == Some(1.0),
    );

    // Asked for again after a change: 2 changed, 1 gone.
    feed[0].2 = "1000.00".into();
    feed[1].2 = "1000.00".into();
    feed.truncate(9);
    serve_feed(&server, "a.test", "/f.xml", &feed);
    ask(c, shop);
    wait_for("the third run", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_resource_runs_total") == Some(3.0)
    });
    assert_eq!(
        metric(port, "focuser_yacobot_resource_items_updated_total"),
        Some(2.0)
    );
    assert_eq!(
        metric(port, "focuser_yacobot_resource_items_deleted_total"),
        Some(1.0)
    );
    assert_eq!(
        metric(port, "focuser_yacobot_resource_items_unchanged_total"),
        Some(7.0)
    );
    assert_eq!(
        metric(port, "focuser_yacobot_resource_items_emitted_total"),
        Some(13.0)
    );
    assert_eq!(
        metric(port, "focuser_yacobot_resource_runs_failed_total"),
        Some(1.0)
    );
    wait_for("no run in hand", Duration::from_secs(10), || {
        metric(port, "focuser_yacobot_resource_runs_running") == Some(0.0)
    });

    let status = get(port, "/status.json");
    for expected in [
        "\"label\": \"resource runs\"",
        "\"label\": \"resource runs failed\"",
        "\"label\": \"feed items written\"",
        "\"id\": \"resource_runs\"",
        "\"shop\"",
        "\"broken\"",
        "\"figure\": \"yacobot_resource_items_inserted_total\"",
    ] {
        assert!(status.contains(expected), "{expected} not in {status}");
    }
    daemon.stop();
}

/// `Fetch.*` is live: after SIGUSR2 the resources worker's next run fetches with the new
/// settings (its fetcher is rebuilt once idle, as the crawl worker's is).
#[test]
fn resources_fetch_with_the_reloaded_fetch_settings() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let sitemap = serve_sitemap(&server, "a.test", &["/f.xml"]);
    serve_feed(&server, "a.test", "/f.xml", &items("a", 3));
    let shop = resource(c, "shop", &[("a", sitemap)]);
    hourly(c, shop);

    let port = free_port();
    let site = site(
        &db,
        &server,
        &format!("status_listen = {port}\nFetch.UserAgent = before-reload\n"),
    );
    let daemon = site.spawn();
    wait_for("the first run", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_resource_runs_total") == Some(1.0)
    });
    let agents = |server: &WebServer| -> Vec<String> {
        server
            .requests_to("a.test", "/f.xml")
            .into_iter()
            .map(|l| l.user_agent)
            .collect()
    };
    assert_eq!(agents(&server), ["before-reload"]);

    let cf = std::fs::read_to_string(&site.config).unwrap();
    std::fs::write(
        &site.config,
        cf.replace(
            "Fetch.UserAgent = before-reload",
            "Fetch.UserAgent = after-reload",
        ),
    )
    .unwrap();
    daemon.signal(nix::sys::signal::Signal::SIGUSR2);
    wait_for("the reload", Duration::from_secs(10), || {
        get(port, "/status.json").contains("after-reload")
    });
    server.clear_log();
    ask(c, shop);
    wait_for("the second run", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_resource_runs_total") == Some(2.0)
    });
    assert_eq!(agents(&server), ["after-reload"]);
    daemon.stop();
}
