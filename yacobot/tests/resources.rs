//! The resources worker (docs/design.md#yacobot-resources) against a real database: which resources
//! a scan starts, and that a resource is never run by two scanners at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use chrono::{NaiveDateTime, TimeDelta, Timelike, Utc};
use diesel::mysql::MysqlConnection;
use focuser_schema::models::{
    DataFrom, FetchStatus, NewVrResource, ProcessTimestamp, ResStatus, VrResource,
    VrResourceChanges,
};
use focuser_tests::TestDb;

fn now() -> NaiveDateTime {
    let t = Utc::now().naive_utc();
    t.with_nanosecond(0).unwrap()
}

fn resource(c: &mut MysqlConnection, name: &str, manual: bool, enabled: bool) -> u32 {
    NewVrResource {
        class_id: 1,
        res_name: name,
        data_group: "g",
        data_from: DataFrom::PARTNER_FEED,
        frequency: 3600,
        is_manual: manual,
        res_status: if enabled {
            ResStatus::Enabled
        } else {
            ResStatus::Disabled
        },
        priority: 0,
        max_items: 0,
    }
    .insert(c)
    .unwrap()
    .id
}

fn set(c: &mut MysqlConnection, id: u32, changes: VrResourceChanges<'_>) {
    VrResource::update(c, id, &changes).unwrap();
}

