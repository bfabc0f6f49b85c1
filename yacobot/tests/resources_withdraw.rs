//! Withdrawing a partner feed (the source's DeleteTask; docs/formats.md "Withdrawing a
//! resource") through the real binary: `yacobot resource disable|enable|remove`, a
//! `res_status` set by hand, and bad commands (the crashes: resources_withdraw_crash.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::feeds::{
    ask, assert_consistent, count, items, live, resource_cmd, resource_row, rules, serve_feed,
    site, store,
};
use common::withdraw::{assert_one_delete_each, fed, live_docs};
use common::{number, sql};
use focuser_formats::segment::Status;
use focuser_schema::models::{
    DataStatus, FetchStatus, ProcessTimestamp, ResStatus, UpdateType, VrData, VrResource,
    VrUpdateInfo,
};
use focuser_tests::web::WebServer;
use focuser_tests::TestDb;

#[test]
fn resources_disable_withdraws_each_live_item_once_and_enable_brings_them_back() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let site = site(&db, &server, "");
    let id = fed(&db, &server, &site, "shop", 40);
    // Two items leave the feed: their DELETE items are the run's, not the withdrawal's.
    serve_feed(&server, "shop.test", "/feed.xml", &items("shop", 38));
    ask(c, id);
    site.once();
    let docs = live_docs(c, id);
    assert_eq!(docs.len(), 38);
    let before = store(&site);
    assert_eq!(count(&before, Status::Delete), 2);

    let (code, out) = resource_cmd(&site, &["disable", "shop"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("withdrawal asked for") && out.contains("each of its 38 live items"),
        "{out}"
    );
    assert_eq!(resource_row(c, id).res_status, ResStatus::Withdrawing);
    let (_, out) = resource_cmd(&site, &["show", "shop"]);
    assert!(out.contains("being withdrawn"), "{out}");
    site.once();
    let after = store(&site);
    let withdrawn = &after[before.len()..];
    assert_one_delete_each(withdrawn, &docs);
    assert!(withdrawn.iter().all(|i| i.url.ends_with("/feed.xml")));
    let r = resource_row(c, id);
    assert_eq!(r.res_status, ResStatus::Disabled);
    assert_eq!(r.fetch_status, FetchStatus::Ok);
    assert_eq!(r.claimed_by, None);
    let detail = r.fetch_detail.unwrap_or_default();
    assert!(detail.contains("withdrawn: 38 live items"), "{detail}");
    assert!(live(c, id).is_empty());
    assert!(VrData::for_resource(c, id)
        .unwrap()
        .iter()
        .all(|d| d.data_status == DataStatus::Deleted));
    assert!(VrData::for_resource(c, id)
        .unwrap()
        .iter()
        .filter(|d| docs.contains(&d.doc_id))
        .all(|d| d.update_type == UpdateType::Delete));
    assert_consistent(c, &site, id);
    let run = &ProcessTimestamp::recent(c, id, 1).unwrap()[0];
    assert_eq!((run.status, run.deleted), (FetchStatus::Ok, 38));
    assert!(run.write_end.is_some() && !run.is_manual);
    let change = &VrUpdateInfo::recent(c, id, 1).unwrap()[0];
    assert_eq!((change.last_item_count, change.item_count), (38, 0));
    let digests = site.root().join(format!("segments-vr/digests/{id}.dig"));
    assert!(
        !digests.exists(),
        "a withdrawn resource's digest file stays"
    );

    // Nothing more at the next scans: it is disabled, and every DELETE is out.
    site.once();
    assert_eq!(store(&site).len(), after.len());

    // enable: its next run (asked for) brings the items back as UPDATE items.
    let (code, out) = resource_cmd(&site, &["enable", "1"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("come back as UPDATE items"), "{out}");
    assert!(resource_row(c, id).manual_update);
    site.once();
    let back = &store(&site)[after.len()..];
    assert_eq!(back.len(), 38, "{}", site.log());
    assert!(back.iter().all(|i| i.status == Status::Update));
    let back_docs: BTreeSet<String> = back.iter().map(|i| i.doc_id.clone()).collect();
    assert_eq!(back_docs, docs);
    assert_eq!(live_docs(c, id), docs);
    assert_consistent(c, &site, id);
    let r = resource_row(c, id);
    assert_eq!(
        (r.res_status, r.fetch_status),
        (ResStatus::Enabled, FetchStatus::Ok)
    );
    assert!(!r.manual_update);

    // A res_status set by hand (SQL, another tool) is withdrawn the same.
    let mark = store(&site).len();
    sql(
        &db,
        &format!("UPDATE vr_resource SET res_status = 2 WHERE id = {id}"),
    );
    site.once();
    assert_one_delete_each(&store(&site)[mark..], &docs);
    assert_eq!(resource_row(c, id).res_status, ResStatus::Disabled);
    assert_consistent(c, &site, id);
}

#[test]
fn resources_remove_withdraws_then_deletes_the_resource_and_its_rows() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let site = site(&db, &server, "");
    let gone = fed(&db, &server, &site, "gone", 20);
    let kept = fed(&db, &server, &site, "kept", 5);
    let docs = live_docs(c, gone);
    let start = store(&site).len();

    let (code, out) = resource_cmd(&site, &["remove", "gone"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("removal asked for") && out.contains("20 live items"),
        "{out}"
    );
    site.once();
    assert_one_delete_each(&store(&site)[start..], &docs);
    assert!(VrResource::find(c, gone).is_err(), "the resource stays");
    for table in [
        "vr_data",
        "resource_status",
        "vr_open_datasource",
        "process_timestamp",
        "vr_update_info",
    ] {
        let n = number(
            &db,
            &format!("SELECT COUNT(*) AS n FROM {table} WHERE res_id = {gone}"),
        );
        assert_eq!(n, 0, "{table} keeps rows of the removed resource");
    }
    assert!(!site
        .root()
        .join(format!("segments-vr/digests/{gone}.dig"))
        .exists());
    assert!(site
        .root()
        .join(format!("segments-vr/digests/{kept}.dig"))
        .exists());
    assert_eq!(live(c, kept).len(), 5);
    assert_eq!(resource_row(c, kept).res_status, ResStatus::Enabled);
    assert!(site
        .log()
        .contains("removed: 20 live items deleted downstream"));

    let (code, out) = resource_cmd(&site, &["remove", "gone"]);
    assert!(code == 1 && out.contains("no resource \"gone\""), "{out}");
    let (code, out) = resource_cmd(&site, &["show", &gone.to_string()]);
    assert!(code == 1 && out.contains("no resource"), "{out}");
}

#[test]
fn resources_withdrawal_commands_refuse_bad_input_and_change_nothing() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let c = &mut db.conn();
    rules(c);
    let site = site(&db, &server, "");
    let id = fed(&db, &server, &site, "shop", 3);
    let old = fed(&db, &server, &site, "old", 2);
    let src = format!("p={}", server.url("shop.test", "/sitemap.txt"));
    let refused = |args: &[&str], code: i32, want: &str| {
        let c = &mut db.conn();
        let before = (VrResource::all(c).unwrap(), store(&site).len());
        let (got, out) = resource_cmd(&site, args);
        assert_eq!(got, code, "{args:?}: {out}");
        assert!(out.contains(want), "{args:?}: {want:?} not in {out}");
        let after = (VrResource::all(c).unwrap(), store(&site).len());
        assert_eq!(before, after, "{args:?} changed something");
    };
    refused(&["disable", "nosuch"], 1, "no resource \"nosuch\"");
    refused(&["disable", "999"], 1, "no resource \"999\"");
    refused(&["enable", "nosuch"], 1, "no resource \"nosuch\"");
    refused(&["remove", "nosuch"], 1, "no resource \"nosuch\"");
    refused(&["enable", "shop"], 1, "already enabled: nothing changed");
    refused(&["disable"], 2, "required arguments were not provided");
    refused(&["disable", "shop", "old"], 2, "unexpected argument 'old'");
    refused(
        &["remove", "--now", "shop"],
        2,
        "unexpected argument '--now'",
    );
    refused(
        &["withdraw", "shop"],
        2,
        "unrecognized subcommand 'withdraw'",
    );

    let (code, out) = resource_cmd(&site, &["disable", "shop"]);
    assert_eq!(code, 0, "{out}");
    refused(
        &["disable", "shop"],
        1,
        "already being withdrawn (3 live items left)",
    );
    site.once();
    assert_eq!(resource_row(c, id).res_status, ResStatus::Disabled);
    refused(
        &["disable", &id.to_string()],
        1,
        "already disabled: nothing changed",
    );

    // Disabled before withdrawals existed, with its items live: disable withdraws them.
    sql(
        &db,
        &format!("UPDATE vr_resource SET res_status = 0 WHERE id = {old}"),
    );
    let (code, out) = resource_cmd(&site, &["disable", "old"]);
    assert!(
        code == 0 && out.contains("each of its 2 live items"),
        "{out}"
    );

    let (code, out) = resource_cmd(&site, &["remove", "shop"]);
    assert_eq!(code, 0, "{out}");
    refused(
        &["remove", "shop"],
        1,
        "already being removed: nothing changed",
    );
    refused(&["enable", "shop"], 1, "is being removed: nothing changed");
    refused(&["disable", "shop"], 1, "is being removed: nothing changed");
    refused(
        &["add", "shop", "--class", "7", "--source", &src],
        1,
        "is being removed",
    );
    let (_, out) = resource_cmd(&site, &["list"]);
    assert!(
        out.lines()
            .any(|l| l.contains("shop") && l.contains("removing"))
            && out
                .lines()
                .any(|l| l.contains("old") && l.contains("withdrawing")),
        "{out}"
    );
}
