//! Insert / find / update / upsert round trips for every table's model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use focuser_schema::models::*;
use focuser_schema::schema::{
    open_xml_format, path_arg_name, query_args, queue_applied, vr_update_info, yacobot_node,
};
use focuser_tests::TestDb;

fn t(h: u32, m: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 22)
        .unwrap()
        .and_hms_opt(h, m, 0)
        .unwrap()
}

#[test]
fn yacobot_node() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let a = NewYacobotNode {
        name: "yb01",
        host: "10.0.0.1:7300",
        enabled: true,
    }
    .insert(c)
    .unwrap();
    let b = NewYacobotNode {
        name: "yb02",
        host: "10.0.0.2:7300",
        enabled: false,
    }
    .insert(c)
    .unwrap();
    assert_eq!(YacobotNode::find(c, a.id).unwrap(), a);
    assert_eq!(YacobotNode::find_by_name(c, "yb02").unwrap(), b);
    assert_eq!(YacobotNode::enabled(c).unwrap(), vec![a.clone()]);

    // An operator's UPDATE (no daemon updates a node).
    let enable = diesel::update(yacobot_node::table.find(b.id)).set(yacobot_node::enabled.eq(true));
    assert_eq!(enable.execute(c).unwrap(), 1);
    assert_eq!(YacobotNode::enabled(c).unwrap().len(), 2);

    let up = NewYacobotNode {
        name: "yb01",
        host: "10.0.0.9:7300",
        enabled: false,
    }
    .upsert(c)
    .unwrap();
    assert_eq!(
        (up.id, up.host.as_str(), up.enabled),
        (a.id, "10.0.0.9:7300", false)
    );
    let new = NewYacobotNode {
        name: "yb03",
        host: "h",
        enabled: true,
    }
    .upsert(c)
    .unwrap();
    assert_eq!(YacobotNode::all(c).unwrap().len(), 3);
    assert!(new.id > b.id);
    assert!(matches!(
        NewYacobotNode {
            name: "yb03",
            host: "h",
            enabled: true
        }
        .insert(c),
        Err(DieselError::DatabaseError(..))
    ));

    // A node under an id of the operator's choosing (what auto_increment gives may step).
    let chosen = NewYacobotNode {
        name: "yb10",
        host: "h10",
        enabled: true,
    }
    .insert_as(c, 10)
    .unwrap();
    assert_eq!((chosen.id, chosen.name.as_str()), (10, "yb10"));
    assert_eq!(YacobotNode::find(c, 10).unwrap(), chosen);
    let taken = NewYacobotNode {
        name: "yb11",
        host: "h11",
        enabled: true,
    }
    .insert_as(c, 10);
    assert!(matches!(taken, Err(DieselError::DatabaseError(..))));
}

#[test]
fn partner_domain() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let d = NewPartnerDomain {
        domain: "astroma.net",
        yacobot_id: 1,
        assigned_by: "master1",
    }
    .insert(c)
    .unwrap();
    assert_eq!(PartnerDomain::find(c, "astroma.net").unwrap(), d);

    // A second master writing the same new domain: the first row wins.
    let kept = NewPartnerDomain {
        domain: "astroma.net",
        yacobot_id: 2,
        assigned_by: "master2",
    }
    .insert_if_absent(c)
    .unwrap();
    assert_eq!((kept.yacobot_id, kept.assigned_by.as_str()), (1, "master1"));

    let moved = NewPartnerDomain {
        domain: "astroma.net",
        yacobot_id: 2,
        assigned_by: "admin:root",
    }
    .upsert(c, t(12, 0))
    .unwrap();
    assert_eq!(
        (
            moved.yacobot_id,
            moved.assigned_by.as_str(),
            moved.updated_at
        ),
        (2, "admin:root", t(12, 0))
    );
    assert_eq!(moved.created_at, d.created_at);

    assert_eq!(
        PartnerDomain::reassign(c, "astroma.net", 2, 3, "admin:root", t(13, 0)).unwrap(),
        1
    );
    NewPartnerDomain {
        domain: "3dnews.ru",
        yacobot_id: 3,
        assigned_by: "master1",
    }
    .insert(c)
    .unwrap();
    let of3: Vec<String> = PartnerDomain::for_node(c, 3)
        .unwrap()
        .into_iter()
        .map(|d| d.domain)
        .collect();
    assert_eq!(of3, ["3dnews.ru", "astroma.net"]);
    assert!(matches!(
        PartnerDomain::find(c, "nowhere.example"),
        Err(DieselError::NotFound)
    ));
}

