//! The record per host (`host`, the source's srv.db) through the `yacobot` binary against the
//! test HTTP server: what a crawl writes of each host, and that it survives a restart — the
//! next run takes robots.txt from it (the server's log counts the robots.txt requests) until
//! it expires.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{due_url, sql, Site};
use focuser_schema::models::{DelaySource, FetchState, Host};
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

fn site(db: &TestDb, server: &WebServer, extra: &str) -> Site {
    Site::with(
        db.url(),
        &format!(
            "Loader.Enable = 0\nQargfilter.Enable = 0\nFetch.Resolve = {}\nFetch.AllowPrivate = 127.0.0.1\n\
             Fetch.ConnectTimeout = 2\nFetch.Timeout = 5\nFetch.HostDelay = 0.05\n{extra}",
            server.resolve().join(" ")
        ),
    )
}

fn host(db: &TestDb, server: &WebServer, name: &str) -> Host {
    Host::find(&mut db.conn(), &format!("{name}:{}", server.port())).unwrap()
}

fn md5_hex(bytes: &[u8]) -> String {
    use md5::{Digest, Md5};
    Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn the_host_record_survives_a_restart_and_robots_txt_is_not_fetched_again_until_it_expires() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let robots = "User-agent: *\nDisallow: /private\n";
    server.set_robots("a.test", robots);
    server.set("b.test", "/robots.txt", Behaviour::status(404));
    let page = |n: usize| Behaviour::html(&"x".repeat(n)).with_header("Server", "TestServer/1.0");
    server.set("a.test", "*", page(4000));
    let site = site(&db, &server, "");
    due_url(&db, &server.url("a.test", "/1"), 1, 10);
    due_url(&db, &server.url("a.test", "/private"), 1, 5);
    due_url(&db, &server.url("b.test", "/1"), 1, 1);
    site.once();
    assert_eq!(server.requests_to("a.test", "/robots.txt").len(), 1);
    assert_eq!(server.requests_to("b.test", "/robots.txt").len(), 1);

    let a = host(&db, &server, "a.test");
    assert_eq!((a.documents, a.errors, a.errors_in_row), (1, 0, 0), "{a:?}");
    assert!(a.bytes >= 4000 && a.bps.unwrap() > 0.0, "{a:?}");
    assert_eq!(a.server.as_deref(), Some("TestServer/1.0"));
    assert_eq!(
        (a.delay_ms, a.delay_source),
        (Some(50), Some(DelaySource::HostDelay))
    );
    assert_eq!(a.robots_status, Some(200));
    assert_eq!(
        a.robots_md5.as_deref(),
        Some(md5_hex(robots.as_bytes()).as_str())
    );
    assert_eq!(a.robots_txt.as_deref(), Some(robots.as_bytes()));
    assert_eq!(a.robots_bytes, Some(robots.len() as u32));
    let (fetched, expires) = (a.robots_fetched_at.unwrap(), a.robots_expires.unwrap());
    assert_eq!((expires - fetched).num_seconds(), 86400, "Fetch.RobotsTtl");
    assert!(a.last_answer_at.is_some());
    let b = host(&db, &server, "b.test");
    assert_eq!(
        (b.documents, b.robots_status, b.robots_txt),
        (1, Some(404), None)
    );

    // A restart: robots.txt comes from the record — not asked again, and the kept rules
    // hold even though the server's file changed meanwhile.
    server.set_robots("a.test", "User-agent: *\nDisallow: /\n");
    due_url(&db, &server.url("a.test", "/2"), 1, 10);
    due_url(&db, &server.url("b.test", "/2"), 1, 1);
    site.once();
    assert_eq!(
        server.requests_to("a.test", "/robots.txt").len(),
        1,
        "{}",
        site.log()
    );
    assert_eq!(server.requests_to("b.test", "/robots.txt").len(), 1);
    assert_eq!(
        server.requests_to("a.test", "/2").len(),
        1,
        "the kept rules allow it"
    );
    let a = host(&db, &server, "a.test");
    assert_eq!(a.documents, 2, "added to across runs");
    assert_eq!(a.robots_fetched_at, Some(fetched), "not fetched again");
    assert_eq!(host(&db, &server, "b.test").documents, 2);

    // Once it has expired, robots.txt is fetched again, and its new rules hold.
    sql(
        &db,
        "UPDATE host SET robots_expires = UTC_TIMESTAMP() - INTERVAL 1 SECOND WHERE name LIKE 'a.test:%'",
    );
    let three = server.url("a.test", "/3");
    due_url(&db, &three, 1, 10);
    site.once();
    assert_eq!(server.requests_to("a.test", "/robots.txt").len(), 2);
    assert!(
        server.requests_to("a.test", "/3").is_empty(),
        "disallowed now"
    );
    let row = common::url_row(&db, &three).unwrap();
    assert_eq!(row.fetch_state, FetchState::Failed);
    let a = host(&db, &server, "a.test");
    assert!(a.robots_fetched_at.unwrap() >= fetched);
    assert_eq!(
        a.robots_txt.as_deref(),
        Some(&b"User-agent: *\nDisallow: /\n"[..])
    );
}

#[test]
fn the_host_record_counts_errors_in_a_row_and_keeps_the_last_one() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    server.set("*", "/robots.txt", Behaviour::status(404));
    server.set("e.test", "/fails", Behaviour::status(503));
    server.set("e.test", "/fine", Behaviour::page(1000));
    server.set(
        "big.test",
        "/robots.txt",
        Behaviour::text(&format!(
            "User-agent: *\nCrawl-delay: 0.3\n#{}\n",
            "x".repeat(3000)
        )),
    );
    let site = site(
        &db,
        &server,
        "Fetch.Retries = 1\nHosts.RobotsBytes = 1000\n",
    );
    due_url(&db, &server.url("e.test", "/fine"), 1, 30);
    due_url(&db, &server.url("e.test", "/fails"), 1, 20);
    due_url(&db, &server.url("big.test", "/1"), 1, 10);
    site.once();
    let e = host(&db, &server, "e.test");
    assert_eq!((e.documents, e.errors, e.errors_in_row), (1, 1, 1), "{e:?}");
    assert!(
        e.last_error
            .as_deref()
            .unwrap()
            .contains("server error 503"),
        "{e:?}"
    );
    assert!(e.last_error_at.is_some());

    // The next failure adds to the errors in a row; an answer starts them again.
    sql(&db, "UPDATE url SET next_indexed = UTC_TIMESTAMP() - INTERVAL 1 SECOND WHERE url LIKE '%/fails'");
    site.once();
    assert_eq!(host(&db, &server, "e.test").errors_in_row, 2);
    server.set("e.test", "/fails", Behaviour::page(100));
    sql(&db, "UPDATE url SET next_indexed = UTC_TIMESTAMP() - INTERVAL 1 SECOND WHERE url LIKE '%/fails'");
    site.once();
    let e = host(&db, &server, "e.test");
    assert_eq!((e.documents, e.errors, e.errors_in_row), (2, 2, 0), "{e:?}");

    // A robots.txt above Hosts.RobotsBytes is kept by its digest and length only; its
    // Crawl-delay is the politeness in force.
    let big = host(&db, &server, "big.test");
    assert_eq!(
        (big.robots_status, big.robots_txt.as_deref()),
        (Some(200), None)
    );
    assert!(big.robots_bytes.unwrap() > 3000 && big.robots_md5.is_some());
    assert_eq!(
        (big.delay_ms, big.delay_source),
        (Some(300), Some(DelaySource::CrawlDelay))
    );
}
