//! `yacobot dict load|list` through the binary: dictionaries into SQL (their phrases as the
//! tokenizer stems them), bad files refused with file and line while the dictionary in force
//! stays, the same version not loaded twice; and the newest dictionary's age read by the
//! re-index bookkeeping (`Url.DictAge`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::bindings::{dict, direct, direct_v1, load};
use common::{due_url, number, sql, url_row, Site};
use focuser_schema::models::{BindingDict, BindingDictPhrase};
use focuser_tests::TestDb;

fn list(site: &Site) -> String {
    let out = dict(site, &["list"]);
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Loads `text` as a direct dictionary named `name`, which must be refused at `line`.
fn refused(site: &Site, name: &str, text: &[u8], line: usize, why: &str) {
    let path = site.root().join(name);
    std::fs::write(&path, text).unwrap();
    let out = dict(site, &["load", "direct", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{name} was loaded");
    assert!(
        err.contains(&format!("{}:{line}: ", path.display())),
        "{name}: {err}"
    );
    assert!(err.contains(why), "{name}: {err}");
    assert!(err.contains("the dictionary in force stays"), "{err}");
}

#[test]
fn dictionaries_are_loaded_listed_and_bad_files_refused_with_their_line() {
    let db = TestDb::new();
    let site = Site::new(db.url(), "");
    assert_eq!(list(&site), "no dictionary loaded\n");

    let said = load(&site, "direct", "direct-1.tsv", direct_v1().as_bytes());
    assert!(said.contains("direct dictionary"), "{said}");
    assert!(said.contains("(5 phrases)"), "{said}");
    let first = BindingDict::current(&mut db.conn()).unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!((first[0].kind, first[0].phrases), (1, 5));
    assert_eq!(first[0].file_name, "direct-1.tsv");
    assert_eq!(first[0].version.len(), 16);
    // Phrases as the file writes them, stems as the tokenizer makes them.
    let phrases = BindingDict::phrases(&mut db.conn(), first[0].id).unwrap();
    let case: &BindingDictPhrase = phrases.iter().find(|p| p.phrase == "phone case").unwrap();
    assert_eq!((case.stems.as_str(), case.advertisers), ("phone case", 12));
    assert_eq!(case.line, 2);

    // The same content again (other order and spacing): the same version, not loaded.
    let again = direct(&[
        ("страхование от теракта", 2),
        ("battery  life", 3),
        ("earthquake insurance", 4),
        ("wireless charging", 5),
        ("phone case", 12),
    ]);
    let said = load(&site, "direct", "direct-again.tsv", again.as_bytes());
    assert!(said.contains("nothing loaded"), "{said}");
    assert_eq!(
        number(&db, "SELECT COUNT(*) AS n FROM binding_dict"),
        1,
        "loaded twice"
    );

    // Bad files, each refused whole at its line; the dictionary in force stays.
    let header = "#focuser-dictionary 1 kind=direct\n";
    refused(
        &site,
        "columns.tsv",
        format!("{header}phone case\t3\nno advertisers here\n").as_bytes(),
        3,
        "column",
    );
    let mut bytes = format!("{header}phone case\t3\n").into_bytes();
    bytes.extend_from_slice(b"caf\xe9 latte\t2\n");
    refused(&site, "latin1.tsv", &bytes, 3, "not UTF-8");
    let huge = format!("{header}{}\t1\n", "a".repeat(1 << 20));
    refused(&site, "huge.tsv", huge.as_bytes(), 2, "bytes");
    refused(
        &site,
        "dups.tsv",
        format!("{header}phone case\t3\nbattery life\t1\nPhone  Cases\t2\n").as_bytes(),
        4,
        "same words as line 2",
    );
    refused(
        &site,
        "kind.tsv",
        b"#focuser-dictionary 1 kind=market\nphone case\ttech\n",
        1,
        "direct expected",
    );
    let missing = dict(&site, &["load", "direct", "/nonexistent/dict.tsv"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/dict.tsv"));
    let bad_kind = dict(&site, &["load", "banner", "direct-1.tsv"]);
    assert!(String::from_utf8_lossy(&bad_kind.stderr).contains("direct, market or media"));
    assert_eq!(BindingDict::current(&mut db.conn()).unwrap(), first);
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM binding_dict"), 1);

    // A new version, and a market dictionary: both in force, the old direct one listed.
    let v2 = direct(&[("phone case", 14), ("screen protector", 6)]);
    let said = load(&site, "direct", "direct-2.tsv", v2.as_bytes());
    assert!(said.contains("(2 phrases)"), "{said}");
    load(
        &site,
        "market",
        "market.tsv",
        b"#focuser-dictionary 1 kind=market\nphone cases\t1\n",
    );
    let now = BindingDict::current(&mut db.conn()).unwrap();
    assert_eq!(now.len(), 2);
    assert_eq!(
        (now[0].kind, now[0].file_name.as_str()),
        (1, "direct-2.tsv")
    );
    assert_eq!((now[1].kind, now[1].file_name.as_str()), (2, "market.tsv"));
    let listed = list(&site);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 4, "{listed}");
    assert!(lines[0].starts_with("id\tkind\tversion"), "{listed}");
    assert!(
        lines[1].contains("\tmarket\t") && lines[1].ends_with("\tyes"),
        "{listed}"
    );
    assert!(lines[2].contains("direct-2.tsv\tyes"), "{listed}");
    assert!(lines[3].contains(&first[0].version), "{listed}");
    assert!(lines[3].ends_with("direct-1.tsv\tno"), "{listed}");
}

fn days_to_next(db: &TestDb, url: &str) -> f64 {
    let row = url_row(db, url).unwrap();
    (row.next_indexed - row.last_indexed.unwrap()).num_seconds() as f64 / 86_400.0
}

#[test]
fn the_newest_dictionary_loaded_is_the_age_url_dict_age_reads() {
    let db = TestDb::new();
    let site = Site::new(
        db.url(),
        "Loader.Enable = 0\nQargfilter.Enable = 0\n\
         Url.DictPeriod = 7\nUrl.DictAge = 10\nUrl.ReindexPeriod = 3\n",
    );
    let crawl = |i: usize| {
        let url = format!("http://d.ru/{i}");
        site.page(&format!("d.ru/{i}"), "x");
        due_url(&db, &url, 1, 3);
        sql(
            &db,
            &format!("UPDATE url SET steady_level = 10 WHERE url = '{url}'"),
        );
        site.once();
        days_to_next(&db, &url)
    };
    // No dictionary: stale.
    assert!((crawl(0) - 3.0).abs() < 0.01);
    load(&site, "direct", "d.tsv", direct_v1().as_bytes());
    // Loaded two days ago: the next is 5 days away.
    sql(
        &db,
        "UPDATE binding_dict SET loaded_at = UTC_TIMESTAMP() - INTERVAL 2 DAY",
    );
    let got = crawl(1);
    assert!((got - 5.0).abs() < 0.01, "{got}");
    // Thirty days ago: stale again, Url.ReindexPeriod.
    sql(
        &db,
        "UPDATE binding_dict SET loaded_at = UTC_TIMESTAMP() - INTERVAL 30 DAY",
    );
    let got = crawl(2);
    assert!((got - 3.0).abs() < 0.01, "{got}");
    // A newer one loaded (of another kind): its age counts.
    load(
        &site,
        "media",
        "media.tsv",
        b"#focuser-dictionary 1 kind=media\nphone case\t1\n",
    );
    sql(
        &db,
        "UPDATE binding_dict SET loaded_at = UTC_TIMESTAMP() - INTERVAL 1 DAY WHERE kind = 3",
    );
    let got = crawl(3);
    assert!((got - 6.0).abs() < 0.01, "{got}");
}