#[test]
fn url() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let new = NewUrl {
        id: u64::MAX - 7, // ids use all 64 bits
        url: "http://astroma.net/week/02.htm",
        domain: "astroma.net",
        path_hash: 0xdead_beef_0000_0001,
        hits: 2,
        download_prio: 6,
        updatetag: "",
        first_seen: t(10, 0),
        last_hit: t(10, 5),
        next_indexed: t(10, 5),
    };
    let u = new.insert(c).unwrap();
    assert_eq!(
        (u.id, u.url.as_str(), u.hits, u.download_prio),
        (u64::MAX - 7, new.url, 2, 6)
    );
    assert_eq!(
        (u.fetch_state, u.steady_level, u.last_downloaded),
        (FetchState::Idle, 1.0, None)
    );
    assert_eq!(Url::find(c, u.id).unwrap(), u);
    assert_eq!(Url::count_due(c, t(11, 0)).unwrap(), 1);
    assert_eq!(
        Url::count_due(c, t(10, 0)).unwrap(),
        0,
        "not due before next_indexed"
    );

    let claim = UrlChanges {
        fetch_state: Some(FetchState::Claimed),
        claimed_by: Some(Some("yb01/77")),
        claim_expires: Some(Some(t(11, 30))),
        ..Default::default()
    };
    Url::update(c, u.id, &claim).unwrap();
    assert_eq!(Url::count_due(c, t(11, 0)).unwrap(), 0, "claimed");
    assert_eq!(Url::count_due(c, t(12, 0)).unwrap(), 1, "claim expired");

    let fetched = UrlChanges {
        hits: Some(0),
        download_prio: Some(0),
        last_downloaded: Some(Some(t(11, 1))),
        http_status: Some(Some(200)),
        content_md5: Some(Some("0123456789abcdef0123456789abcdef")),
        doc_id: Some(Some("fffffffffffffff8")),
        fetch_state: Some(FetchState::Fetched),
        claimed_by: Some(None),
        claim_expires: Some(None),
        fetch_ms: Some(Some(321)),
        steady_level: Some(1.4),
        ..Default::default()
    };
    Url::update(c, u.id, &fetched).unwrap();
    let f = Url::find(c, u.id).unwrap();
    assert_eq!(
        (f.hits, f.http_status, f.claimed_by, f.fetch_ms),
        (0, Some(200), None, Some(321))
    );
    assert_eq!(f.fetch_state, FetchState::Fetched);

    let again = NewUrl {
        hits: 9,
        download_prio: 27,
        updatetag: "v2",
        ..new
    }
    .upsert(c)
    .unwrap();
    assert_eq!(
        (again.hits, again.download_prio, again.updatetag.as_str()),
        (9, 27, "v2")
    );
    assert_eq!(
        again.last_downloaded,
        Some(t(11, 1)),
        "columns not in NewUrl are kept"
    );
}

#[test]
fn url_bookings_in_batches_write_what_they_say_for_claims_still_held() {
    let db = TestDb::new();
    let c = &mut db.conn();
    // 700 rows: several statements (512 + 128 + 32 + 16 + 8 + 4); ids over all 64 bits.
    let ids: Vec<u64> = (0..700u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1 << 63)
        .collect();
    let urls: Vec<String> = (0..700).map(|i| format!("http://b.test/{i}")).collect();
    for (id, url) in ids.iter().zip(&urls) {
        NewUrl {
            id: *id,
            url,
            domain: "b.test",
            path_hash: 1,
            hits: 5,
            download_prio: 15,
            updatetag: "",
            first_seen: t(10, 0),
            last_hit: t(10, 0),
            next_indexed: t(10, 0),
        }
        .insert(c)
        .unwrap();
        let owner = if *id == ids[3] { "other/2" } else { "me/1" };
        let claim = UrlChanges {
            claimed_by: Some(Some(owner)),
            claim_expires: Some(Some(t(11, 0))),
            fetch_error: Some(Some("old error")),
            content_md5: Some(Some("ffffffffffffffffffffffffffffffff")),
            ..Default::default()
        };
        Url::update(c, *id, &claim).unwrap();
    }
    let md5 = "0123456789abcdef0123456789abcdef".to_string();
    let error = "server: after 3 tries: HTTP 503 — ünïcode".to_string();
    let bookings: Vec<(u64, UrlChanges)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let changes = if i % 2 == 0 {
                // Fetched: every column the crawler writes.
                UrlChanges {
                    hits: Some(0),
                    download_prio: Some(0),
                    last_downloaded: Some(Some(t(11, 1))),
                    last_indexed: Some(Some(t(11, 1))),
                    next_indexed: Some(t(23, 59)),
                    steady_level: Some(2.8),
                    http_status: Some(Some(200)),
                    content_md5: Some(Some(&md5)),
                    doc_id: Some(Some("ffffffffffffffff")),
                    fetch_state: Some(FetchState::Fetched),
                    errors: Some(0),
                    fetch_ms: Some(Some(u32::MAX)),
                    archive_file: Some(Some(u64::MAX)),
                    archive_item: Some(Some(u32::MAX)),
                    last_fetch: Some(Some(t(11, 1))),
                    fetch_error: Some(None),
                    ..Default::default()
                }
            } else {
                // Failed: hits, priority, steady_level, content_md5 … left alone.
                UrlChanges {
                    next_indexed: Some(t(12, 0)),
                    http_status: Some(None),
                    fetch_state: Some(FetchState::Failed),
                    errors: Some(1),
                    last_fetch: Some(Some(t(11, 2))),
                    fetch_error: Some(Some(&error)),
                    ..Default::default()
                }
            };
            (*id, changes)
        })
        .collect();
    let written = c
        .transaction(|c| Url::finish_batch(c, "me/1", &bookings))
        .unwrap();
    assert_eq!(written, 699, "the URL another holds is not written");

    let other = Url::find(c, ids[3]).unwrap();
    assert_eq!(
        (other.hits, other.claimed_by.as_deref(), other.fetch_state),
        (5, Some("other/2"), FetchState::Idle)
    );
    for (i, id) in ids.iter().enumerate().filter(|(i, _)| *i != 3) {
        let u = Url::find(c, *id).unwrap();
        assert_eq!((u.claimed_by, u.claim_expires), (None, None), "released");
        if i % 2 == 0 {
            assert_eq!(
                (u.hits, u.download_prio, u.last_downloaded, u.next_indexed),
                (0, 0, Some(t(11, 1)), t(23, 59))
            );
            assert_eq!(
                (u.steady_level, u.http_status, u.content_md5.as_deref()),
                (2.8, Some(200), Some(md5.as_str()))
            );
            assert_eq!(
                (u.fetch_ms, u.archive_file, u.archive_item, u.fetch_error),
                (Some(u32::MAX), Some(u64::MAX), Some(u32::MAX), None)
            );
            assert_eq!(u.doc_id.as_deref(), Some("ffffffffffffffff"));
        } else {
            assert_eq!(
                (u.hits, u.download_prio, u.steady_level, u.last_downloaded),
                (5, 15, 1.0, None),
                "kept"
            );
            assert_eq!(
                u.content_md5.as_deref(),
                Some("ffffffffffffffffffffffffffffffff")
            );
            assert_eq!(
                (u.http_status, u.errors, u.next_indexed, u.last_fetch),
                (None, 1, t(12, 0), Some(t(11, 2)))
            );
            assert_eq!(u.fetch_error.as_deref(), Some(error.as_str()));
            assert_eq!(u.fetch_state, FetchState::Failed);
        }
    }
    // Booked again: nothing is held any more, nothing is written.
    assert_eq!(Url::finish_batch(c, "me/1", &bookings[..5]).unwrap(), 0);
    assert_eq!(Url::finish_batch(c, "me/1", &[]).unwrap(), 0);
}

