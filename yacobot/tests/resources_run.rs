//! Partner feeds through `yacobot --once` (docs/design.md#yacobot-resources): real MariaDB, real
//! libcurl against the local test HTTP server, the resources store read back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::feeds::{
    ask, assert_consistent, count, feed_xml, items, live, resource, resource_row, rules,
    serve_feed, serve_sitemap, serve_text, site, store, It,
};
use common::number;
use focuser_feed::doc_id::item_doc_id;
use focuser_formats::segment::Status;
use focuser_schema::models::{
    DataStatus, EmitStatus, FeedUrlStatus, FetchStatus, ProcessTimestamp, ResourceStatus,
    UpdateType, VrData, VrUpdateInfo,
};
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

/// A resource with two sources: `a` (a plain list of two feeds), `b` (an XML urlset of one).
fn two_sources(db: &TestDb, server: &WebServer) -> u32 {
    let c = &mut db.conn();
    rules(c);
    serve_text(
        server,
        "a.test",
        "/sitemap.txt",
        &format!(
            "  {}\r\n\n{}\n",
            server.url("a.test", "/f1.xml"),
            server.url("a.test", "/f2.xml")
        ),
    );
    server.set(
        "b.test",
        "/sitemap.xml",
        Behaviour::fixed(
            200,
            "text/xml",
            format!(
                "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>{}</loc></url></urlset>",
                server.url("b.test", "/f3.xml")
            ),
        ),
    );
    resource(
        c,
        "shop",
        &[
            ("a", server.url("a.test", "/sitemap.txt")),
            ("b", server.url("b.test", "/sitemap.xml")),
        ],
    )
}

#[test]
fn resources_two_sources_first_run_then_an_unchanged_run_emits_nothing() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let id = two_sources(&db, &server);
    serve_feed(&server, "a.test", "/f1.xml", &items("a", 10));
    serve_feed(&server, "a.test", "/f2.xml", &items("b", 10));
    serve_feed(&server, "b.test", "/f3.xml", &items("c", 10));
    let site = site(&db, &server, "");
    site.once();
    let c = &mut db.conn();
    let r = resource_row(c, id);
    assert_eq!(
        r.fetch_status,
        FetchStatus::Ok,
        "{:?}\n{}",
        r.fetch_detail,
        site.log()
    );
    assert_eq!(
        r.fetch_detail.as_deref(),
        Some("items: 30 new, 0 changed, 0 deleted, 0 unchanged, 0 failed keys")
    );
    assert!(r.last_fetch_time.is_some() && r.claimed_by.is_none());
    let rows = VrData::for_resource(c, id).unwrap();
    assert_eq!(rows.len(), 30);
    for row in &rows {
        assert_eq!(
            (row.data_status, row.status, row.update_type),
            (DataStatus::Live, EmitStatus::Emitted, UpdateType::Insert)
        );
        assert_eq!(row.doc_id, item_doc_id(id, &row.keyword));
    }
    let items1 = store(&site);
    assert_eq!(items1.len(), 30);
    assert_eq!(count(&items1, Status::Update), 30);
    assert!(items1
        .iter()
        .any(|i| i.url == server.url("b.test", "/f3.xml") && i.content.contains("Title c 3")));
    assert_consistent(c, &site, id);
    let run = &ProcessTimestamp::recent(c, id, 1).unwrap()[0];
    assert_eq!(
        (run.status, run.items, run.inserted),
        (FetchStatus::Ok, 30, 30)
    );
    assert!(run.fetch_start.is_some() && run.write_start.is_some() && run.write_end.is_some());
    let info = VrUpdateInfo::recent(c, id, 5).unwrap();
    assert_eq!(info.len(), 1);
    assert_eq!((info[0].last_item_count, info[0].item_count), (0, 30));
    let feeds = ResourceStatus::for_resource(c, id).unwrap();
    assert_eq!(feeds.len(), 3);
    assert!(feeds.iter().all(|f| f.res_status == FeedUrlStatus::Listed
        && f.items == 10
        && f.http_status == Some(200)));

    // The same feeds again, asked for (an automatic run would skip the unchanged sitemaps'
    // sync, but fetches the feeds all the same).
    let before = live(c, id);
    ask(c, id);
    site.once();
    let r = resource_row(c, id);
    assert_eq!(r.fetch_status, FetchStatus::Ok);
    assert!(!r.manual_update, "manual_update not cleared");
    assert_eq!(
        r.fetch_detail.as_deref(),
        Some("items: 0 new, 0 changed, 0 deleted, 30 unchanged, 0 failed keys")
    );
    assert_eq!(live(c, id), before);
    assert_eq!(store(&site), items1, "an unchanged run emitted something");
    assert_eq!(VrUpdateInfo::recent(c, id, 5).unwrap().len(), 1);
    assert_eq!(
        number(
            &db,
            &format!("SELECT COUNT(*) AS n FROM process_timestamp WHERE res_id = {id}")
        ),
        2
    );
}