#[test]
fn resources_scan_takes_due_automatic_and_asked_for_manual_ones_only() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let t = now();
    let ago = |s: i64| Some(Some(t - TimeDelta::seconds(s)));
    resource(c, "auto-never-run", false, true);
    let id = resource(c, "auto-recent", false, true);
    set(
        c,
        id,
        VrResourceChanges {
            last_fetch_time: ago(10),
            ..Default::default()
        },
    );
    let id = resource(c, "auto-past-frequency", false, true);
    set(
        c,
        id,
        VrResourceChanges {
            last_fetch_time: ago(3600),
            ..Default::default()
        },
    );
    resource(c, "auto-disabled", false, false);
    resource(c, "manual-not-asked", true, true);
    let id = resource(c, "manual-asked", true, true);
    set(
        c,
        id,
        VrResourceChanges {
            manual_update: Some(true),
            ..Default::default()
        },
    );
    let id = resource(c, "manual-asked-disabled", true, false);
    set(
        c,
        id,
        VrResourceChanges {
            manual_update: Some(true),
            ..Default::default()
        },
    );
    let id = resource(c, "auto-recent-asked", false, true);
    set(
        c,
        id,
        VrResourceChanges {
            last_fetch_time: ago(5),
            manual_update: Some(true),
            ..Default::default()
        },
    );
    let live = t + TimeDelta::seconds(600);
    let id = resource(c, "auto-held-by-another", false, true);
    set(
        c,
        id,
        VrResourceChanges {
            claimed_by: Some(Some("other/1")),
            claim_expires: Some(Some(live)),
            ..Default::default()
        },
    );
    let id = resource(c, "auto-claim-lapsed", false, true);
    set(
        c,
        id,
        VrResourceChanges {
            claimed_by: Some(Some("dead/1")),
            claim_expires: ago(1),
            fetch_status: Some(FetchStatus::Running),
            ..Default::default()
        },
    );
    // Withdrawals and removals (resource disable|remove) whether due or not, manual or not,
    // unless another worker holds them.
    for (name, status) in [
        ("withdraw-recent", ResStatus::Withdrawing),
        ("remove-manual", ResStatus::Removing),
        ("withdraw-held-by-another", ResStatus::Withdrawing),
    ] {
        let id = resource(c, name, name.contains("manual"), true);
        set(
            c,
            id,
            VrResourceChanges {
                res_status: Some(status),
                last_fetch_time: ago(5),
                manual_update: Some(name.contains("manual")),
                claimed_by: name.contains("held").then_some(Some("other/1")),
                claim_expires: name.contains("held").then_some(Some(live)),
                ..Default::default()
            },
        );
    }

    let runs = VrResource::claim_due(c, t, "yb1/7", live, 100).unwrap();
    let got: BTreeSet<String> = runs.iter().map(|r| r.resource.res_name.clone()).collect();
    let want: BTreeSet<String> = [
        "auto-never-run",
        "auto-past-frequency",
        "manual-asked",
        "auto-recent-asked",
        "auto-claim-lapsed",
        "withdraw-recent",
        "remove-manual",
    ]
    .map(String::from)
    .into();
    assert_eq!(got, want);
    // Withdrawals first (never a manual run: manual_update is left to the enable after it),
    // then asked-for ones.
    assert!(
        runs[..2]
            .iter()
            .all(|r| r.resource.res_status != ResStatus::Enabled),
        "{runs:?}"
    );
    assert!(runs[2..4].iter().all(|r| r.manual), "{runs:?}");
    for r in &runs {
        let manual = r.resource.res_name.contains("asked");
        assert_eq!(r.manual, manual, "{}", r.resource.res_name);
        assert_eq!(r.resource.fetch_status, FetchStatus::Running);
        assert_eq!(r.resource.claimed_by.as_deref(), Some("yb1/7"));
        assert_eq!(r.resource.claim_expires, Some(live));
        assert_eq!(r.resource.fetch_time, Some(t));
        let run = ProcessTimestamp::find(c, r.run.id).unwrap();
        assert_eq!((run.res_id, run.is_manual), (r.resource.id, manual));
        assert_eq!(run.status, FetchStatus::Running);
        assert_eq!(run.fetch_start, Some(t));
    }
    // Running ones are not started again.
    assert!(VrResource::claim_due(c, t, "yb2/8", live, 100)
        .unwrap()
        .is_empty());

    // The end of a run: result recorded, manual_update cleared, claim released, not due.
    let manual = runs
        .iter()
        .find(|r| r.resource.res_name == "manual-asked")
        .unwrap();
    // A run writes only under its claim (checked with the row locked).
    assert!(VrResource::lock_claim(c, manual.resource.id, "yb1/7").unwrap());
    assert!(!VrResource::lock_claim(c, manual.resource.id, "yb2/8").unwrap());
    assert!(!VrResource::finish_run(
        c,
        manual.resource.id,
        "yb2/8",
        FetchStatus::Ok,
        "x",
        t,
        true
    )
    .unwrap());
    assert!(VrResource::finish_run(
        c,
        manual.resource.id,
        "yb1/7",
        FetchStatus::Error,
        "boom",
        t,
        true
    )
    .unwrap());
    let r = VrResource::find(c, manual.resource.id).unwrap();
    assert_eq!(r.fetch_status, FetchStatus::Error);
    assert_eq!(r.fetch_detail.as_deref(), Some("boom"));
    assert_eq!(r.last_fetch_time, Some(t));
    assert!(!r.manual_update);
    assert_eq!((r.claimed_by, r.claim_expires), (None, None));
    // A graceful stop gives the others back, due again (the withdrawals included).
    assert_eq!(
        VrResource::release_claims(c, "yb1/7", "interrupted").unwrap(),
        6
    );
    let again = VrResource::claim_due(c, t, "yb1/9", live, 100).unwrap();
    let again: BTreeSet<String> = again.iter().map(|r| r.resource.res_name.clone()).collect();
    let mut want = want;
    want.remove("manual-asked");
    assert_eq!(again, want);
    assert_eq!(
        ProcessTimestamp::recent(c, manual.resource.id, 10)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn resources_two_scanners_never_claim_the_same_resource() {
    let db = TestDb::new();
    let ids: Vec<u32> = {
        let c = &mut db.conn();
        (0..30)
            .map(|i| resource(c, &format!("r{i}"), false, true))
            .collect()
    };
    let t = now();
    let scanners: Vec<_> = (0..2)
        .map(|n| {
            let mut c = db.conn();
            std::thread::spawn(move || {
                let owner = format!("yb{n}/1");
                let mut mine = Vec::new();
                loop {
                    let runs =
                        VrResource::claim_due(&mut c, t, &owner, t + TimeDelta::seconds(600), 2)
                            .unwrap();
                    if runs.is_empty() {
                        return mine;
                    }
                    mine.extend(runs.into_iter().map(|r| r.resource.id));
                }
            })
        })
        .collect();
    let got: Vec<Vec<u32>> = scanners.into_iter().map(|h| h.join().unwrap()).collect();
    let all: Vec<u32> = got.iter().flatten().copied().collect();
    let distinct: BTreeSet<u32> = all.iter().copied().collect();
    assert_eq!(
        all.len(),
        ids.len(),
        "a resource was claimed twice: {got:?}"
    );
    assert_eq!(distinct, ids.iter().copied().collect());
    let c = &mut db.conn();
    for (n, mine) in got.iter().enumerate() {
        for id in mine {
            let r = VrResource::find(c, *id).unwrap();
            assert_eq!(r.claimed_by, Some(format!("yb{n}/1")));
            assert_eq!(ProcessTimestamp::recent(c, *id, 10).unwrap().len(), 1);
        }
    }
}

#[test]
fn resources_resource_status_follows_each_sitemap() {
    use focuser_schema::models::{FeedUrlStatus, NewVrOpenDatasource, ResourceStatus, SyncCounts};
    let db = TestDb::new();
    let c = &mut db.conn();
    let res = resource(c, "feed", false, true);
    let other = resource(c, "other", false, true);
    let source = |c: &mut MysqlConnection, res_id, name| {
        NewVrOpenDatasource {
            res_id,
            name,
            priority: 0,
            sitemap_url: "http://a.test/s",
        }
        .insert(c)
        .unwrap()
        .id
    };
    let (a, b, o) = (
        source(c, res, "a"),
        source(c, res, "b"),
        source(c, other, "o"),
    );
    let urls = |l: &[&str]| {
        l.iter()
            .map(|u| format!("http://f.test/{u}"))
            .collect::<Vec<_>>()
    };
    let counts = |inserted, updated, retired, unchanged| SyncCounts {
        inserted,
        updated,
        retired,
        unchanged,
    };
    let sync = |c: &mut MysqlConnection, ds, l: &[&str]| {
        let r = if ds == o { other } else { res };
        ResourceStatus::sync_source(c, r, ds, &urls(l)).unwrap()
    };
    assert_eq!(sync(c, a, &["1", "2", "3", "2"]), counts(3, 0, 0, 0));
    assert_eq!(sync(c, b, &["4"]), counts(1, 0, 0, 0));
    // Another resource may list the same URL: it is its own row.
    assert_eq!(sync(c, o, &["1"]), counts(1, 0, 0, 0));
    assert_eq!(sync(c, a, &["2", "3", "5"]), counts(1, 0, 1, 2));
    // Retired under a, listed again by b: moved and live again.
    assert_eq!(sync(c, b, &["4", "1"]), counts(0, 1, 0, 1));
    // Moved from b to a; b's own list is b's business.
    assert_eq!(sync(c, a, &["2", "3", "5", "4"]), counts(0, 1, 0, 3));
    let state: BTreeSet<(String, u32, u8)> = ResourceStatus::for_resource(c, res)
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.url.trim_start_matches("http://f.test/").to_string(),
                r.data_source_id,
                r.res_status.code(),
            )
        })
        .collect();
    let want: BTreeSet<(String, u32, u8)> = [
        ("1", b, 1),
        ("2", a, 1),
        ("3", a, 1),
        ("4", a, 1),
        ("5", a, 1),
    ]
    .map(|(u, ds, st)| (u.to_string(), ds, st))
    .into();
    assert_eq!(state, want);
    // An empty list retires every URL of the source, and only of it.
    assert_eq!(sync(c, a, &[]), counts(0, 0, 4, 0));
    let live: Vec<String> = ResourceStatus::for_resource(c, res)
        .unwrap()
        .into_iter()
        .filter(|r| r.res_status == FeedUrlStatus::Listed)
        .map(|r| r.url)
        .collect();
    assert_eq!(live, urls(&["1"]));
    assert_eq!(
        ResourceStatus::for_resource(c, other).unwrap()[0].res_status,
        FeedUrlStatus::Listed
    );
}
