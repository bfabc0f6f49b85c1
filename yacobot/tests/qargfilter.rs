//! The qargfilter import: query_args → path_arg_name with the 0.95 threshold, always
//! replacing, and the loader applying the imported rules.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{record, url_row, Site};
use focuser_formats::urls;
use focuser_schema::models::{NewPathArgName, NewQueryArg, PathArgName};
use focuser_tests::TestDb;

#[test]
fn scores_from_0_95_make_arguments_insignificant_replacing_old_rules() {
    let db = TestDb::new();
    let page = "http://news.ru/story";
    let path = urls::path_hash(page);
    let t = chrono::DateTime::from_timestamp(common::T0, 0)
        .unwrap()
        .naive_utc();
    let mut c = db.conn();
    for (name, significant) in [("c", true), ("d", false)] {
        NewPathArgName {
            path_hash: path,
            name,
            significant,
            updated_at: t,
        }
        .insert(&mut c)
        .unwrap();
    }
    for (name, score) in [("a", 0.95), ("b", 0.9499), ("c", 0.99), ("d", 0.1)] {
        NewQueryArg {
            path_hash: path,
            name,
            score,
            computed_at: t,
            pairs: 0,
            equal_pairs: 0,
        }
        .insert(&mut c)
        .unwrap();
    }
    let site = Site::new(db.url(), "Crawl.Enable = 0\n");
    site.queue(
        "m1-0000000001.q",
        &[record(&format!("{page}?a=1&b=2&c=3&d=4&e=5"), 1, "")],
    );
    // --once imports first, then loads.
    site.once();
    let rules: Vec<(String, bool)> = PathArgName::for_path(&mut c, path)
        .unwrap()
        .into_iter()
        .map(|r| (r.name, r.significant))
        .collect();
    let expect = |v: &[(&str, bool)]| -> Vec<(String, bool)> {
        v.iter().map(|(n, s)| (n.to_string(), *s)).collect()
    };
    assert_eq!(
        rules,
        expect(&[
            ("a", false),
            ("b", true),
            ("c", false),
            ("d", true),
            ("e", true)
        ])
    );
    assert!(url_row(&db, &format!("{page}?b=2&d=4&e=5")).is_some());
    assert!(
        site.log().contains("qargfilter import: scores since"),
        "{}",
        site.log()
    );

    // A later score wins again, whatever the rule says now.
    NewQueryArg {
        path_hash: path,
        name: "e",
        score: 0.97,
        computed_at: t,
        pairs: 0,
        equal_pairs: 0,
    }
    .upsert(&mut c)
    .unwrap();
    site.once();
    assert!(!PathArgName::find(&mut c, path, "e").unwrap().significant);
}