#[test]
fn path_arg_name_and_query_args() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let p = NewPathArgName {
        path_hash: 42,
        name: "sessionid",
        significant: true,
        updated_at: t(9, 0),
    }
    .insert(c)
    .unwrap();
    assert_eq!(PathArgName::find(c, 42, "sessionid").unwrap(), p);
    let replaced = NewPathArgName {
        path_hash: 42,
        name: "sessionid",
        significant: false,
        updated_at: t(10, 0),
    }
    .upsert(c)
    .unwrap();
    assert!(!replaced.significant);
    NewPathArgName {
        path_hash: 42,
        name: "page",
        significant: true,
        updated_at: t(9, 0),
    }
    .upsert(c)
    .unwrap();
    let names: Vec<String> = PathArgName::for_path(c, 42)
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["page", "sessionid"]);
    diesel::update(path_arg_name::table.find((42, "sessionid")))
        .set((
            path_arg_name::significant.eq(true),
            path_arg_name::updated_at.eq(t(11, 0)),
        ))
        .execute(c)
        .unwrap();
    assert!(PathArgName::find(c, 42, "sessionid").unwrap().significant);

    let q = NewQueryArg {
        path_hash: 42,
        name: "utm_source",
        score: 0.97,
        computed_at: t(8, 0),
        pairs: 0,
        equal_pairs: 0,
    }
    .insert(c)
    .unwrap();
    assert!(!q.significant());
    assert_eq!(QueryArg::find(c, 42, "utm_source").unwrap(), q);
    let q2 = NewQueryArg {
        path_hash: 42,
        name: "utm_source",
        score: 0.5,
        computed_at: t(12, 0),
        pairs: 0,
        equal_pairs: 0,
    }
    .upsert(c)
    .unwrap();
    assert!(q2.significant());
    NewQueryArg {
        path_hash: 7,
        name: "id",
        score: INSIGNIFICANT_SCORE,
        computed_at: t(6, 0),
        pairs: 0,
        equal_pairs: 0,
    }
    .insert(c)
    .unwrap();
    assert_eq!(QueryArg::computed_since(c, t(7, 0)).unwrap(), vec![q2]);
    diesel::update(query_args::table.find((7, "id")))
        .set(query_args::score.eq(0.1))
        .execute(c)
        .unwrap();
    assert!(QueryArg::find(c, 7, "id").unwrap().significant());
}

#[test]
fn query_arg_scores_with_their_evidence_and_probes() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let score = |name, score, pairs, equal_pairs| NewQueryArg {
        path_hash: 42,
        name,
        score,
        computed_at: t(8, 0),
        pairs,
        equal_pairs,
    };
    let written =
        QueryArg::write_scores(c, &[score("sid", 0.96, 11, 11), score("page", 0.04, 12, 0)])
            .unwrap();
    assert_eq!(written, 2);
    // Replaced, evidence and all.
    QueryArg::write_scores(c, &[score("page", 0.03, 15, 0)]).unwrap();
    let mut all = QueryArg::for_paths(c, &[42, 7]).unwrap();
    all.sort_by(|a, b| a.name.cmp(&b.name));
    let got: Vec<(&str, f64, u32, u32)> = all
        .iter()
        .map(|q| (q.name.as_str(), q.score, q.pairs, q.equal_pairs))
        .collect();
    assert_eq!(got, [("page", 0.03, 15, 0), ("sid", 0.96, 11, 11)]);

    let probe = |name, url: &'static str| NewQueryArgProbe {
        path_hash: 42,
        name,
        id: url.len() as u64,
        url,
        domain: "a.ru",
        queued_at: t(9, 0),
    };
    let probes = [
        probe("ref", "http://a.ru/p"),
        probe("ref", "http://a.ru/p?x=1"),
        probe("utm", "http://a.ru/p"),
    ];
    assert_eq!(QueryArgProbe::queue(c, &probes).unwrap(), 3);
    assert_eq!(
        QueryArgProbe::queue(c, &probes[..1]).unwrap(),
        0,
        "queued already"
    );
    let mut counts = QueryArgProbe::counts(c, &[42]).unwrap();
    counts.sort();
    assert_eq!(
        counts,
        [(42, "ref".to_string(), 2), (42, "utm".to_string(), 1)]
    );
    assert_eq!(QueryArgProbe::waiting(c).unwrap(), 3);
    // Taken into url, claimed; the same URL for two arguments is one row.
    let taken = QueryArgProbe::take(c, "yb1/1", t(10, 0), t(10, 10), 10).unwrap();
    let mut urls: Vec<&str> = taken.iter().map(|u| u.url.as_str()).collect();
    urls.sort();
    assert_eq!(urls, ["http://a.ru/p", "http://a.ru/p?x=1"]);
    assert!(taken
        .iter()
        .all(|u| u.hits == 0 && u.claimed_by.as_deref() == Some("yb1/1")));
    assert_eq!(QueryArgProbe::waiting(c).unwrap(), 0);
    assert!(QueryArgProbe::take(c, "yb1/1", t(10, 0), t(10, 10), 10)
        .unwrap()
        .is_empty());
    assert_eq!(QueryArgProbe::forget(c, 42, &["ref"]).unwrap(), 2);
    assert_eq!(
        QueryArgProbe::counts(c, &[42]).unwrap(),
        [(42, "utm".to_string(), 1)]
    );
}

