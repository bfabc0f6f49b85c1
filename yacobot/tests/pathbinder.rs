//! The path binder through the binary (`yacobot --once` and the daemon), over bindings stored
//! in `binding_page` as the page analysis worker leaves them: a section with `MinUrls - 1`
//! bound pages gets no stub and one with `MinUrls` gets one; a section that loses pages has
//! its stub withdrawn; unchanged stubs are not shipped again; a host's insignificant query
//! arguments are shipped as a `query_args` item; and `kill -9` inside a domain's transaction
//! (its items appended and synced, `path_stub` not committed) ships every change once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{archive_items, due_url, number, sql, ArchivedItem, Site};
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use focuser_bind::adserver::{Item, QueryArgs};
use focuser_bind::binding::{Binding, BoundPhrase};
use focuser_bind::path::section_id;
use focuser_bind::{Kind, PageBinding};
use focuser_formats::segment::Status;
use focuser_schema::models::{BindingPage, NewBindingPage, PathStub};
use focuser_schema::schema::path_stub;
use focuser_tests::{wait_for, TestDb};
use nix::sys::signal::Signal;

const MIN_URLS: usize = 3;
/// Bindings seeded in SQL: nothing to crawl.
const SEEDED: &str = "Crawl.Enable = 0\n";

fn site(db: &TestDb, extra: &str) -> Site {
    Site::new(
        db.url(),
        &format!(
            "PathBinder.Enable = 1\nPathBinder.MinUrls = {MIN_URLS}\n\
             PathBinder.Depth = 1\nPathBinder.Interval = 1\n{extra}"
        ),
    )
}

/// A bound page at `url` (a URL row and its `binding_page` row): a direct phrase and a
/// category every page of the test has, and one of its own.
fn bind(db: &TestDb, url: &str) -> u64 {
    let id = due_url(db, url, 1, 0);
    let b = PageBinding::new(
        id,
        url,
        false,
        vec![Binding {
            kind: Kind::Direct,
            dict_version: 1,
            categories: vec![("1".into(), 900)],
            phrases: vec![
                BoundPhrase {
                    text: "phone case".into(),
                    relevance: 700,
                    advertisers: 3,
                },
                BoundPhrase {
                    text: format!("page {id}"),
                    relevance: 500,
                    advertisers: 1,
                },
            ],
        }],
    );
    let item = b.canonical();
    BindingPage::write(
        &mut db.conn(),
        &[NewBindingPage {
            id,
            md5: b.md5(),
            item,
            tragic: false,
            phrases: 2,
            dict_versions: "direct:0000000000000001".into(),
            bound_at: chrono::Utc::now().naive_utc(),
        }],
    )
    .unwrap();
    id
}

fn stubs(db: &TestDb) -> BTreeMap<u64, PathStub> {
    path_stub::table
        .select(PathStub::as_select())
        .load(&mut db.conn())
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r))
        .collect()
}

fn shipped(site: &Site) -> Vec<ArchivedItem> {
    let dir = site.root().join("stubs");
    if !dir.is_dir() {
        return Vec::new();
    }
    archive_items(&dir)
}

fn key(section: &str) -> String {
    format!("{:016x}", section_id(section))
}

/// Every item of the store, parsed; and that no key got the same item twice in a row.
fn items(site: &Site) -> Vec<(Status, String, Option<Item>)> {
    let all: Vec<(Status, String, Option<Item>)> = shipped(site)
        .into_iter()
        .map(|i| {
            let item =
                (i.status == Status::Update).then(|| Item::parse(i.content.as_bytes()).unwrap());
            (i.status, i.doc_id, item)
        })
        .collect();
    let mut last: BTreeMap<&str, (&Status, &Option<Item>)> = BTreeMap::new();
    for (status, doc, item) in &all {
        if let Some(prev) = last.insert(doc, (status, item)) {
            assert_ne!(
                prev,
                (status, item),
                "{doc} shipped twice the same: {item:?}"
            );
        }
    }
    all
}

