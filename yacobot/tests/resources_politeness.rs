//! `Resources.HostDelay` and `Resources.PerHost` through `yacobot --once`: a partner whose many
//! feeds live on one host is fetched at the pace given for that host, not one URL a
//! `Fetch.HostDelay`; another partner's host keeps `Fetch.HostDelay`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::feeds::{items, live, resource, resource_row, rules, serve_feed, serve_sitemap, site};
use focuser_schema::models::FetchStatus;
use focuser_tests::web::WebServer;
use focuser_tests::TestDb;

/// As in the crawl's politeness tests: the server may note a start late on a loaded machine.
const JITTER: Duration = Duration::from_millis(50);

#[test]
fn a_feed_host_with_politeness_of_its_own_is_fetched_at_its_pace() {
    const FEEDS: usize = 8;
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let paths: Vec<String> = (0..FEEDS).map(|i| format!("/f{i}.xml")).collect();
    for (i, p) in paths.iter().enumerate() {
        serve_feed(&server, "feeds.test", p, &items(&format!("f{i}-"), 2));
    }
    serve_feed(&server, "other.test", "/o.xml", &items("o", 2));
    let (fast, slow) = {
        let c = &mut db.conn();
        rules(c);
        let listed: Vec<&str> = paths.iter().map(String::as_str).collect();
        let fast = serve_sitemap(&server, "feeds.test", &listed);
        let slow = serve_sitemap(&server, "other.test", &["/o.xml"]);
        (
            resource(c, "fast", &[("a", fast)]),
            resource(c, "slow", &[("a", slow)]),
        )
    };
    let site = site(
        &db,
        &server,
        "Fetch.HostDelay = 1\nResources.HostDelay = Feeds.test:0.05\nResources.PerHost = feeds.test:2\n",
    );
    site.once();
    let c = &mut db.conn();
    for (id, n) in [(fast, 2 * FEEDS), (slow, 2)] {
        let r = resource_row(c, id);
        assert_eq!(
            r.fetch_status,
            FetchStatus::Ok,
            "{:?}\n{}",
            r.fetch_detail,
            site.log()
        );
        assert_eq!(live(c, id).len(), n);
    }

    let figures = server.figures();
    // robots.txt, the sitemap and 8 feeds: 9 s at Fetch.HostDelay, well under 1 s at its own
    // 0.05 s with 2 at once (the bound leaves a loaded machine room).
    let feeds = &figures["feeds.test"];
    assert_eq!(feeds.requests, FEEDS + 2);
    assert!(feeds.span.unwrap() < Duration::from_secs(4), "{feeds:?}");
    assert!(feeds.max_concurrent <= 2, "{feeds:?}");
    // The other host keeps Fetch.HostDelay: robots.txt, sitemap, feed a second apart.
    let other = &figures["other.test"];
    assert_eq!((other.requests, other.max_concurrent), (3, 1));
    assert!(
        other.min_gap.unwrap() + 3 * JITTER >= Duration::from_secs(1),
        "{other:?}"
    );
}
