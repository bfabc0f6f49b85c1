//! The feeds' update types and locations through `yacobot --once` (docs/formats.md "Update
//! types", "Locations"): INSERT, UPDATE1, UPDATE2 and UPDATE3 as the source's MysqlHandlerTask
//! has them, a location the list does not know, a bad location file, and a pending row with an
//! update type that none is.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::feeds::{ask, assert_consistent, resource_row, serve_sitemap, site, store};
use common::paths::{located_rules, placed_xml, resource_of, row, Placed};
use common::sql;
use focuser_formats::segment::Status;
use focuser_schema::models::{DataFrom, EmitStatus, FetchStatus, UpdateType};
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::{wait_for, TestDb};

const CLASS: u32 = 8;

fn serve(server: &WebServer, items: &[Placed<'_>]) {
    server.set(
        "loc.test",
        "/feed.xml",
        Behaviour::fixed(200, "application/xml", placed_xml(items)),
    );
}

fn placed<'a>(key: &'a str, title: &'a str, location: Option<&'a str>) -> Placed<'a> {
    Placed {
        key,
        title,
        location,
        tags: &[],
    }
}

/// A resource of five items: two in known places, one without a location, one in a place
/// the list does not know, one in a place the list will drop.
fn located(db: &TestDb, server: &WebServer) -> u32 {
    let c = &mut db.conn();
    located_rules(c, CLASS);
    let sitemap = serve_sitemap(server, "loc.test", &["/feed.xml"]);
    serve(
        server,
        &[
            placed("k0", "Zero", Some("北京")),
            placed("k1", "One", Some("上海")),
            placed("k2", "Two", None),
            placed("k3", "Three", Some("Atlantis")),
            placed("k4", "Four", Some(" 广州 ")),
        ],
    );
    resource_of(c, CLASS, "cities", &sitemap, DataFrom::PARTNER_FEED, 0)
}

#[test]
fn resources_insert_then_update1_update2_and_update3_as_the_source_has_them() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let id = located(&db, &server);
    let site = site(&db, &server, "Resources.LocationFile = locations.txt\n");
    let list = site.root().join("locations.txt");
    std::fs::write(&list, "# id name\n1 北京\n2 上海\n3 广州\n").unwrap();
    site.once();
    let c = &mut db.conn();
    let r = resource_row(c, id);
    assert_eq!(r.fetch_status, FetchStatus::Ok, "{:?}", r.fetch_detail);
    assert_eq!(
        r.fetch_detail.as_deref(),
        Some(
            "items: 5 new, 0 changed, 0 deleted, 0 unchanged, 0 failed keys\n\
             unknown locations: k3: \"Atlantis\""
        )
    );
    // INSERT: every row new, emitted, with its location and the id the list gives it.
    let place = |c: &mut _, k: &str| {
        let r = row(c, id, k);
        (r.loc_id, r.location, r.update_type, r.status)
    };
    let insert = (UpdateType::Insert, EmitStatus::Emitted);
    assert_eq!(place(c, "k0"), (Some(1), "北京".into(), insert.0, insert.1));
    assert_eq!(place(c, "k1"), (Some(2), "上海".into(), insert.0, insert.1));
    assert_eq!(place(c, "k2"), (None, "".into(), insert.0, insert.1));
    assert_eq!(
        place(c, "k3"),
        (None, "Atlantis".into(), insert.0, insert.1)
    );
    assert_eq!(place(c, "k4"), (Some(3), "广州".into(), insert.0, insert.1));
    assert!(
        site.log().contains("unknown locations: k3: \"Atlantis\""),
        "{}",
        site.log()
    );
    let first = store(&site).len();
    assert_eq!(first, 5);

    // k0 changes (UPDATE1); the list moves 上海 to 5 and learns Atlantis (UPDATE3) and
    // forgets 广州 (UPDATE2): those items are unchanged and emit nothing.
    serve(
        &server,
        &[
            placed("k0", "Zero again", Some("北京")),
            placed("k1", "One", Some("上海")),
            placed("k2", "Two", None),
            placed("k3", "Three", Some("Atlantis")),
            placed("k4", "Four", Some(" 广州 ")),
        ],
    );
    std::fs::write(&list, "1 北京\n5 上海\n7 Atlantis\n").unwrap();
    ask(c, id);
    site.once();
    let r = resource_row(c, id);
    assert_eq!(
        r.fetch_detail.as_deref(),
        Some(
            "locations: 1 dropped (UPDATE2), 2 changed (UPDATE3)\n\
             items: 0 new, 1 changed, 0 deleted, 4 unchanged, 0 failed keys\n\
             unknown locations: k4: \"广州\""
        ),
        "{}",
        site.log()
    );
    let emitted = EmitStatus::Emitted;
    assert_eq!(
        place(c, "k0"),
        (Some(1), "北京".into(), UpdateType::Update, emitted)
    );
    let kept = UpdateType::Unchanged;
    assert_eq!(place(c, "k1"), (Some(5), "上海".into(), kept, emitted));
    assert_eq!(place(c, "k3"), (Some(7), "Atlantis".into(), kept, emitted));
    assert_eq!(place(c, "k4"), (None, "广州".into(), kept, emitted));
    assert_eq!(
        place(c, "k2"),
        (None, "".into(), UpdateType::Insert, emitted)
    );
    let items = store(&site);
    assert_eq!(items.len(), first + 1, "UPDATE2 and UPDATE3 emit nothing");
    assert_eq!(items[first].status, Status::Update);
    assert_eq!(items[first].doc_id, row(c, id, "k0").doc_id);
    assert_consistent(c, &site, id);

    // The same again: nothing to relocate, nothing written.
    ask(c, id);
    site.once();
    assert_eq!(
        resource_row(c, id).fetch_detail.as_deref(),
        Some(
            "items: 0 new, 0 changed, 0 deleted, 5 unchanged, 0 failed keys\n\
             unknown locations: k4: \"广州\""
        )
    );
    assert_eq!(store(&site).len(), first + 1);
}