#[test]
fn sections_with_min_urls_get_a_stub_and_lose_it_when_pages_go() {
    let db = TestDb::new();
    let site = site(&db, SEEDED);
    let mut news = Vec::new();
    for i in 0..MIN_URLS {
        news.push(bind(&db, &format!("http://a.test/news/{i}.html")));
    }
    for i in 0..MIN_URLS - 1 {
        bind(&db, &format!("http://a.test/shop/{i}.html"));
    }
    site.once();
    let rows = stubs(&db);
    let want: Vec<u64> = {
        let mut k = vec![section_id("a.test/"), section_id("a.test/news/")];
        k.sort_unstable();
        k
    };
    assert_eq!(rows.keys().copied().collect::<Vec<_>>(), want, "{rows:?}");
    assert!(
        !rows.contains_key(&section_id("a.test/shop/")),
        "MinUrls - 1 pages: no stub"
    );
    let news_row = &rows[&section_id("a.test/news/")];
    assert_eq!(
        (
            news_row.host.as_str(),
            news_row.prefix.as_str(),
            news_row.urls
        ),
        ("a.test", "/news/", 3)
    );
    let root = &rows[&section_id("a.test/")];
    assert_eq!(root.urls as usize, 2 * MIN_URLS - 1);
    let Item::Stub(stub) = Item::parse(news_row.item.as_bytes()).unwrap() else {
        panic!("not a stub")
    };
    // The phrase every page has first, with its share of the pages (thousandths).
    let phrases: Vec<(&str, u16)> = stub.bindings[0]
        .phrases
        .iter()
        .map(|p| (p.text.as_str(), p.relevance))
        .collect();
    assert_eq!(phrases[0], ("phone case", 1000), "{phrases:?}");
    assert!(
        phrases[1..].iter().all(|(_, share)| *share == 333),
        "{phrases:?}"
    );
    let first = items(&site);
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first.iter().all(|(s, _, _)| *s == Status::Update));

    // Nothing changed: nothing shipped again.
    site.once();
    assert_eq!(items(&site).len(), 2);
    assert_eq!(stubs(&db).len(), 2);

    // A news page loses its binding: the section falls below MinUrls, its stub is withdrawn;
    // the root's stub changes (one page fewer).
    sql(
        &db,
        &format!("DELETE FROM binding_page WHERE id = {}", news[0]),
    );
    site.once();
    let after = items(&site);
    assert_eq!(after.len(), 4, "{after:?}");
    let news_key = key("a.test/news/");
    assert!(after[2..]
        .iter()
        .any(|(s, d, _)| *s == Status::Delete && *d == news_key));
    assert!(after[2..].iter().any(|(s, d, item)| *s == Status::Update
        && *d == key("a.test/")
        && matches!(item, Some(Item::Stub(st)) if st.urls as usize == 2 * MIN_URLS - 2)));
    let rows = stubs(&db);
    assert_eq!(
        rows.keys().copied().collect::<Vec<_>>(),
        vec![section_id("a.test/")]
    );
    assert!(
        site.log().contains("path binder: pass done"),
        "{}",
        site.log()
    );
}

#[test]
fn insignificant_query_arguments_are_shipped_per_host() {
    let db = TestDb::new();
    let site = site(&db, SEEDED);
    due_url(&db, "http://q.test/list?page=2", 1, 0);
    let path_hash: u64 = focuser_formats::urls::path_hash("http://q.test/list");
    sql(
        &db,
        &format!(
            "INSERT INTO path_arg_name (path_hash, name, significant, updated_at) VALUES \
             ({path_hash}, 'utm_source', 0, NOW()), ({path_hash}, 'sid', 0, NOW()), \
             ({path_hash}, 'page', 1, NOW())"
        ),
    );
    site.once();
    let got = items(&site);
    let want = Item::QueryArgs(QueryArgs::new(
        section_id("q.test"),
        "q.test",
        ["sid".to_string(), "utm_source".to_string()],
    ));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].2.as_ref(), Some(&want));
    assert_eq!(got[0].1, key("q.test"));
    let rows = stubs(&db);
    assert_eq!(rows[&section_id("q.test")].kind, PathStub::QUERY_ARGS);

    // Unchanged: not again; one argument significant now: a new item.
    site.once();
    assert_eq!(items(&site).len(), 1);
    sql(
        &db,
        "UPDATE path_arg_name SET significant = 1 WHERE name = 'utm_source'",
    );
    site.once();
    let got = items(&site);
    assert_eq!(got.len(), 2, "{got:?}");
    let Some(Item::QueryArgs(q)) = &got[1].2 else {
        panic!("{got:?}")
    };
    assert_eq!(q.args, ["sid"]);
    // None left: withdrawn.
    sql(&db, "UPDATE path_arg_name SET significant = 1");
    site.once();
    let got = items(&site);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(
        (got[2].0, got[2].1.as_str()),
        (Status::Delete, key("q.test").as_str())
    );
    assert!(stubs(&db).is_empty());
}

