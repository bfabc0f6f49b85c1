//! Bad query strings through the real binary: URLs with malformed query strings, hundreds of
//! arguments, argument names too long to store — crawled, analysed and estimated without a
//! panic, left out and counted, the other arguments of the path still scored.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::multidoc::page;
use common::{record, Site};
use focuser_formats::urls;
use focuser_schema::models::QueryArg;
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

const HOST: &str = "odd.test";

#[test]
fn malformed_and_huge_query_strings_are_counted_and_the_rest_scored() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    server.set("*", "/robots.txt", Behaviour::status(404));
    let site = Site::with(
        db.url(),
        &format!(
            "Fetch.Resolve = {}\nFetch.AllowPrivate = 127.0.0.1\nFetch.HostDelay = 0\n\
             Fetch.ConnectTimeout = 2\nMultiDoc.Enable = 1\nQargfilter.ProbeShare = 0\n",
            server.resolve().join(" ")
        ),
    );
    let many: String = (0..100).map(|i| format!("a{i}=1&")).collect();
    let long = "n".repeat(300);
    let mut paths = vec![
        format!("/p?{many}x=1"),
        format!("/p?{many}x=2"),
        "/p?=&&%zz=%&&=x&%".to_string(),
        "/p?&&&".to_string(),
        format!("/p?{long}=1&k=1"),
        format!("/p?{long}=2&k=1"),
    ];
    // And ten pages that differ only in an ignored `ref`, for a score beside the bad ones.
    paths.push("/p?k=1".into());
    paths.extend((0..10).map(|i| format!("/p?k=1&ref=r{i}")));
    let mut records = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let i = if p.contains("k=1") { 0 } else { 10 + i };
        server.set(HOST, p, Behaviour::html(&page(i).1));
        let url = urls::normalize(&server.url(HOST, p), urls::MAX_URL_LENGTH).unwrap();
        records.push(record(&url.url, 1, ""));
    }
    site.queue("m1-0000000001.q", &records);
    site.once();
    site.once();

    let log = site.log();
    assert!(
        log.contains(
            "qargfilter: the pass left out 2 pages with more than 64 query arguments, 1 argument names longer than 255 bytes"
        ),
        "{log}"
    );
    let path = urls::path_hash(&records[0].url);
    let r = QueryArg::find(&mut db.conn(), path, "ref").unwrap();
    assert_eq!((r.pairs, r.equal_pairs), (10, 10), "{r:?}");
    assert!(QueryArg::find(&mut db.conn(), path, &long).is_err());
}
