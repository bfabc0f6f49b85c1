//! Probes (docs/design.md#yacobot-qargfilter, "Probes") through the real binary: `sid` never
//! changes alone on a site's items (each item has its own), so qargfilter asks for probe URLs —
//! an item without its `sid` — at most `ProbesPerArg`; the crawler fetches them within
//! `ProbeShare` of its due URLs; analysed, they give `sid` its pairs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::multidoc::page;
use common::{number, record, Site};
use focuser_formats::urls;
use focuser_schema::models::QueryArg;
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

const HOST: &str = "shop.test";
const ITEMS: usize = 8;
/// Due pages brought by each queue file.
const DUE: usize = 40;

fn probes(db: &TestDb, taken: bool) -> i64 {
    let is = if taken { "IS NOT NULL" } else { "IS NULL" };
    number(
        db,
        &format!("SELECT COUNT(*) AS n FROM query_arg_probe WHERE taken_at {is}"),
    )
}

#[test]
fn probes_are_queued_within_bounds_fetched_within_their_share_and_give_evidence() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    server.set("*", "/robots.txt", Behaviour::status(404));
    let site = Site::with(
        db.url(),
        &format!(
            "Fetch.Resolve = {}\nFetch.AllowPrivate = 127.0.0.1\nFetch.HostDelay = 0\n\
             Fetch.ConnectTimeout = 2\nMultiDoc.Enable = 1\nMultiDoc.Batch = 16\n\
             Qargfilter.ProbeShare = 0.05\nQargfilter.ProbesPerArg = 4\nQargfilter.MinPairs = 4\n",
            server.resolve().join(" ")
        ),
    );
    let url = |path: &str| {
        urls::normalize(&server.url(HOST, path), urls::MAX_URL_LENGTH)
            .unwrap()
            .url
    };
    // The items: an item's page is the same with or without its sid.
    let mut items = Vec::new();
    for k in 0..ITEMS {
        let html = page(k).1;
        server.set(HOST, &format!("/item?story={k}"), Behaviour::html(&html));
        server.set(
            HOST,
            &format!("/item?story={k}&sid=x{k}"),
            Behaviour::html(&html),
        );
        items.push(url(&format!("/item?story={k}&sid=x{k}")));
    }
    let mut file = 0;
    let mut due = |from: usize| {
        file += 1;
        let records: Vec<_> = (from..from + DUE)
            .map(|i| {
                server.set(
                    HOST,
                    &format!("/about/{i}"),
                    Behaviour::html(&page(100 + i).1),
                );
                record(&url(&format!("/about/{i}")), 1, "")
            })
            .collect();
        site.queue(&format!("m1-{file:010}.q"), &records);
    };

    // 1. The items and 40 pages: no evidence about sid (nor story), no probe yet.
    site.queue(
        "m1-0000000000.q",
        &items.iter().map(|u| record(u, 1, "")).collect::<Vec<_>>(),
    );
    due(0);
    site.once();
    assert_eq!(probes(&db, false) + probes(&db, true), 0);

    // 2. The pass asks for probes: sid first (story ties with it and comes after), four at
    //    most on the path. The crawl of 40 due pages takes 5 % of 40: two of them.
    due(100);
    site.once();
    assert_eq!(probes(&db, true), 2, "{}", site.log());
    assert_eq!(probes(&db, false), 2);
    let probe_urls = number(
        &db,
        &format!(
            "SELECT COUNT(*) AS n FROM url WHERE path_hash = {} AND url NOT LIKE '%sid=%' \
             AND last_downloaded IS NOT NULL",
            urls::path_hash(&items[0])
        ),
    );
    assert_eq!(probe_urls, 2, "the probes fetched: items without their sid");

    // 3. Two more for sid, none past its four; story's turn.
    due(200);
    site.once();
    assert_eq!(probes(&db, true), 4, "{}", site.log());
    let sid = number(
        &db,
        "SELECT COUNT(*) AS n FROM query_arg_probe WHERE name = 'sid'",
    );
    assert_eq!(sid, 4);

    // 4. The four probes analysed: sid has its pairs, the same main text each time.
    due(300);
    site.once();
    let q = QueryArg::find(&mut db.conn(), urls::path_hash(&items[0]), "sid").unwrap();
    assert_eq!((q.pairs, q.equal_pairs), (4, 4), "{q:?}");
    assert_eq!(
        number(
            &db,
            "SELECT COUNT(*) AS n FROM query_arg_probe WHERE name = 'sid'"
        ),
        0,
        "an argument scored has no probes left"
    );
    // Within the share all along: 5 % of the due pages claimed by each run.
    let fetched_probes = number(
        &db,
        &format!(
            "SELECT COUNT(*) AS n FROM url WHERE path_hash = {} AND hits = 0 \
             AND url NOT LIKE '%story=%&sid=%' AND last_downloaded IS NOT NULL",
            urls::path_hash(&items[0])
        ),
    );
    assert!(fetched_probes <= (4 * DUE / 20) as i64, "{fetched_probes}");
}