#[test]
fn resources_changed_feed_gives_exactly_its_updates_deletes_and_inserts() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let id = two_sources(&db, &server);
    let mut f1 = items("a", 10);
    serve_feed(&server, "a.test", "/f1.xml", &f1);
    serve_feed(&server, "a.test", "/f2.xml", &items("b", 10));
    serve_feed(&server, "b.test", "/f3.xml", &items("c", 10));
    let site = site(&db, &server, "");
    site.once();
    let c = &mut db.conn();
    assert_eq!(live(c, id).len(), 30);
    let first = store(&site).len();

    // 3 modified (one only in its white space and CDATA: the same item), 2 removed, 1 added.
    for it in f1.iter_mut().take(3) {
        it.2 = "1000.00".into();
    }
    f1[3].1 = format!("<![CDATA[  {}  ]]>", f1[3].1);
    f1.truncate(8);
    f1.push(("a-new".into(), "Brand new".into(), "5".into()));
    serve_feed(&server, "a.test", "/f1.xml", &f1);
    ask(c, id);
    site.once();
    let r = resource_row(c, id);
    assert_eq!(r.fetch_status, FetchStatus::Ok, "{:?}", r.fetch_detail);
    assert_eq!(
        r.fetch_detail.as_deref(),
        Some("items: 1 new, 3 changed, 2 deleted, 25 unchanged, 0 failed keys")
    );
    let all = store(&site);
    let new: Vec<_> = all[first..].to_vec();
    assert_eq!(new.len(), 6, "{new:#?}");
    let doc = |k: &str| item_doc_id(id, k);
    let updates: Vec<&str> = new
        .iter()
        .filter(|i| i.status == Status::Update)
        .map(|i| i.doc_id.as_str())
        .collect();
    let mut want: Vec<String> = vec![doc("a0"), doc("a1"), doc("a2"), doc("a-new")];
    want.sort();
    let mut got: Vec<String> = updates.iter().map(|s| s.to_string()).collect();
    got.sort();
    assert_eq!(got, want);
    let mut deletes: Vec<&str> = new
        .iter()
        .filter(|i| i.status == Status::Delete)
        .map(|i| i.doc_id.as_str())
        .collect();
    deletes.sort();
    let mut want_del = vec![doc("a8"), doc("a9")];
    want_del.sort();
    assert_eq!(deletes, want_del);
    let rows = VrData::for_resource(c, id).unwrap();
    let row = |k: &str| rows.iter().find(|r| r.keyword == k).unwrap();
    assert_eq!(
        (row("a0").update_type, row("a0").data_status),
        (UpdateType::Update, DataStatus::Live)
    );
    assert_eq!(
        (row("a9").update_type, row("a9").data_status),
        (UpdateType::Delete, DataStatus::Deleted)
    );
    assert_eq!(
        (row("a-new").update_type, row("a-new").data_status),
        (UpdateType::Insert, DataStatus::Live)
    );
    assert_eq!(
        row("a3").update_type,
        UpdateType::Insert,
        "white space and CDATA changed the item"
    );
    let run = &ProcessTimestamp::recent(c, id, 1).unwrap()[0];
    assert_eq!((run.inserted, run.updated, run.deleted), (1, 3, 2));
    let info = &VrUpdateInfo::recent(c, id, 1).unwrap()[0];
    assert_eq!((info.last_item_count, info.item_count), (30, 29));
    assert_consistent(c, &site, id);

    // A deleted item that comes back is live again and emitted again.
    let mut back = f1.clone();
    back.extend(items("a", 10).into_iter().skip(9));
    serve_feed(&server, "a.test", "/f1.xml", &back);
    ask(c, id);
    site.once();
    let rows = VrData::for_resource(c, id).unwrap();
    let a9 = rows.iter().find(|r| r.keyword == "a9").unwrap();
    assert_eq!(
        (a9.data_status, a9.update_type),
        (DataStatus::Live, UpdateType::Insert)
    );
    assert_consistent(c, &site, id);
}

