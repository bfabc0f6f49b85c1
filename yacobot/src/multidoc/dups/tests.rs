//! The grouping decisions on hand-made fingerprints.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use chrono::NaiveDateTime;
use focuser_bind::PageBinding;
use focuser_schema::models::NearGroup;

use super::*;

const DOMAIN: u64 = 7;
const TEXT: u64 = 0x0123_4567_89ab_cdef;

fn now() -> NaiveDateTime {
    chrono::DateTime::from_timestamp(1_800_000_000, 0)
        .unwrap()
        .naive_utc()
}

fn binding(doc: u64) -> PageBinding {
    PageBinding::new(doc, &format!("http://a.test/{doc}"), false, vec![])
}

/// A stored group of `TEXT` whose representative is `rep`, with a binding if `item`.
fn stored(rep: u64, item: bool) -> NearGroup {
    NearGroup {
        group_id: group_id(DOMAIN, TEXT),
        simhash: TEXT,
        rep,
        rep_md5: Some("m".into()),
        rep_categories: Some("tech:0.900".into()),
        rep_category_names: Some("Technology".into()),
        rep_model_checksum: Some(5),
        rep_group: Some(group_id(DOMAIN, TEXT)),
        rep_item: item.then(|| binding(rep).canonical()),
    }
}

/// Groups with `current` stored and `near` read, sharing bindings if `bindings`.
fn known(
    near: Vec<((u64, u64), Vec<NearGroup>)>,
    current: &[(u64, u64)],
    bindings: bool,
) -> Groups {
    let current: HashMap<u64, u64> = current.iter().copied().collect();
    let mut g = Groups::new(current, bindings);
    for ((key, simhash), list) in near {
        g.read(key, simhash, list);
    }
    g
}

fn row(id: u64) -> NewMultidocPage {
    NewMultidocPage {
        id,
        outcome: focuser_schema::models::PageOutcome::Analysed,
        lang: Some("en"),
        categories: Some("c:1.000".into()),
        category_names: Some("C".into()),
        main_md5: Some("m".into()),
        main_simhash: Some(TEXT),
        dup_group: None,
        template_share: Some(0.0),
        model_checksum: None,
        analysed_at: now(),
        counted_at: None,
        archive_file: 1,
        archive_item: 1,
    }
}

#[test]
fn a_batch_founds_a_group_and_its_later_pages_join_it() {
    let mut g = Groups::new(HashMap::new(), true);
    let Decision::Own { group } = g.decide(1, DOMAIN, "m", Some(TEXT), now()) else {
        panic!("the first page founds its group");
    };
    assert_eq!(group, group_id(DOMAIN, TEXT));
    g.own(group, 1, &row(1), Some(&binding(1)));
    // The same text: exact; three bits away: near; four bits away: a group of its own.
    let Decision::Duplicate { source, .. } = g.decide(2, DOMAIN, "m", Some(TEXT), now()) else {
        panic!("an exact copy joins");
    };
    assert_eq!(g.tally.exact, 1);
    assert_eq!(source.binding, Some(binding(1)));
    assert_eq!(source.categories.as_deref(), Some("c:1.000"));
    let near = TEXT ^ 0b111;
    assert!(matches!(
        g.decide(3, DOMAIN, "n", Some(near), now()),
        Decision::Duplicate { .. }
    ));
    assert_eq!(g.tally.near, 1);
    let far = TEXT ^ 0b1111;
    assert!(matches!(
        g.decide(4, DOMAIN, "f", Some(far), now()),
        Decision::Own { group } if group == group_id(DOMAIN, far)
    ));
    // Another domain's same text is another group.
    assert!(matches!(
        g.decide(5, DOMAIN + 1, "m", Some(TEXT), now()),
        Decision::Own { .. }
    ));
    assert_eq!((g.tally.founded, g.tally.exact, g.tally.near), (3, 1, 1));
    assert_eq!(g.writes.len(), 3);
    assert!(g
        .writes
        .values()
        .all(|w| w.rep == 1 || w.rep == 4 || w.rep == 5));
}