#[test]
fn queue_applied() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let q = NewQueueApplied {
        source: "master1",
        file_name: "master1-000001.q",
        row_count: 10,
        skipped: false,
    };
    assert!(q.record(c).unwrap(), "first time: recorded");
    assert!(!q.record(c).unwrap(), "second time: already applied");
    NewQueueApplied {
        source: "master1",
        file_name: "master1-000002.q",
        row_count: 5,
        skipped: true,
    }
    .insert(c)
    .unwrap();
    let found = QueueApplied::find(c, "master1", "master1-000001.q").unwrap();
    assert_eq!(found.row_count, 10);
    let recent: Vec<String> = QueueApplied::recent(c, "master1", 1)
        .unwrap()
        .into_iter()
        .map(|q| q.file_name)
        .collect();
    assert_eq!(recent, ["master1-000002.q"]);
    diesel::update(queue_applied::table.find(("master1", "master1-000001.q")))
        .set(queue_applied::row_count.eq(11))
        .execute(c)
        .unwrap();
    assert_eq!(
        QueueApplied::find(c, "master1", "master1-000001.q")
            .unwrap()
            .row_count,
        11
    );
}

#[test]
fn vr_resource_and_its_sources_rules_urls_items_and_logs() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let new = NewVrResource {
        class_id: 70_000_001,
        res_name: "weather",
        data_group: "w",
        data_from: DataFrom::PARTNER_FEED,
        frequency: 3600,
        is_manual: false,
        res_status: ResStatus::Enabled,
        priority: 5,
        max_items: 0,
    };
    let r = new.insert(c).unwrap();
    assert_eq!(VrResource::find(c, r.id).unwrap(), r);
    assert_eq!(r.fetch_status, FetchStatus::Never);
    let run = VrResourceChanges {
        fetch_status: Some(FetchStatus::Error),
        fetch_detail: Some(Some("source \"main\": empty sitemap")),
        last_fetch_time: Some(Some(t(10, 0))),
        ..Default::default()
    };
    VrResource::update(c, r.id, &run).unwrap();
    let r2 = NewVrResource {
        frequency: 60,
        ..new.clone()
    }
    .upsert(c)
    .unwrap();
    assert_eq!(
        (r2.id, r2.frequency, r2.fetch_status),
        (r.id, 60, FetchStatus::Error),
        "settings rewritten, run state kept"
    );
    assert_eq!(
        r2.fetch_detail.as_deref(),
        Some("source \"main\": empty sitemap")
    );
    assert_eq!(VrResource::all(c).unwrap().len(), 1);

    let ds = NewVrOpenDatasource {
        res_id: r.id,
        name: "main",
        priority: 1,
        sitemap_url: "http://f/s.txt",
    }
    .insert(c)
    .unwrap();
    NewVrOpenDatasource {
        res_id: r.id,
        name: "extra",
        priority: 9,
        sitemap_url: "http://f/x.xml",
    }
    .insert(c)
    .unwrap();
    let order: Vec<String> = VrOpenDatasource::for_resource(c, r.id)
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(order, ["extra", "main"], "highest priority first");
    VrOpenDatasource::update(
        c,
        ds.id,
        &VrOpenDatasourceChanges {
            sitemap_md5: Some(Some("00112233445566778899aabbccddeeff")),
            ..Default::default()
        },
    )
    .unwrap();
    let ds2 = NewVrOpenDatasource {
        res_id: r.id,
        name: "main",
        priority: 20,
        sitemap_url: "http://f/s2.txt",
    }
    .upsert(c)
    .unwrap();
    assert_eq!(
        (ds2.id, ds2.priority, ds2.sitemap_url.as_str()),
        (ds.id, 20, "http://f/s2.txt")
    );
    assert_eq!(
        ds2.sitemap_md5.as_deref(),
        Some("00112233445566778899aabbccddeeff")
    );

    let rs = NewResourceStatus {
        res_id: r.id,
        data_source_id: ds.id,
        url: "http://f/feed1.xml",
        res_status: FeedUrlStatus::Listed,
    }
    .insert(c)
    .unwrap();
    assert_eq!(ResourceStatus::find(c, rs.id).unwrap(), rs);
    ResourceStatus::update(
        c,
        rs.id,
        &ResourceStatusChanges {
            http_status: Some(Some(503)),
            error: Some(Some("HTTP 503")),
            ..Default::default()
        },
    )
    .unwrap();
    let retired = NewResourceStatus {
        res_id: r.id,
        data_source_id: ds.id,
        url: "http://f/feed1.xml",
        res_status: FeedUrlStatus::Retired,
    }
    .upsert(c)
    .unwrap();
    assert_eq!(
        (retired.id, retired.res_status, retired.http_status),
        (rs.id, FeedUrlStatus::Retired, Some(503))
    );
    assert_eq!(ResourceStatus::for_resource(c, r.id).unwrap().len(), 1);

    let rule = NewOpenXmlFormat {
        class_id: 70_000_001,
        label_name: "city",
        parent_label: "item",
        xpath: "city",
        is_key: true,
        is_index: true,
        is_fullhit: false,
        is_mark: false,
        is_required: true,
        index_type: IndexType::KEYWORD,
        group_type: GroupType::NONE,
    };
    let x = rule.insert(c).unwrap();
    assert_eq!(OpenXmlFormat::find(c, x.id).unwrap(), x);
    diesel::update(open_xml_format::table.find(x.id))
        .set(open_xml_format::is_mark.eq(true))
        .execute(c)
        .unwrap();
    let x2 = NewOpenXmlFormat {
        xpath: "name/city",
        ..rule
    }
    .upsert(c)
    .unwrap();
    assert_eq!(
        (x2.id, x2.xpath.as_str(), x2.is_mark),
        (x.id, "name/city", false)
    );
    assert_eq!(OpenXmlFormat::for_class(c, 70_000_001).unwrap(), vec![x2]);

    let item = NewVrData {
        res_id: r.id,
        status_id: Some(rs.id),
        data_source_id: Some(ds.id),
        keyword: "北京",
        optword: "",
        synonym: "Beijing",
        md5_sum: "0123456789abcdef0123456789abcdef",
        doc_id: "vr-1-beijing",
        data_status: DataStatus::Live,
        status: EmitStatus::Pending,
        update_type: UpdateType::Insert,
        content: Some("<item><city>北京</city></item>"),
        update_date: t(10, 0),
    };
    let v = item.insert(c).unwrap();
    assert_eq!(VrData::find_by_keyword(c, r.id, "北京").unwrap(), v);
    assert_eq!(VrData::mark_emitted(c, r.id).unwrap(), 1);
    assert_eq!(VrData::find(c, v.id).unwrap().status, EmitStatus::Emitted);
    let v2 = NewVrData {
        md5_sum: "ffffffffffffffffffffffffffffffff",
        update_type: UpdateType::Update,
        ..item.clone()
    }
    .upsert(c)
    .unwrap();
    assert_eq!(
        (v2.id, v2.update_type, v2.md5_sum.as_str()),
        (v.id, UpdateType::Update, "ffffffffffffffffffffffffffffffff")
    );
    NewVrData {
        keyword: "上海",
        data_status: DataStatus::Deleted,
        ..item
    }
    .insert(c)
    .unwrap();
    assert_eq!(VrData::for_resource(c, r.id).unwrap().len(), 2);
    assert_eq!(VrData::count_live(c, r.id).unwrap(), 1);

    let p = NewProcessTimestamp {
        res_id: r.id,
        is_manual: false,
        status: FetchStatus::Running,
        fetch_start: Some(t(10, 0)),
    }
    .insert(c)
    .unwrap();
    assert_eq!(ProcessTimestamp::find(c, p.id).unwrap(), p);
    let done = ProcessTimestampChanges {
        status: Some(FetchStatus::Ok),
        fetch_end: Some(Some(t(10, 1))),
        items: Some(2),
        inserted: Some(2),
        ..Default::default()
    };
    ProcessTimestamp::update(c, p.id, &done).unwrap();
    let runs = ProcessTimestamp::recent(c, r.id, 5).unwrap();
    assert_eq!(
        (runs.len(), runs[0].status, runs[0].items, runs[0].fetch_end),
        (1, FetchStatus::Ok, 2, Some(t(10, 1)))
    );
    // The run before a run: none before the first, the latest lower id of the same resource
    // (another resource's runs in between do not count).
    assert_eq!(ProcessTimestamp::previous_run(c, r.id, p.id).unwrap(), None);
    let run_of = |c: &mut _, res_id| {
        NewProcessTimestamp {
            res_id,
            is_manual: false,
            status: FetchStatus::Ok,
            fetch_start: None,
        }
        .insert(c)
        .unwrap()
        .id
    };
    let other = run_of(c, r.id + 1000);
    let second = run_of(c, r.id);
    assert!(other > p.id && second > other);
    assert_eq!(
        ProcessTimestamp::previous_run(c, r.id, second).unwrap(),
        Some((p.id, Some(t(10, 0))))
    );
    assert_eq!(
        ProcessTimestamp::previous_run(c, r.id, second + 1).unwrap(),
        Some((second, None))
    );

    let u = NewVrUpdateInfo {
        res_id: r.id,
        status: FetchStatus::Ok,
        item_count: 2,
        last_item_count: 0,
        detail: "2 new items",
    }
    .insert(c)
    .unwrap();
    assert_eq!(VrUpdateInfo::find(c, u.id).unwrap(), u);
    diesel::update(vr_update_info::table.find(u.id))
        .set(vr_update_info::detail.eq("2 new items (first run)"))
        .execute(c)
        .unwrap();
    assert_eq!(
        VrUpdateInfo::recent(c, r.id, 1).unwrap()[0].detail,
        "2 new items (first run)"
    );
}