#[test]
fn resources_safety_valve_shrunk_feed_and_failed_keys_delete_nothing() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let sitemap = serve_sitemap(&server, "v.test", &["/feed.xml"]);
    let id = resource(c, "valve", &[("partner", sitemap)]);
    let full = items("k", 100);
    serve_feed(&server, "v.test", "/feed.xml", &full);
    let site = site(&db, &server, "");
    site.once();
    assert_eq!(live(c, id).len(), 100);
    let emitted = store(&site).len();

    // Shrunk to 10 %.
    serve_feed(&server, "v.test", "/feed.xml", &full[..10]);
    ask(c, id);
    site.once();
    let r = resource_row(c, id);
    assert_eq!(r.fetch_status, FetchStatus::Error);
    let detail = r.fetch_detail.unwrap();
    assert!(
        detail.starts_with(
            "error: safety valve: 10 items, fewer than 20 % of the previous run's 100; nothing deleted"
        ),
        "{detail}"
    );
    assert!(detail.contains("90 kept though missing"), "{detail}");
    assert_eq!(live(c, id).len(), 100);
    assert_eq!(store(&site).len(), emitted, "a valve run emitted deletes");
    assert!(!r.manual_update);

    // 85 % lose their key.
    let keyless: String = feed_xml(&full)
        .replacen("<id>", "<ident>", 85)
        .replacen("</id>", "</ident>", 85);
    server.set(
        "v.test",
        "/feed.xml",
        Behaviour::fixed(200, "text/xml", keyless),
    );
    ask(c, id);
    site.once();
    let r = resource_row(c, id);
    assert_eq!(r.fetch_status, FetchStatus::Error);
    let detail = r.fetch_detail.unwrap();
    assert!(
        detail.starts_with(
            "error: safety valve: 85 of 100 items failed validation, more than 80 %; nothing deleted"
        ),
        "{detail}"
    );
    assert!(
        detail.contains("failed keys (first 20 of 85): item 1 (line 3): no key \"id\""),
        "{detail}"
    );
    assert_eq!(live(c, id).len(), 100);
    assert_eq!(store(&site).len(), emitted);
    let run = &ProcessTimestamp::recent(c, id, 1).unwrap()[0];
    assert_eq!(
        (run.status, run.failed_keys, run.deleted),
        (FetchStatus::Error, 85, 0)
    );
    assert_consistent(c, &site, id);
}

#[test]
fn resources_sitemap_errors_are_reported_per_source_and_the_others_go_on() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let long = format!("http://s.test/{}", "x".repeat(241));
    serve_text(
        &server,
        "s.test",
        "/nothttp.txt",
        &format!(
            "{}\nftp://s.test/f.xml\n",
            server.url("s.test", "/feed.xml")
        ),
    );
    serve_text(&server, "s.test", "/long.txt", &format!("{long}\n"));
    serve_text(&server, "s.test", "/empty.txt", " \r\n\n");
    server.set("s.test", "/down.txt", Behaviour::status(503));
    serve_text(
        &server,
        "s.test",
        "/good.txt",
        &server.url("s.test", "/feed.xml"),
    );
    serve_feed(&server, "s.test", "/feed.xml", &items("g", 5));
    let id = resource(
        c,
        "errors",
        &[
            ("not-http", server.url("s.test", "/nothttp.txt")),
            ("too-long", server.url("s.test", "/long.txt")),
            ("blank", server.url("s.test", "/empty.txt")),
            ("unreachable", server.url("s.test", "/down.txt")),
            ("good", server.url("s.test", "/good.txt")),
        ],
    );
    let site = site(&db, &server, "");
    site.once();
    let r = resource_row(c, id);
    assert_eq!(r.fetch_status, FetchStatus::Error);
    let d = r.fetch_detail.unwrap();
    for want in [
        "source \"not-http\": ",
        "line 2 does not start with http: \"ftp://s.test/f.xml\"",
        "source \"too-long\": ",
        "line 1 is 255 bytes long",
        "source \"blank\": ",
        "the sitemap is empty",
        "source \"unreachable\": the sitemap ",
        "could not be fetched",
        "items: 5 new",
    ] {
        assert!(d.contains(want), "{want:?} not in:\n{d}");
    }
    assert_eq!(live(c, id).len(), 5);
    assert_consistent(c, &site, id);
}

