//! Duplicate groups (issue 27, `md5.db`) through the real binary: a site served over HTTP,
//! crawled, analysed and bound by yacobot; exact and near copies of a page grouped with it and
//! given its binding under their own doc id without being classified, bound or counted again;
//! a small real change and pages with no text not grouped; the group keeping its binding when
//! its representative changes and when it goes; a large group of copies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::bindings::{direct, direct_phrases, load, parsed, phones, rows, shipped};
use common::multidoc::{id_of, page, pages_by_id};
use common::{due_url, Site};
use focuser_formats::segment::Status;
use focuser_schema::models::{MultidocGroup, MultidocPage};
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::{free_port, metric, metric_with, wait_for, TestDb};

const HOST: &str = "dup.test";
/// Pages of the site besides the ones under test, so that its template evidence is a site's.
const OTHERS: usize = 24;

fn crawler(db: &TestDb, server: &WebServer, extra: &str) -> Site {
    server.set("*", "/robots.txt", Behaviour::status(404));
    let site = Site::with(
        db.url(),
        &format!(
            "Loader.Enable = 0\nQargfilter.Enable = 0\nFetch.Resolve = {}\n\
             Fetch.AllowPrivate = 127.0.0.1\nFetch.HostDelay = 0\nFetch.ConnectTimeout = 2\n\
             MultiDoc.Enable = 1\nBindings.Enable = 1\n{extra}",
            server.resolve().join(" ")
        ),
    );
    let dict = direct(&[
        ("phone case", 12),
        ("wireless charging", 5),
        ("battery life", 3),
    ]);
    load(&site, "direct", "direct.tsv", dict.as_bytes());
    site
}

/// Serves `html` at `path` and makes its URL due; the URL.
fn serve(db: &TestDb, server: &WebServer, path: &str, html: &str) -> String {
    server.set(HOST, path, Behaviour::html(html));
    let url = server.url(HOST, path);
    due_url(db, &url, 1, 3);
    url
}

/// The site's other pages, each its own article under the menu and footer.
fn serve_others(db: &TestDb, server: &WebServer) {
    for i in 0..OTHERS {
        serve(db, server, &format!("/p/{i}.html"), &page(i).1);
    }
}

/// A long review (some 1 000 words: fifteen paragraphs, each with a word of its own) under
/// the site's menu and footer.
fn long_review(title: &str) -> String {
    let body: String = (100..115).map(phones).collect::<Vec<_>>().join("\n");
    article(title, &body)
}

fn article(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>\n\
         <nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/news\">News</a></li></ul></nav>\n\
         <main><h1>{title}</h1>\n{body}</main>\n\
         <footer><p>Copyright Example Publishing Ltd. All rights reserved.</p></footer></body></html>\n"
    )
}

/// A short notice; `day` is its one real difference.
fn notice(day: &str) -> String {
    article(
        "Opening hours",
        &format!(
            "<p>The museum shop is open on {day} from ten to six, and the cafe closes an hour \
             earlier on public holidays.</p>"
        ),
    )
}

/// Due again now and downloaded (past its steady level).
fn due_again(db: &TestDb, url: &str) {
    common::sql(
        db,
        &format!(
            "UPDATE url SET hits = 1, steady_level = 0, \
             next_indexed = UTC_TIMESTAMP() - INTERVAL 1 SECOND WHERE url = '{url}'"
        ),
    );
}

fn group_of(rows: &BTreeMap<u64, MultidocPage>, url: &str) -> Option<u64> {
    rows[&id_of(url)].dup_group
}

fn group(db: &TestDb, id: u64) -> Option<MultidocGroup> {
    MultidocGroup::find(&mut db.conn(), id).unwrap()
}