/// Runs the daemon until a domain waits to move the stubs position (its items appended and
/// synced, its `path_stub` rows written in its transaction), then kills it there.
fn kill_in_a_transaction(db: &TestDb, site: &Site) {
    let before = shipped(site).len();
    let mut lock = db.conn();
    lock.batch_execute("BEGIN; SELECT * FROM binding_position FOR UPDATE")
        .unwrap();
    let daemon = site.spawn();
    let waiting = format!(
        "SELECT COUNT(*) AS n FROM information_schema.processlist \
         WHERE db = '{}' AND info LIKE 'REPLACE%binding_position%'",
        db.name()
    );
    wait_for(
        "a domain moving the stubs position",
        Duration::from_secs(60),
        || number(db, &waiting) > 0,
    );
    daemon.signal(Signal::SIGKILL);
    drop(daemon);
    lock.batch_execute("ROLLBACK").unwrap();
    assert!(
        shipped(site).len() > before,
        "the killed domain's items were not appended before its transaction"
    );
}

#[test]
fn kill_9_inside_a_domain_ships_every_change_once() {
    let db = TestDb::new();
    let site = site(&db, SEEDED);
    let mut first = Vec::new();
    for d in ["a.test", "b.test", "c.test"] {
        for i in 0..MIN_URLS {
            let id = bind(&db, &format!("http://{d}/news/{i}.html"));
            if d == "a.test" {
                first.push(id);
            }
        }
    }
    kill_in_a_transaction(&db, &site);
    assert!(stubs(&db).is_empty(), "the killed transaction left rows");
    // a.test's news section gains a page (its stubs change) and is killed again there.
    first.push(bind(&db, "http://a.test/news/9.html"));
    kill_in_a_transaction(&db, &site);
    // Then a.test loses every binding: what the killed runs shipped for it is withdrawn.
    sql(
        &db,
        "DELETE FROM binding_page WHERE id IN (SELECT id FROM url WHERE domain = 'a.test')",
    );
    site.once();
    let got = items(&site);
    // What the ad server holds at the end (the last item of each key) is what path_stub says.
    let mut held: BTreeMap<String, String> = BTreeMap::new();
    for i in shipped(&site) {
        if i.status == Status::Update {
            held.insert(i.doc_id, i.content);
        } else {
            held.remove(&i.doc_id);
        }
    }
    let rows = stubs(&db);
    let stored: BTreeMap<String, String> = rows
        .values()
        .map(|r| (format!("{:016x}", r.id), r.item.clone()))
        .collect();
    assert_eq!(held, stored, "{got:?}");
    assert!(rows.values().all(|r| r.domain != "a.test"));
    for k in ["a.test/", "a.test/news/"] {
        assert!(
            got.iter()
                .any(|(s, d, _)| *s == Status::Delete && *d == key(k)),
            "{k}"
        );
    }
    for d in ["b.test", "c.test"] {
        assert!(rows.contains_key(&section_id(&format!("{d}/news/"))));
        assert!(rows.contains_key(&section_id(&format!("{d}/"))));
    }
    assert_eq!(rows.len(), 4);
    let position = number(
        &db,
        "SELECT CAST(COUNT(*) AS SIGNED) AS n FROM binding_position",
    );
    assert_eq!(position, 1);
}