#[test]
fn resources_unchanged_sitemap_skipped_on_an_automatic_run_processed_on_a_manual_one() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let sitemap = serve_sitemap(&server, "u.test", &["/feed.xml"]);
    serve_feed(&server, "u.test", "/feed.xml", &items("k", 20));
    serve_feed(&server, "u.test", "/extra.xml", &items("x", 2));
    let id = resource(c, "unchanged", &[("partner", sitemap)]);
    let site = site(&db, &server, "");
    site.once();
    assert_eq!(live(c, id).len(), 20);
    // A feed URL the sitemap does not list (an operator's, or one a sitemap used to list).
    let ds = ResourceStatus::for_resource(c, id).unwrap()[0].data_source_id;
    focuser_schema::models::NewResourceStatus {
        res_id: id,
        data_source_id: ds,
        url: &server.url("u.test", "/extra.xml"),
        res_status: FeedUrlStatus::Listed,
    }
    .insert(c)
    .unwrap();

    // Automatic: the sitemap did not change, so resource_status is left as it is.
    site.once();
    let r = resource_row(c, id);
    let d = r.fetch_detail.unwrap();
    assert_eq!(r.fetch_status, FetchStatus::Ok, "{d}");
    assert!(
        d.contains("source \"partner\": sitemap unchanged, skipped"),
        "{d}"
    );
    assert_eq!(live(c, id).len(), 22);

    // Manual: processed; the unlisted URL is retired and its items deleted.
    ask(c, id);
    site.once();
    let r = resource_row(c, id);
    let d = r.fetch_detail.unwrap();
    assert!(!r.manual_update);
    assert!(!d.contains("skipped"), "{d}");
    assert!(
        d.contains("items: 0 new, 0 changed, 2 deleted, 20 unchanged"),
        "{d}"
    );
    assert_eq!(live(c, id).len(), 20);
    let extra = ResourceStatus::find_by_url(c, id, &server.url("u.test", "/extra.xml")).unwrap();
    assert_eq!(extra.res_status, FeedUrlStatus::Retired);
    assert_consistent(c, &site, id);
}

#[test]
fn resources_bad_feeds_give_clear_errors_and_good_ones_their_items() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let h = "x.test";
    let feeds = ["broken", "truncated", "big", "utf8", "gbk"];
    let list: Vec<String> = feeds
        .iter()
        .map(|f| server.url(h, &format!("/{f}.xml")))
        .collect();
    serve_text(&server, h, "/sitemap.txt", &list.join("\n"));
    server.set(
        h,
        "/broken.xml",
        Behaviour::fixed(
            200,
            "text/xml",
            "<items><item><id>1</id><title>t</titel></item></items>",
        ),
    );
    // Cut after a whole item: only the missing end tags tell.
    let cut = feed_xml(&items("t", 5)).replace("</items>\n", "");
    server.set(h, "/truncated.xml", Behaviour::fixed(200, "text/xml", cut));
    // 50 MB: 50 000 items of about 1 000 bytes.
    let big: Vec<It> = (0..50_000)
        .map(|i| {
            (
                format!("big{i}"),
                format!("{i} {}", "w".repeat(950)),
                "1".into(),
            )
        })
        .collect();
    let big_xml = feed_xml(&big);
    assert!(big_xml.len() > 50_000_000);
    server.set(
        h,
        "/big.xml",
        Behaviour::fixed(200, "application/xml", big_xml),
    );
    let mut bad = feed_xml(&items("u", 3)).into_bytes();
    let at = bad.len() / 2;
    bad[at] = 0xff;
    server.set(h, "/utf8.xml", Behaviour::fixed(200, "text/xml", bad));
    let gbk_text = "<?xml version=\"1.0\" encoding=\"GBK\"?><items><item><id>中文1</id><title>北京烤鸭</title><price>88</price></item></items>";
    let (gbk, _, _) = encoding_rs::GBK.encode(gbk_text);
    server.set(
        h,
        "/gbk.xml",
        Behaviour::fixed(200, "text/xml", gbk.into_owned()),
    );
    let id = resource(
        c,
        "bad-feeds",
        &[("partner", server.url(h, "/sitemap.txt"))],
    );
    let site = site(&db, &server, "");
    site.once();
    let r = resource_row(c, id);
    assert_eq!(r.fetch_status, FetchStatus::Error);
    let d = r.fetch_detail.unwrap();
    let broken = server.url(h, "/broken.xml");
    let truncated = server.url(h, "/truncated.xml");
    let utf8 = server.url(h, "/utf8.xml");
    for want in [
        format!("source \"partner\", {broken}: the feed is not well-formed XML"),
        format!("source \"partner\", {truncated}: the feed ends inside"),
        format!("source \"partner\", {utf8}: "),
        "are not valid UTF-8".to_string(),
        "items: 50001 new".to_string(),
    ] {
        assert!(d.contains(&want), "{want:?} not in:\n{d}");
    }
    let rows = VrData::for_resource(c, id).unwrap();
    assert_eq!(rows.len(), 50_001);
    let duck = rows.iter().find(|r| r.keyword == "中文1").unwrap();
    assert!(duck.content.as_ref().unwrap().contains("北京烤鸭"));
    let feeds_rows = ResourceStatus::for_resource(c, id).unwrap();
    let f = |u: &str| feeds_rows.iter().find(|r| r.url == u).unwrap();
    assert!(f(&broken)
        .error
        .as_ref()
        .unwrap()
        .contains("not well-formed"));
    assert_eq!(f(&server.url(h, "/big.xml")).items, 50_000);
}