#[test]
fn exact_and_near_copies_share_their_group_s_binding_and_a_real_change_does_not() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let port = free_port();
    let site = crawler(
        &db,
        &server,
        &format!("MultiDoc.Batch = 4\nstatus_listen = {port}\n"),
    );
    serve_others(&db, &server);
    let review = long_review("Phones of the year");
    let a = serve(&db, &server, "/a.html", &review);
    let b = serve(&db, &server, "/b.html", &notice("Tuesdays"));
    site.once();

    // Copies and changes, crawled by the daemon: its figures count them.
    let copy = serve(&db, &server, "/a-print.html", &review);
    let near = serve(
        &db,
        &server,
        "/a-amp.html",
        &review.replacen("cheap now", "affordable now", 1).replacen(
            "sharp photos",
            "crisp photos",
            1,
        ),
    );
    let changed = serve(&db, &server, "/b-changed.html", &notice("Sundays"));
    let blank = "<html><body><div><img src=\"/logo.png\" alt=\"\"></div></body></html>";
    let blanks = [
        serve(&db, &server, "/blank-1.html", blank),
        serve(&db, &server, "/blank-2.html", blank),
    ];
    let running = site.spawn();
    wait_for("the copies analysed", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_multidoc_pages_total") == Some(5.0)
            && metric(port, "focuser_yacobot_multidoc_lag_items") == Some(0.0)
    });
    let dup = |kind: &str| {
        metric_with(
            port,
            "focuser_yacobot_multidoc_duplicates_total",
            &format!("kind=\"{kind}\""),
        )
    };
    assert_eq!(
        (dup("exact"), dup("near")),
        (Some(1.0), Some(1.0)),
        "{}",
        site.log()
    );
    assert_eq!(
        metric(port, "focuser_yacobot_multidoc_no_text_total"),
        Some(2.0)
    );
    assert_eq!(
        metric(port, "focuser_yacobot_multidoc_groups_founded_total"),
        Some(1.0)
    );
    // Classified and bound: the real change and the blank pages, not the copies.
    assert_eq!(
        metric(port, "focuser_yacobot_multidoc_pages_counted_total"),
        Some(3.0)
    );
    running.stop();

    let pages = pages_by_id(&db);
    let g = group_of(&pages, &a).expect("the review's group");
    assert_eq!(group_of(&pages, &copy), Some(g));
    assert_eq!(group_of(&pages, &near), Some(g));
    assert_eq!(group(&db, g).unwrap().rep, id_of(&a));
    assert_eq!(pages[&id_of(&copy)].main_md5, pages[&id_of(&a)].main_md5);
    assert_ne!(pages[&id_of(&near)].main_md5, pages[&id_of(&a)].main_md5);
    assert_eq!(
        pages[&id_of(&copy)].counted_at,
        None,
        "a copy is not counted"
    );
    let (gb, gc) = (
        group_of(&pages, &b).unwrap(),
        group_of(&pages, &changed).unwrap(),
    );
    assert_ne!(
        gb, gc,
        "a small real change in a short text is another text"
    );
    for u in &blanks {
        assert_eq!(group_of(&pages, u), None, "no text, no group");
    }

    // The copies' bindings: the review's, under their own doc id and URL, shipped.
    let bindings = rows(&db);
    let original = parsed(&bindings[&id_of(&a)]);
    assert!(!direct_phrases(&original).is_empty(), "the review is bound");
    for u in [&copy, &near] {
        let mut b = parsed(&bindings[&id_of(u)]);
        assert_eq!((b.doc, b.url.as_str()), (id_of(u), u.as_str()));
        (b.doc, b.url) = (original.doc, original.url.clone());
        assert_eq!(b, original, "{u}");
        let doc = format!("{:016x}", id_of(u));
        assert!(shipped(&site)
            .iter()
            .any(|i| i.doc_id == doc && i.status == Status::Update));
    }

    // The representative changes: the group keeps its text and its binding, and takes its
    // smallest page; the changed page is analysed and bound as a page of its own.
    server.set(HOST, "/a.html", Behaviour::html(&page(OTHERS + 1).1));
    due_again(&db, &a);
    site.once();
    let pages = pages_by_id(&db);
    assert_ne!(group_of(&pages, &a), Some(g));
    let first = id_of(&copy).min(id_of(&near));
    assert_eq!(group(&db, g).unwrap().rep, first);
    let bindings = rows(&db);
    assert_ne!(parsed(&bindings[&id_of(&a)]).bindings, original.bindings);
    assert_eq!(parsed(&bindings[&id_of(&copy)]).bindings, original.bindings);

    // Its new representative goes: the last page takes its place; then it goes too.
    let (first_url, last_url) = if first == id_of(&copy) {
        (&copy, &near)
    } else {
        (&near, &copy)
    };
    server.set(
        HOST,
        &first_url[first_url.rfind('/').unwrap()..],
        Behaviour::status(404),
    );
    due_again(&db, first_url);
    site.once();
    assert_eq!(group(&db, g).unwrap().rep, id_of(last_url));
    server.set(
        HOST,
        &last_url[last_url.rfind('/').unwrap()..],
        Behaviour::status(404),
    );
    due_again(&db, last_url);
    site.once();
    assert_eq!(group(&db, g), None, "a group without a page goes");
}

#[test]
fn a_large_group_of_copies_is_analysed_once() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let site = crawler(&db, &server, "MultiDoc.Batch = 16\n");
    serve_others(&db, &server);
    let review = long_review("The same everywhere");
    let copies: Vec<String> = (0..120)
        .map(|i| serve(&db, &server, &format!("/same/{i}.html"), &review))
        .collect();
    site.once();
    let log = site.log();
    let pages = pages_by_id(&db);
    let groups: std::collections::BTreeSet<Option<u64>> =
        copies.iter().map(|u| group_of(&pages, u)).collect();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let g = groups.into_iter().next().unwrap().unwrap();
    assert_eq!(MultidocGroup::pages(&mut db.conn(), g).unwrap().len(), 120);
    // One analysed, bound and counted; 119 shared.
    let counted = copies
        .iter()
        .filter(|u| pages[&id_of(u)].counted_at.is_some())
        .count();
    assert_eq!(counted, 1, "{log}");
    let bindings = rows(&db);
    let mut items: Vec<_> = copies
        .iter()
        .map(|u| parsed(&bindings[&id_of(u)]).bindings)
        .collect();
    items.dedup();
    assert_eq!(items.len(), 1);
}