#[test]
fn vr_resource_in_error_lists_failed_runs_latest_first() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let add = |c: &mut diesel::mysql::MysqlConnection, name: &str, failed_at: Option<u32>| {
        let r = NewVrResource {
            class_id: 1,
            res_name: name,
            data_group: "g",
            data_from: DataFrom::PARTNER_FEED,
            frequency: 3600,
            is_manual: false,
            res_status: ResStatus::Enabled,
            priority: 0,
            max_items: 0,
        }
        .insert(c)
        .unwrap();
        let changes = VrResourceChanges {
            fetch_status: Some(if failed_at.is_some() {
                FetchStatus::Error
            } else {
                FetchStatus::Ok
            }),
            fetch_detail: Some(Some("source \"main\": empty sitemap")),
            last_fetch_time: Some(failed_at.map(|h| t(h, 0))),
            ..Default::default()
        };
        VrResource::update(c, r.id, &changes).unwrap();
        r.id
    };
    let early = add(c, "early", Some(9));
    add(c, "fine", None);
    let late = add(c, "late", Some(11));
    let ids = |rs: Vec<VrResource>| rs.iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(VrResource::in_error(c, 10).unwrap()), [late, early]);
    assert_eq!(ids(VrResource::in_error(c, 1).unwrap()), [late]);
}