#[test]
fn resources_a_bad_location_file_stops_the_start_and_a_running_node_keeps_its_list() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let id = located(&db, &server);
    let site = site(&db, &server, "Resources.LocationFile = locations.txt\n");
    let list = site.root().join("locations.txt");
    std::fs::write(&list, "1 北京\nx 上海\n").unwrap();
    let out = site.command().arg("--once").output().unwrap();
    assert!(!out.status.success());
    let said = format!("{}{}", String::from_utf8_lossy(&out.stderr), site.log());
    assert!(
        said.contains("locations.txt:2: \"x\" is not a location id"),
        "{said}"
    );
    assert!(site
        .config_refused("a bad location list")
        .contains("Resources.LocationFile"));
    assert_eq!(
        resource_row(&mut db.conn(), id).fetch_status,
        FetchStatus::Never
    );

    // A running node: the good list is read at start; a bad one written meanwhile is refused
    // with its line, and the next run still places its items with the list in force.
    std::fs::write(&list, "1 北京\n2 上海\n").unwrap();
    let daemon = site.spawn();
    let c = &mut db.conn();
    wait_for("the first run", std::time::Duration::from_secs(30), || {
        resource_row(c, id).fetch_status == FetchStatus::Ok
    });
    std::fs::write(&list, "1 北京\n2 上海\n2 上海\n").unwrap();
    wait_for(
        "the bad list refused",
        std::time::Duration::from_secs(30),
        || site.log().contains("location list refused"),
    );
    assert!(site
        .log()
        .contains("locations.txt:3: \"上海\" is listed twice"));
    sql(
        &db,
        &format!("UPDATE vr_data SET loc_id = NULL WHERE res_id = {id}"),
    );
    ask(c, id);
    wait_for("the second run", std::time::Duration::from_secs(30), || {
        !resource_row(c, id).manual_update && row(c, id, "k1").loc_id.is_some()
    });
    daemon.stop();
    assert_eq!(row(c, id, "k0").loc_id, Some(1));
    assert_eq!(row(c, id, "k1").loc_id, Some(2));
}

#[test]
fn resources_a_pending_row_of_an_unknown_update_type_is_an_error_and_is_not_lost() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let id = located(&db, &server);
    let site = site(&db, &server, "");
    site.once();
    let c = &mut db.conn();
    let k1 = row(c, id, "k1");
    // A row an operator or another program left pending with an update type none is.
    sql(
        &db,
        &format!(
            "UPDATE vr_data SET status = 0, update_type = 9 WHERE id = {}",
            k1.id
        ),
    );
    ask(c, id);
    site.once();
    let log = site.log();
    assert!(
        log.contains(&format!(
            "vr_data row {} (key \"k1\") is pending with update_type 9",
            k1.id
        )),
        "{log}"
    );
    let after = row(c, id, "k1");
    assert_eq!(
        (after.status, after.update_type, after.md5_sum),
        (EmitStatus::Emitted, UpdateType::Unknown(9), k1.md5_sum)
    );
    assert_eq!(resource_row(c, id).fetch_status, FetchStatus::Ok);
    // Its item was in the store already: found there, not emitted twice, nothing lost.
    assert_eq!(store(&site).len(), 5);
    assert_consistent(c, &site, id);
}
