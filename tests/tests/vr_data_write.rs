//! A resources run's `vr_data` changes (`VrData::apply_run`, `write_items.sql`): many rows and
//! large items cut into statements, changed and revived rows written over by id, deletes, and
//! the `status = 0` rows found and marked emitted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{NaiveDate, NaiveDateTime};
// The codes by their names alone: the tuples below read as the rows do.
use focuser_schema::models::DataStatus::{Deleted, Live};
use focuser_schema::models::EmitStatus::{Emitted, Pending};
use focuser_schema::models::UpdateType::{Delete, Insert, Update};
use focuser_schema::models::{ItemWrite, RunWrite, UpdateType, VrData};
use focuser_tests::TestDb;

fn t(h: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 24)
        .unwrap()
        .and_hms_opt(h, 0, 0)
        .unwrap()
}

struct Owned {
    keyword: String,
    md5: String,
    content: String,
    doc_id: String,
}

fn owned(i: usize, version: u32, content_bytes: usize) -> Owned {
    let content = format!("{{\"key\":\"k{i}\",\"v\":{version}}}");
    let pad = "x".repeat(content_bytes.saturating_sub(content.len()));
    Owned {
        keyword: format!("k{i}"),
        md5: format!("{:032x}", i as u128 * 1000 + u128::from(version)),
        content: format!("{content}{pad}"),
        doc_id: format!("{i:016x}"),
    }
}

fn write(o: &Owned) -> ItemWrite<'_> {
    ItemWrite {
        keyword: &o.keyword,
        md5: &o.md5,
        content: &o.content,
        doc_id: &o.doc_id,
        status_id: Some(7),
        data_source_id: Some(3),
        loc_id: Some(11),
        location: "北京",
        hit_field: None,
    }
}

#[test]
fn a_run_of_many_and_large_items_is_written_whole_then_changed_revived_and_deleted() {
    let db = TestDb::new();
    let c = &mut db.conn();
    // 1 203 items: more than two full statements of 500; one in 25 of 1 MiB (20 MiB in 500
    // rows), so that the items' bytes cut statements short too (4 MiB a statement: the
    // server's max_allowed_packet is 16 MiB).
    let first: Vec<Owned> = (0..1203)
        .map(|i| owned(i, 1, if i.is_multiple_of(25) { 1 << 20 } else { 200 }))
        .collect();
    let run = RunWrite {
        inserts: first.iter().map(write).collect(),
        ..RunWrite::default()
    };
    VrData::apply_run(c, 1, &run, t(10)).unwrap();
    let rows = VrData::for_resource(c, 1).unwrap();
    assert_eq!(rows.len(), 1203);
    for (r, o) in rows.iter().zip(&first) {
        assert_eq!(
            (r.keyword.as_str(), r.md5_sum.as_str(), r.doc_id.as_str()),
            (o.keyword.as_str(), o.md5.as_str(), o.doc_id.as_str())
        );
        assert_eq!(r.content.as_deref(), Some(o.content.as_str()));
        assert_eq!(
            (r.data_status, r.status, r.update_type, r.status_id),
            (Live, Pending, Insert, Some(7))
        );
        assert_eq!(r.update_date, t(10));
        assert_eq!(
            (r.loc_id, r.location.as_str(), r.hit_field.as_deref()),
            (Some(11), "北京", None)
        );
    }
    assert_eq!(VrData::pending(c, 1).unwrap().len(), 1203);
    assert_eq!(VrData::mark_emitted(c, 1).unwrap(), 1203);
    assert!(VrData::pending(c, 1).unwrap().is_empty());

    // Next run: every third changed (one of them a large one), the last ten deleted.
    let id_of = |k: &str| rows.iter().find(|r| r.keyword == k).unwrap().id;
    let changed: Vec<Owned> = (0..1193)
        .step_by(3)
        .map(|i| owned(i, 2, if i == 300 { 2 << 20 } else { 300 }))
        .collect();
    let deleted: Vec<u64> = rows[1193..].iter().map(|r| r.id).collect();
    let run = RunWrite {
        updates: changed
            .iter()
            .map(|o| (id_of(&o.keyword), write(o)))
            .collect(),
        deletes: deleted.clone(),
        ..RunWrite::default()
    };
    VrData::apply_run(c, 1, &run, t(11)).unwrap();
    let known = VrData::known_items(c, 1).unwrap();
    assert_eq!(known.len(), 1203, "nothing inserted by the updates");
    // Ids by key, as a run that diffed against its digest file looks them up: more keys
    // than one look-up takes, a key without a row left out, another resource's not seen.
    let mut keys: Vec<String> = (0..1203).rev().map(|i| format!("k{i}")).collect();
    keys.push("nowhere".into());
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let mut ids = VrData::ids_of(c, 1, &refs).unwrap();
    ids.sort();
    let mut want: Vec<(String, u64)> = known.iter().map(|k| (k.keyword.clone(), k.id)).collect();
    want.sort();
    assert_eq!(ids, want);
    assert!(VrData::ids_of(c, 2, &refs).unwrap().is_empty());
    for r in VrData::for_resource(c, 1).unwrap() {
        let i: usize = r.keyword[1..].parse().unwrap();
        if deleted.contains(&r.id) {
            assert_eq!(
                (r.data_status, r.status, r.update_type),
                (Deleted, Pending, Delete)
            );
            assert_eq!(r.md5_sum, first[i].md5, "a delete keeps the last content");
        } else if i.is_multiple_of(3) {
            let o = owned(i, 2, if i == 300 { 2 << 20 } else { 300 });
            assert_eq!(r.md5_sum, o.md5);
            assert_eq!(r.content.as_deref(), Some(o.content.as_str()));
            assert_eq!(
                (r.data_status, r.status, r.update_type),
                (Live, Pending, Update)
            );
            assert_eq!(r.update_date, t(11));
            assert_eq!(r.create_date, rows[i].create_date, "create_date stays");
        } else {
            assert_eq!(
                (r.status, r.update_type, r.update_date),
                (Emitted, Insert, t(10))
            );
        }
    }
    let pending = VrData::pending(c, 1).unwrap().len();
    assert_eq!(
        pending,
        changed.len() + 10,
        "each changed or deleted row once"
    );
    assert_eq!(VrData::mark_emitted(c, 1).unwrap(), pending);

    // A deleted item back: revived in place, live again as an insert.
    let back = owned(1200, 3, 100);
    let run = RunWrite {
        revivals: vec![(id_of("k1200"), write(&back))],
        ..RunWrite::default()
    };
    VrData::apply_run(c, 1, &run, t(12)).unwrap();
    let r = VrData::find_by_keyword(c, 1, "k1200").unwrap();
    assert_eq!(r.id, id_of("k1200"));
    assert_eq!(
        (r.data_status, r.status, r.update_type, r.md5_sum.as_str()),
        (Live, Pending, Insert, back.md5.as_str())
    );
    assert_eq!(VrData::count_live(c, 1).unwrap(), 1203 - 10 + 1);
    // Another resource's rows are untouched by all this.
    assert!(VrData::for_resource(c, 2).unwrap().is_empty());
}