#[test]
fn codes_are_their_columns_numbers_and_unnamed_ones_read_and_write_back_unchanged() {
    use focuser_schema::schema::{url, vr_data, vr_resource};
    let db = TestDb::new();
    let c = &mut db.conn();
    let r = NewVrResource {
        class_id: 1,
        res_name: "odd",
        data_group: "g",
        data_from: DataFrom::PARTNER_FEED,
        frequency: 3600,
        is_manual: false,
        res_status: ResStatus::Enabled,
        priority: 0,
        max_items: 0,
    }
    .insert(c)
    .unwrap();
    let raw = |c: &mut MysqlConnection| -> (u8, u8, u8) {
        vr_resource::table
            .find(r.id)
            .select((
                vr_resource::fetch_status,
                vr_resource::res_status,
                vr_resource::data_from,
            ))
            .first(c)
            .unwrap()
    };
    let error = VrResourceChanges {
        fetch_status: Some(FetchStatus::Error),
        ..Default::default()
    };
    VrResource::update(c, r.id, &error).unwrap();
    assert_eq!(raw(c), (4, 1, 0), "the numbers the migrations give");

    // Values no version names, set by hand: read as they are, and written back so.
    diesel::sql_query(format!(
        "UPDATE vr_resource SET fetch_status = 3, res_status = 7, data_from = 9 WHERE id = {}",
        r.id
    ))
    .execute(c)
    .unwrap();
    let odd = VrResource::find(c, r.id).unwrap();
    assert_eq!(
        (odd.fetch_status, odd.res_status, odd.data_from),
        (FetchStatus::Unknown(3), ResStatus::Unknown(7), DataFrom(9))
    );
    assert_ne!(odd.res_status, ResStatus::Enabled);
    assert_eq!(VrResource::all(c).unwrap(), vec![odd.clone()]);
    VrResource::update(c, r.id, &error).unwrap();
    let back = VrResourceChanges {
        fetch_status: Some(odd.fetch_status),
        res_status: Some(odd.res_status),
        ..Default::default()
    };
    VrResource::update(c, r.id, &back).unwrap();
    assert_eq!(raw(c), (3, 7, 9));

    NewUrl {
        id: 5,
        url: "http://odd.test/",
        domain: "odd.test",
        path_hash: 1,
        hits: 1,
        download_prio: 3,
        updatetag: "",
        first_seen: t(10, 0),
        last_hit: t(10, 0),
        next_indexed: t(10, 0),
    }
    .insert(c)
    .unwrap();
    diesel::update(url::table.find(5u64))
        .set(url::fetch_state.eq(200u8))
        .execute(c)
        .unwrap();
    assert_eq!(
        Url::find(c, 5).unwrap().fetch_state,
        FetchState::Unknown(200)
    );

    let item = NewVrData {
        res_id: r.id,
        status_id: None,
        data_source_id: None,
        keyword: "k",
        optword: "",
        synonym: "",
        md5_sum: "0123456789abcdef0123456789abcdef",
        doc_id: "vr-odd-k",
        data_status: DataStatus::Live,
        status: EmitStatus::Emitted,
        update_type: UpdateType::Update,
        content: None,
        update_date: t(10, 0),
    }
    .insert(c)
    .unwrap();
    assert_eq!(VrData::count_live(c, r.id).unwrap(), 1);
    diesel::update(vr_data::table.find(item.id))
        .set((vr_data::data_status.eq(5u8), vr_data::update_type.eq(9u8)))
        .execute(c)
        .unwrap();
    let known = VrData::known_items(c, r.id).unwrap();
    assert_eq!(known[0].data_status, DataStatus::Unknown(5));
    let row = VrData::find(c, item.id).unwrap();
    assert_eq!(
        (row.data_status, row.update_type, row.valid_status),
        (
            DataStatus::Unknown(5),
            UpdateType::Unknown(9),
            ValidStatus::Valid
        )
    );
    assert_eq!(VrData::count_live(c, r.id).unwrap(), 0, "not live");
}

