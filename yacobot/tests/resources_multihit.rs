//! Multi-hit classes and large resources through `yacobot --once` (docs/formats.md "Multi-hit
//! classes", "Large resources"): the items of a class from 70000000 on go to their own store
//! with their full-hit values in `vr_data.hit_field`, withdrawals included; a run that leaves
//! its resource large raises its priority to 2.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::feeds::{
    items, resource, resource_cmd, resource_row, rules, serve_feed, serve_sitemap, site, store,
};
use common::paths::{located_rules, placed_xml, resource_of, row, Placed};
use common::{archive_items, ArchivedItem};
use focuser_formats::segment::Status;
use focuser_schema::models::{DataFrom, FetchStatus, ResStatus};
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

const MULTI_HIT: u32 = 70_000_001;

fn multi_hit_store(site: &common::Site) -> Vec<ArchivedItem> {
    archive_items(&site.root().join("segments-vr-multihit"))
}

#[test]
fn resources_a_multi_hit_class_goes_to_its_own_store_with_its_hit_fields() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    located_rules(c, MULTI_HIT);
    let plain_map = serve_sitemap(&server, "plain.test", &["/feed.xml"]);
    serve_feed(&server, "plain.test", "/feed.xml", &items("p", 3));
    let plain = resource(c, "plain", &[("partner", plain_map)]);
    let mh_map = serve_sitemap(&server, "mh.test", &["/feed.xml"]);
    let feed = |beta: &str| {
        placed_xml(&[
            Placed {
                key: "m0",
                title: "Alpha",
                location: None,
                tags: &["red", "big  one"],
            },
            Placed {
                key: "m1",
                title: beta,
                location: None,
                tags: &[],
            },
        ])
    };
    server.set(
        "mh.test",
        "/feed.xml",
        Behaviour::fixed(200, "application/xml", feed("Beta")),
    );
    let mh = resource_of(c, MULTI_HIT, "mh", &mh_map, DataFrom::PARTNER_FEED, 0);
    let site = site(&db, &server, "");
    site.once();
    for id in [plain, mh] {
        let r = resource_row(c, id);
        assert_eq!(r.fetch_status, FetchStatus::Ok, "{:?}", r.fetch_detail);
    }
    // The ordinary store has the ordinary items only; the multi-hit one the others.
    let plain_docs: Vec<String> = ["p0", "p1", "p2"]
        .iter()
        .map(|k| row(c, plain, k).doc_id)
        .collect();
    let ordinary = store(&site);
    assert_eq!(ordinary.len(), 3);
    assert!(ordinary.iter().all(|i| plain_docs.contains(&i.doc_id)));
    let multi = multi_hit_store(&site);
    assert_eq!(multi.len(), 2, "{multi:#?}");
    let (m0, m1) = (row(c, mh, "m0"), row(c, mh, "m1"));
    assert_eq!(
        (multi[0].doc_id.as_str(), multi[0].status),
        (m0.doc_id.as_str(), Status::Update)
    );
    assert_eq!(Some(&multi[0].content), m0.content.as_ref());
    assert_eq!(multi[1].doc_id, m1.doc_id);
    // hit_field: the full-hit values in rule order, tab-separated; none for other classes.
    assert_eq!(m0.hit_field.as_deref(), Some("Alpha\tred\tbig one"));
    assert_eq!(m1.hit_field.as_deref(), Some("Beta"));
    assert_eq!(row(c, plain, "p0").hit_field, None);

    // A change goes to the multi-hit store too, and so does a withdrawal's DELETE items.
    server.set(
        "mh.test",
        "/feed.xml",
        Behaviour::fixed(200, "application/xml", feed("Beta 2")),
    );
    common::feeds::ask(c, mh);
    site.once();
    let multi = multi_hit_store(&site);
    assert_eq!(multi.len(), 3);
    assert_eq!(
        (multi[2].doc_id.as_str(), multi[2].status),
        (m1.doc_id.as_str(), Status::Update)
    );
    assert_eq!(row(c, mh, "m1").hit_field.as_deref(), Some("Beta 2"));
    let (code, out) = resource_cmd(&site, &["disable", "mh"]);
    assert_eq!(code, 0, "{out}");
    site.once();
    assert_eq!(resource_row(c, mh).res_status, ResStatus::Disabled);
    let multi = multi_hit_store(&site);
    assert_eq!(multi.len(), 5);
    let mut deleted: Vec<&str> = multi[3..]
        .iter()
        .inspect(|i| assert_eq!(i.status, Status::Delete))
        .map(|i| i.doc_id.as_str())
        .collect();
    deleted.sort();
    let mut want = vec![m0.doc_id.as_str(), m1.doc_id.as_str()];
    want.sort();
    assert_eq!(deleted, want);
    assert_eq!(
        store(&site).len(),
        3,
        "nothing of the multi-hit class in the ordinary store"
    );
}

#[test]
fn resources_a_large_resource_is_raised_to_priority_2() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let mut ids = Vec::new();
    for (name, n, priority) in [("big", 6, 0), ("small", 3, 0), ("first", 6, 7)] {
        let host = format!("{name}.test");
        let map = serve_sitemap(&server, &host, &["/feed.xml"]);
        serve_feed(&server, &host, "/feed.xml", &items(name, n));
        let id = resource(c, name, &[("partner", map)]);
        common::sql(
            &db,
            &format!("UPDATE vr_resource SET priority = {priority} WHERE id = {id}"),
        );
        ids.push(id);
    }
    let site = site(&db, &server, "Resources.LargeItems = 6\n");
    site.once();
    let priority: Vec<i32> = ids.iter().map(|&id| resource_row(c, id).priority).collect();
    // At least Resources.LargeItems live items: raised to 2, never lowered.
    assert_eq!(priority, [2, 0, 7], "{}", site.log());
    assert!(site
        .log()
        .contains("large (6 live items, Resources.LargeItems 6): priority raised to 2"));
}