/// UPDATE2 and UPDATE3 (docs/formats.md "Update types"): unchanged live rows take the loc_id
/// they should have where theirs differs, `update_type = 0`, `status = 1`; other rows, other
/// resources' and deleted ones are left alone.
#[test]
fn relocate_drops_or_changes_the_loc_id_of_unchanged_rows_only_where_it_differs() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let items: Vec<Owned> = (0..4).map(|i| owned(i, 1, 50)).collect();
    for res in [1, 2] {
        let run = RunWrite {
            inserts: items.iter().map(write).collect(),
            ..RunWrite::default()
        };
        VrData::apply_run(c, res, &run, t(10)).unwrap();
        VrData::mark_emitted(c, res).unwrap();
    }
    let k3 = VrData::find_by_keyword(c, 1, "k3").unwrap().id;
    VrData::apply_run(
        c,
        1,
        &RunWrite {
            deletes: vec![k3],
            ..RunWrite::default()
        },
        t(10),
    )
    .unwrap();
    VrData::mark_emitted(c, 1).unwrap();
    // k0 stays at 11 (no change), k1 moves to 12, k2 and the deleted k3 lose theirs.
    assert_eq!(VrData::relocate(c, 1, Some(11), &["k0"], t(11)).unwrap(), 0);
    assert_eq!(VrData::relocate(c, 1, Some(12), &["k1"], t(11)).unwrap(), 1);
    assert_eq!(
        VrData::relocate(c, 1, None, &["k2", "k3"], t(11)).unwrap(),
        1
    );
    assert_eq!(VrData::relocate(c, 1, None, &["k2"], t(12)).unwrap(), 0);
    let mut row = |res, k: &str| VrData::find_by_keyword(c, res, k).unwrap();
    let r0 = row(1, "k0");
    assert_eq!(
        (r0.loc_id, r0.update_type, r0.update_date),
        (Some(11), Insert, t(10))
    );
    let r1 = row(1, "k1");
    assert_eq!(
        (r1.loc_id, r1.update_type, r1.status, r1.update_date),
        (Some(12), UpdateType::Unchanged, Emitted, t(11))
    );
    assert_eq!(r1.location, "北京", "the feed's location stays");
    let r2 = row(1, "k2");
    assert_eq!((r2.loc_id, r2.update_type), (None, UpdateType::Unchanged));
    let r3 = row(1, "k3");
    assert_eq!((r3.loc_id, r3.update_type), (Some(11), Delete));
    assert_eq!(row(2, "k1").loc_id, Some(11), "another resource's row");
}