#[test]
fn binding_dictionaries_pages_and_position() {
    let db = TestDb::new();
    let c = &mut db.conn();
    assert_eq!(BindingDict::newest_loaded_at(c).unwrap(), None);
    let phrase = |line: u32, text: &str, adv: u32| BindingDictPhrase {
        dict_id: 0,
        line,
        phrase: text.into(),
        stems: text.to_lowercase(),
        advertisers: adv,
        category: (adv == 0).then(|| "tech".to_string()),
    };
    let dict = |kind: u8, version: &'static str, at: NaiveDateTime| NewBindingDict {
        kind,
        version,
        loaded_at: at,
        file_name: "d.tsv",
        phrases: 2,
        checksum: "00112233445566778899aabbccddeeff",
    };
    // 2500 phrases: more than one insert statement.
    let mut many: Vec<BindingDictPhrase> = (0..2500)
        .map(|i| phrase(i + 2, &format!("Phrase {i}"), i))
        .collect();
    let d1 = BindingDict::load(c, &dict(1, "0000000000000001", t(1, 0)), &mut many).unwrap();
    let d2 = BindingDict::load(
        c,
        &dict(2, "0000000000000002", t(2, 0)),
        &mut [phrase(2, "Phone case", 0)],
    )
    .unwrap();
    let d3 = BindingDict::load(
        c,
        &dict(1, "0000000000000003", t(3, 0)),
        &mut [phrase(3, "Camera", 4)],
    )
    .unwrap();
    assert!(d1.id < d2.id && d2.id < d3.id);
    assert_eq!(BindingDict::current(c).unwrap(), [d3.clone(), d2.clone()]);
    assert_eq!(BindingDict::all(c).unwrap(), [d3.clone(), d2, d1.clone()]);
    assert_eq!(BindingDict::newest_loaded_at(c).unwrap(), Some(t(3, 0)));
    let got = BindingDict::phrases(c, d1.id).unwrap();
    assert_eq!(got.len(), 2500);
    assert_eq!(got[0].dict_id, d1.id);
    assert_eq!(got[0], {
        let mut p = phrase(2, "Phrase 0", 0);
        p.dict_id = d1.id;
        p
    });
    assert_eq!(BindingDict::phrases(c, d3.id).unwrap()[0].phrase, "Camera");

    let page = |id: u64, md5: &str, tragic: bool| NewBindingPage {
        id,
        md5: md5.into(),
        item: format!("{{\"item\":\"binding\",\"doc\":\"{id:016x}\"}}"),
        tragic,
        phrases: 3,
        dict_versions: "direct:0000000000000003".into(),
        bound_at: t(4, 0),
    };
    BindingPage::write(c, &[page(2, "a", false), page(1, "b", true)]).unwrap();
    BindingPage::write(c, &[page(2, "c", false)]).unwrap();
    let mut md5s = BindingPage::md5s(c, &[1, 2, 3]).unwrap();
    md5s.sort();
    assert_eq!(md5s, [(1, "b".to_string()), (2, "c".to_string())]);
    let one = BindingPage::find(c, 1).unwrap().unwrap();
    assert_eq!((one.tragic, one.phrases, one.bound_at), (1, 3, t(4, 0)));
    assert_eq!(BindingPage::delete(c, &[1, 3]).unwrap(), 1);
    assert_eq!(BindingPage::find(c, 1).unwrap(), None);

    assert_eq!(BindingPosition::find(c, "yb1", "/b").unwrap(), None);
    BindingPosition::set(c, "yb1", "/b", (3, 7), t(5, 0)).unwrap();
    BindingPosition::set(c, "yb1", "/b", (4, 1), t(6, 0)).unwrap();
    let p = BindingPosition::find(c, "yb1", "/b").unwrap().unwrap();
    assert_eq!((p.place(), p.updated_at), ((4, 1), t(6, 0)));
}