/// The whole road: pages crawled, analysed and bound by the same `yacobot --once`, then the
/// section of `MinUrls` bound pages gets its stub of the phrases they share, and the section
/// with fewer gets none.
#[test]
fn crawled_and_bound_pages_make_their_section_s_stub() {
    use common::bindings::{direct, html, load, phones, serve, BINDING};
    let db = TestDb::new();
    let site = site(&db, BINDING);
    let mut pages: Vec<(String, String)> = (0..MIN_URLS)
        .map(|i| {
            (
                format!("shop.test/reviews/{i}.html"),
                html(&format!("Review {i}"), &phones(i)),
            )
        })
        .collect();
    for i in 0..MIN_URLS - 1 {
        pages.push((
            format!("shop.test/deals/{i}.html"),
            html(&format!("Deal {i}"), &phones(i + 10)),
        ));
    }
    let urls = serve(&db, &site, &pages);
    let dict = direct(&[("phone case", 12), ("wireless charging", 5)]);
    load(&site, "direct", "direct.tsv", dict.as_bytes());
    site.once();
    assert_eq!(
        number(&db, "SELECT COUNT(*) AS n FROM binding_page"),
        urls.len() as i64,
        "{}",
        site.log()
    );
    let rows = stubs(&db);
    assert!(
        !rows.contains_key(&section_id("shop.test/deals/")),
        "{rows:?}"
    );
    let reviews = &rows[&section_id("shop.test/reviews/")];
    assert_eq!(reviews.urls as usize, MIN_URLS);
    let Item::Stub(stub) = Item::parse(reviews.item.as_bytes()).unwrap() else {
        panic!("not a stub")
    };
    let phrases: Vec<(&str, u16)> = stub.bindings[0]
        .phrases
        .iter()
        .map(|p| (p.text.as_str(), p.relevance))
        .collect();
    assert!(phrases.contains(&("phone case", 1000)), "{phrases:?}");
    assert_eq!(rows[&section_id("shop.test/")].urls as usize, urls.len());
    let got = items(&site);
    assert_eq!(got.len(), 2, "{got:?}");
}

/// The daemon passes every `PathBinder.Interval` and counts on its status page: sections seen,
/// stubs built, items shipped, withdrawn and unchanged.
#[test]
fn the_daemon_passes_every_interval_and_counts() {
    use focuser_tests::{free_port, get, metric};
    let db = TestDb::new();
    let port = free_port();
    let site = site(&db, &format!("{SEEDED}status_listen = {port}\n"));
    let mut news = Vec::new();
    for i in 0..MIN_URLS {
        news.push(bind(&db, &format!("http://a.test/news/{i}.html")));
    }
    bind(&db, "http://a.test/shop/0.html");
    let daemon = site.spawn();
    let m = |s: &str| metric(port, &format!("focuser_yacobot_pathbinder_{s}")).unwrap_or(-1.0);
    wait_for("a pass", Duration::from_secs(60), || {
        m("passes_total") >= 1.0
    });
    // Sections a.test/, a.test/news/, a.test/shop/; stubs for the first two (one scrape: a
    // pass may be under way).
    let page = get(port, "/metrics");
    let value = |s: &str| -> f64 {
        let name = format!("focuser_yacobot_pathbinder_{s}");
        let line = page
            .lines()
            .find(|l| {
                l.strip_prefix(&name)
                    .is_some_and(|r| r.starts_with([' ', '{']))
            })
            .unwrap_or_else(|| panic!("no {name} in {page}"));
        line.rsplit_once(' ').unwrap().1.trim().parse().unwrap()
    };
    let passes = value("passes_total");
    assert!(passes >= 1.0);
    assert!(
        [3.0 * passes, 3.0 * (passes + 1.0)].contains(&value("sections_total")),
        "{page}"
    );
    assert!(
        [2.0 * passes, 2.0 * (passes + 1.0)].contains(&value("stubs_total")),
        "{page}"
    );
    assert_eq!(value("shipped_total"), 2.0);
    wait_for("a second pass", Duration::from_secs(60), || {
        m("passes_total") >= 2.0
    });
    assert_eq!(m("shipped_total"), 2.0, "unchanged stubs not shipped again");
    assert!(m("unchanged_total") >= 2.0);
    sql(
        &db,
        &format!("DELETE FROM binding_page WHERE id = {}", news[0]),
    );
    wait_for("the withdrawal", Duration::from_secs(60), || {
        m("withdrawn_total") == 1.0
    });
    wait_for("the root's new stub", Duration::from_secs(60), || {
        m("shipped_total") == 3.0
    });
    daemon.stop();
    assert_eq!(items(&site).len(), 4);
}
