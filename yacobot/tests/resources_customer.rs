//! Customer resources through `yacobot --once` (docs/formats.md "Customer resources"): a
//! resource of `data_from = 4` reads its rows in the customer's own GBK database and writes
//! each run's outcome into them, in GBK; a row that is not GBK, or a customer database that is
//! not there, is an error of the run, counted, and its items are written all the same.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::customer::CustomerDb;
use common::feeds::{ask, live, resource_row, rules, serve_feed, serve_sitemap, site, store, It};
use common::paths::resource_of;
use common::Site;
use focuser_schema::models::{DataFrom, FetchStatus};
use focuser_tests::web::WebServer;
use focuser_tests::TestDb;

fn gbk(s: &str) -> Vec<u8> {
    let (b, _, bad) = encoding_rs::GBK.encode(s);
    assert!(!bad);
    b.into_owned()
}

/// Three good items and one whose key is Chinese and has no title (a failed key, quoted in
/// the report the customer gets).
fn feed(extra: usize) -> Vec<It> {
    let mut v: Vec<It> = (0..3 + extra)
        .map(|i| (format!("c{i}"), format!("Title {i}"), "1".into()))
        .collect();
    v.push(("钥匙".into(), String::new(), "1".into()));
    v
}

fn customer_resource(db: &TestDb, server: &WebServer) -> u32 {
    let c = &mut db.conn();
    rules(c);
    let map = serve_sitemap(server, "cust.test", &["/feed.xml"]);
    serve_feed(server, "cust.test", "/feed.xml", &feed(0));
    resource_of(c, common::feeds::CLASS, "cust", &map, DataFrom::CUSTOMER, 0)
}

const REPORT: &str = "items: 3 new, 0 changed, 0 deleted, 0 unchanged, 1 failed keys\n\
                      failed keys: 钥匙: no \"title\" (required)";

#[test]
fn resources_a_customer_resource_reads_its_gbk_rows_and_writes_its_outcome_in_gbk() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let id = customer_resource(&db, &server);
    let cust = CustomerDb::new(&db);
    let row = cust.row(id, &gbk("北京饭店"));
    let other = cust.row(id + 1, &gbk("别的"));
    let site = site(
        &db,
        &server,
        &format!("Resources.CustomerDatabase = {}\n", cust.url),
    );
    site.once();
    let c = &mut db.conn();
    let r = resource_row(c, id);
    assert_eq!(r.fetch_status, FetchStatus::Ok, "{:?}", r.fetch_detail);
    assert_eq!(
        r.fetch_detail.as_deref(),
        Some(format!("customer \"北京饭店\" (row {row})\n{REPORT}").as_str())
    );
    let (status, items, detail, stamped) = cust.read(row);
    assert_eq!((status, items, stamped), (1, 3, true));
    assert_eq!(detail, gbk(REPORT), "{}", String::from_utf8_lossy(&detail));
    assert_eq!(
        cust.read(other),
        (0, 0, Vec::new(), false),
        "another resource's row"
    );
    // What the customer's own programs read: the server converts the gbk column as usual.
    #[derive(diesel::QueryableByName)]
    struct Text {
        #[diesel(sql_type = diesel::sql_types::Text)]
        t: String,
    }
    let read: Text = diesel::RunQueryDsl::get_result(
        diesel::sql_query(format!(
            "SELECT fetch_detail AS t FROM customer_resource WHERE id = {row}"
        )),
        &mut cust.conn(),
    )
    .unwrap();
    assert_eq!(read.t, REPORT);
}

#[test]
fn resources_a_row_not_gbk_or_a_customer_database_down_is_an_error_and_loses_nothing() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let id = customer_resource(&db, &server);
    let cust = CustomerDb::new(&db);
    // A legacy table keeping its names as bytes, one of which is not GBK.
    cust.exec("ALTER TABLE customer_resource MODIFY res_name VARBINARY(255) NOT NULL");
    let good = cust.row(id, &gbk("北京饭店"));
    let bad = cust.row(id, b"\xB1\xB1\xFF\x41");
    let site = site(
        &db,
        &server,
        &format!("Resources.CustomerDatabase = {}\n", cust.url),
    );
    site.once();
    let c = &mut db.conn();
    let r = resource_row(c, id);
    let detail = r.fetch_detail.clone().unwrap_or_default();
    assert_eq!(r.fetch_status, FetchStatus::Error, "{detail}");
    assert!(
        detail.contains(&format!(
            "customer database: customer_resource row {bad}: res_name: the bytes at offset 2 are not valid GBK"
        )),
        "{detail}"
    );
    assert!(detail.contains(&format!("customer \"北京饭店\" (row {good})")));
    assert!(site.log().contains(&format!(
        "resource {id}: customer database: customer_resource row {bad}"
    )));
    // Nothing else lost: both rows have the run, the items are written and emitted.
    for row in [good, bad] {
        let (status, items, text, _) = cust.read(row);
        assert_eq!((status, items, text), (1, 3, gbk(REPORT)));
    }
    assert_eq!(live(c, id).len(), 3);
    assert_eq!(store(&site).len(), 3);

    // The customer database down: the run is an error saying so, its items are written.
    let port = focuser_tests::free_port();
    set_customer_database(&site, &format!("mysql://nobody:x@127.0.0.1:{port}/gone"));
    serve_feed(&server, "cust.test", "/feed.xml", &feed(1));
    ask(c, id);
    site.once();
    let r = resource_row(c, id);
    let detail = r.fetch_detail.clone().unwrap_or_default();
    assert_eq!(r.fetch_status, FetchStatus::Error, "{detail}");
    assert!(
        detail.contains("customer database: cannot connect"),
        "{detail}"
    );
    assert!(
        !detail.contains("nobody:x"),
        "the password is not shown: {detail}"
    );
    assert_eq!(live(c, id).len(), 4);
    assert_eq!(store(&site).len(), 4);
    assert_eq!(cust.read(good).1, 3, "the row keeps the last run it got");

    // None configured: the same.
    set_customer_database(&site, "");
    ask(c, id);
    site.once();
    let detail = resource_row(c, id).fetch_detail.unwrap_or_default();
    assert!(
        detail.contains("Resources.CustomerDatabase is not set"),
        "{detail}"
    );
}

/// Rewrites the `Resources.CustomerDatabase` line of the site's config (empty: none).
fn set_customer_database(site: &Site, url: &str) {
    let text = std::fs::read_to_string(&site.config).unwrap();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with("Resources.CustomerDatabase"))
        .map(str::to_string)
        .collect();
    if !url.is_empty() {
        lines.push(format!("Resources.CustomerDatabase = {url}"));
    }
    std::fs::write(&site.config, lines.join("\n") + "\n").unwrap();
}
