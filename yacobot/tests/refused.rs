//! Server-side request forgery through the real binary: URLs whose host is not public (a name
//! resolving to 127.0.0.1, an IP address, a redirect to a private address) or that carry user
//! info are not fetched: recorded as `refused: <reason>` and counted, unless
//! `Fetch.AllowPrivate` lists the address (the test web is on 127.0.0.1, so every other test
//! sets it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;

use std::time::Duration;

use common::{number, record, sql, url_row, Site};
use focuser_formats::queue::QueueRecord;
use focuser_formats::urls;
use focuser_schema::models::FetchState;
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;
use focuser_tests::{free_port, metric_with, wait_for};

/// A queue record for a URL taken as it is (the master would not forward these).
fn as_is(url: &str, host: &str) -> QueueRecord {
    QueueRecord {
        id: urls::url_id(url),
        url: url.into(),
        domain: urls::domain_of(host),
        timestamp: common::T0,
        hits: 1,
        updatetag: String::new(),
        new: true,
    }
}

fn error_of(db: &TestDb, url: &str) -> (FetchState, String) {
    let row = url_row(db, url).unwrap();
    (row.fetch_state, row.fetch_error.unwrap_or_default())
}

#[test]
fn urls_at_addresses_that_are_not_public_are_refused_and_counted_unless_allowed() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let port = server.port();
    let status = free_port();
    server.set("*", "/robots.txt", Behaviour::status(404));
    let inner = format!("http://inner.test:{port}/admin");
    server.set("a.test", "/to-inner", Behaviour::redirect(302, &inner));
    let site = Site::with(
        db.url(),
        &format!(
            "Qargfilter.Enable = 0\nstatus_listen = {status}\nstatus_sample = 1\n\
             Fetch.Resolve = inner.test:{port}:10.1.2.3 *:{port}:127.0.0.1\n\
             Fetch.ConnectTimeout = 2\nFetch.Timeout = 5\nFetch.HostDelay = 0\nCrawl.RetryLater = 600\n"
        ),
    );
    let by_name = server.url("a.test", "/page");
    let by_ip = format!("http://127.0.0.1:{port}/page");
    let with_user = format!("http://user:secret@b.test:{port}/page");
    let redirected = server.url("a.test", "/to-inner");
    site.queue(
        "m1-0000000001.q",
        &[
            record(&by_name, 1, ""),
            as_is(&by_ip, "127.0.0.1"),
            as_is(&with_user, "b.test"),
        ],
    );

    // Escape off: nothing is fetched, not even robots.txt; each URL says why.
    let daemon = site.spawn();
    wait_for("every URL booked", Duration::from_secs(60), || {
        number(&db, "SELECT COUNT(*) AS n FROM url WHERE fetch_state = 3") == 3
    });
    wait_for("the count", Duration::from_secs(30), || {
        metric_with(
            status,
            "focuser_yacobot_fetch_errors_total",
            "kind=\"refused\"",
        ) == Some(3.0)
    });
    daemon.stop();
    assert!(server.log().is_empty(), "{:?}", server.log());
    let failed = FetchState::Failed;
    let (state, why) = error_of(&db, &by_name);
    assert_eq!(state, failed);
    assert!(
        why.starts_with(&format!("refused: {by_name}: "))
            && why.contains("its address 127.0.0.1 is not public (loopback)")
            && why.contains("Fetch.AllowPrivate"),
        "{why}"
    );
    let (_, why) = error_of(&db, &by_ip);
    assert!(
        why.contains("its host 127.0.0.1 is not public (loopback)"),
        "{why}"
    );
    let (_, why) = error_of(&db, &with_user);
    assert!(
        why.starts_with("refused: ") && why.ends_with("user info in the URL"),
        "{why}"
    );
    assert!(site.log().contains(&format!("{by_name}: refused: ")));

    // The test web's address allowed: fetched; user info and the private address behind a
    // redirect still refused.
    let mut cf = std::fs::OpenOptions::new()
        .append(true)
        .open(&site.config)
        .unwrap();
    writeln!(cf, "Fetch.AllowPrivate = 127.0.0.1").unwrap();
    sql(
        &db,
        "UPDATE url SET next_indexed = UTC_TIMESTAMP() - INTERVAL 1 SECOND",
    );
    site.queue("m1-0000000002.q", &[record(&redirected, 1, "")]);
    site.once();
    let fetched = FetchState::Fetched;
    for u in [&by_name, &by_ip] {
        assert_eq!(
            url_row(&db, u).unwrap().fetch_state,
            fetched,
            "{u}: {:?}",
            error_of(&db, u)
        );
    }
    let (state, why) = error_of(&db, &with_user);
    assert_eq!(state, failed);
    assert!(why.ends_with("user info in the URL"), "{why}");
    let (state, why) = error_of(&db, &redirected);
    assert_eq!(state, failed);
    assert!(
        why.starts_with(&format!("refused: {inner}: "))
            && why.contains("its address 10.1.2.3 is not public (private)"),
        "{why}"
    );
    assert!(server.requests_to("b.test", "/page").is_empty());
    assert!(server.log().iter().all(|l| l.host != "inner.test"));
}