#[test]
fn multidoc_groups_found_by_bands_written_and_settled() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let (dk, text) = (7u64, 0x0123_4567_89ab_cdefu64);
    let page = |id: u64, simhash: u64, group: u64| NewMultidocPage {
        id,
        outcome: PageOutcome::Analysed,
        lang: Some("en"),
        categories: Some("tech:0.900".into()),
        category_names: Some("Technology".into()),
        main_md5: Some(format!("{id:032x}")),
        main_simhash: Some(simhash),
        dup_group: Some(group),
        template_share: Some(0.1),
        model_checksum: Some(9),
        analysed_at: t(1, 0),
        counted_at: None,
        archive_file: 1,
        archive_item: id as u32,
    };
    let group = |id: u64, simhash: u64, rep: u64| NewMultidocGroup {
        id,
        domain_key: dk,
        simhash,
        rep,
        created_at: t(1, 0),
    };
    // Two groups of one domain 16 bits apart, one of another domain with the same text.
    let other = text ^ 0xffff;
    MultidocGroup::write(c, &[group(100, text, 1), group(200, other, 3)]).unwrap();
    let mut elsewhere = group(300, text, 5);
    elsewhere.domain_key = dk + 1;
    MultidocGroup::write(c, &[elsewhere]).unwrap();
    MultidocPage::write(
        c,
        &[
            page(1, text, 100),
            page(2, text ^ 1, 100),
            page(3, other, 200),
        ],
    )
    .unwrap();
    BindingPage::write(
        c,
        &[NewBindingPage {
            id: 1,
            md5: "b".into(),
            item: "{\"item\":\"binding\"}".into(),
            tragic: false,
            phrases: 0,
            dict_versions: String::new(),
            bound_at: t(1, 0),
        }],
    )
    .unwrap();
    // Three bits from the group's text, each in another band: found, with its
    // representative's rows; four bits (one in each band): not found.
    let near = MultidocGroup::near(c, dk, text ^ (1 << 63) ^ (1 << 40) ^ 1).unwrap();
    assert_eq!(near.len(), 1);
    let n = &near[0];
    assert_eq!((n.group_id, n.simhash, n.rep), (100, text, 1));
    assert_eq!(n.rep_md5, Some(format!("{:032x}", 1)));
    assert_eq!(n.rep_group, Some(100));
    assert_eq!(n.rep_model_checksum, Some(9));
    assert_eq!(n.rep_item.as_deref(), Some("{\"item\":\"binding\"}"));
    let far = text ^ (1 << 63) ^ (1 << 40) ^ (1 << 20) ^ 1;
    assert!(MultidocGroup::near(c, dk, far).unwrap().is_empty());
    assert_eq!(MultidocGroup::near(c, dk, other).unwrap()[0].rep_item, None);
    // An existing group takes the new representative.
    MultidocGroup::write(c, &[group(100, text, 2)]).unwrap();
    assert_eq!(MultidocGroup::find(c, 100).unwrap().unwrap().rep, 2);
    MultidocGroup::write(c, &[group(100, text, 1)]).unwrap();
    let g = MultidocGroup::find(c, 100).unwrap().unwrap();
    assert_eq!(
        (g.band0, g.band1, g.band2, g.band3),
        (0x0123, 0x4567, 0x89ab, 0xcdef)
    );

    // The representative goes: the group takes its smallest page; a group left with no page
    // goes; untouched groups stay as they are.
    MultidocPage::delete(c, &[1, 3]).unwrap();
    assert_eq!(MultidocGroup::settle(c, &[100, 200]).unwrap(), (1, 1));
    assert_eq!(MultidocGroup::find(c, 100).unwrap().unwrap().rep, 2);
    assert_eq!(MultidocGroup::find(c, 200).unwrap(), None);
    assert_eq!(MultidocGroup::settle(c, &[100]).unwrap(), (0, 0));
    assert_eq!(MultidocGroup::find(c, 300).unwrap().unwrap().rep, 5);
    assert_eq!(MultidocGroup::pages(c, 100).unwrap(), [2]);
    let mut of = MultidocGroup::of_pages(c, &[1, 2, 3]).unwrap();
    of.sort();
    assert_eq!(of, [(2, 100)]);
}

#[test]
fn url_expire_marks_old_urls_not_due_nor_claimed_oldest_first_in_batches() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let now = t(12, 0);
    // (last hit, hits, next_indexed, claim expires)
    let rows = [
        (t(1, 0), 0, t(13, 0), None),            // 0: old, idle: expires
        (t(2, 0), 3, t(13, 0), None),            // 1: old, hits but not due yet: expires
        (t(3, 0), 3, t(11, 0), None),            // 2: old and due: stays
        (t(4, 0), 0, t(13, 0), Some(t(12, 30))), // 3: old, claimed: stays
        (t(5, 0), 0, t(13, 0), Some(t(11, 30))), // 4: old, its claim lapsed: expires
        (t(10, 0), 0, t(13, 0), None),           // 5: hit after the cutoff: stays
    ];
    let urls: Vec<String> = (0..rows.len())
        .map(|i| format!("http://e.test/{i}"))
        .collect();
    for (i, (hit, hits, next, claim)) in rows.iter().enumerate() {
        NewUrl {
            id: 100 + i as u64,
            url: &urls[i],
            domain: "e.test",
            path_hash: 1,
            hits: *hits,
            download_prio: 0,
            updatetag: "",
            first_seen: *hit,
            last_hit: *hit,
            next_indexed: *next,
        }
        .insert(c)
        .unwrap();
        if let Some(at) = claim {
            let claimed = UrlChanges {
                claimed_by: Some(Some("yb01/1")),
                claim_expires: Some(Some(*at)),
                ..Default::default()
            };
            Url::update(c, 100 + i as u64, &claimed).unwrap();
        }
    }
    use focuser_schema::schema::url as u;
    let marked = |c: &mut diesel::MysqlConnection| -> Vec<u64> {
        u::table
            .filter(u::withdraw.is_not_null())
            .order(u::id)
            .select(u::id)
            .load(c)
            .unwrap()
    };
    let cutoff = t(9, 0);
    // Two at a time, oldest first; then the last one; then none.
    assert_eq!(Url::expire(c, cutoff, now, 2).unwrap(), 2);
    assert_eq!(marked(c), [100, 101]);
    assert_eq!(Url::expire(c, cutoff, now, 2).unwrap(), 1);
    assert_eq!(marked(c), [100, 101, 104]);
    assert_eq!(Url::expire(c, cutoff, now, 2).unwrap(), 0);
    let row: (Option<WithdrawReason>, u32, u64) = u::table
        .find(101u64)
        .select((u::withdraw, u::hits, u::download_prio))
        .first(c)
        .unwrap();
    assert_eq!(row, (Some(WithdrawReason::Expired), 0, 0));
}