#[test]
fn a_stored_group_is_shared_and_its_representative_analysed_again() {
    let key = (DOMAIN, TEXT ^ 1);
    let mut g = known(vec![(key, vec![stored(10, true)])], &[], true);
    match g.decide(11, DOMAIN, "x", Some(TEXT ^ 1), now()) {
        Decision::Duplicate { group, source } => {
            assert_eq!(group, group_id(DOMAIN, TEXT));
            assert_eq!((g.tally.exact, g.tally.near), (0, 1));
            assert_eq!(source.binding, Some(binding(10)));
            assert_eq!(source.model_checksum, Some(5));
        }
        _ => panic!("a duplicate"),
    }
    let mut g = known(vec![((DOMAIN, TEXT), vec![stored(10, true)])], &[], true);
    assert!(matches!(
        g.decide(10, DOMAIN, "m", Some(TEXT), now()),
        Decision::Own { .. }
    ));
    assert!(
        g.writes.is_empty(),
        "nothing to write: it is the representative"
    );
}

#[test]
fn without_a_binding_to_share_the_page_is_analysed_and_represents_the_group() {
    let mut g = known(vec![((DOMAIN, TEXT), vec![stored(10, false)])], &[], true);
    assert!(matches!(
        g.decide(11, DOMAIN, "m", Some(TEXT), now()),
        Decision::Own { .. }
    ));
    assert_eq!(g.tally.unshared, 1);
    assert_eq!(g.writes.values().next().unwrap().rep, 11);
    // Without bindings, the categories alone are shared.
    let mut g = known(vec![((DOMAIN, TEXT), vec![stored(10, false)])], &[], false);
    assert!(matches!(
        g.decide(11, DOMAIN, "m", Some(TEXT), now()),
        Decision::Duplicate { .. }
    ));
}

#[test]
fn a_page_stays_in_its_group_while_near_and_leaving_touches_it() {
    // Two groups one bit from the page: it stays in the one it was in, though the other has
    // the smaller id (which a page new to both would join).
    let probe = TEXT ^ 0b0100_0000;
    let other = TEXT ^ 0b1100_0000;
    let mut a = stored(10, true);
    let mut b = stored(10, true);
    b.group_id = group_id(DOMAIN, other);
    b.simhash = other;
    b.rep_group = Some(b.group_id);
    if a.group_id > b.group_id {
        std::mem::swap(&mut a, &mut b);
    }
    let mut g = known(
        vec![((DOMAIN, probe), vec![a.clone(), b.clone()])],
        &[(12, b.group_id)],
        true,
    );
    assert!(matches!(
        g.decide(12, DOMAIN, "x", Some(probe), now()),
        Decision::Duplicate { group, .. } if group == b.group_id
    ));
    assert!(matches!(
        g.decide(15, DOMAIN, "x", Some(probe), now()),
        Decision::Duplicate { group, .. } if group == a.group_id
    ));
    // No word: no group; the one it was in is touched (it may be left without a page).
    g.decide(12, DOMAIN, "", None, now());
    assert_eq!(g.tally.no_text, 1);
    assert!(g.touched.contains(&b.group_id));
    let mut g = known(vec![], &[(13, 99)], true);
    g.leave(13);
    g.leave(14);
    assert_eq!(g.touched.iter().copied().collect::<Vec<_>>(), [99]);
}

#[test]
fn a_stored_binding_that_cannot_be_read_is_not_shared() {
    let mut bad = stored(10, true);
    bad.rep_item = Some("{not an item".into());
    let mut g = known(vec![((DOMAIN, TEXT), vec![bad])], &[], true);
    assert!(matches!(
        g.decide(11, DOMAIN, "m", Some(TEXT), now()),
        Decision::Own { .. }
    ));
    assert_eq!(g.tally.unshared, 1);
}
