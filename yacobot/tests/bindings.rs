//! The bindings made by the page analysis worker, through the binary: pages of a crawled site
//! bound with the dictionaries loaded (`binding_page`, the bindings store, `yacobot
//! bindings URL`), tragic pages in English and Russian flagged with their phrases withheld,
//! an unchanged binding not shipped again, and a dictionary loaded while the daemon runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::bindings::{
    direct, direct_phrases, html, load, parsed, phones, rows, serve, shipped, show, BINDING,
    TRAGIC_EN, TRAGIC_RU,
};
use common::multidoc::{id_of, multidoc_cmd};
use common::{ArchivedItem, Site};
use focuser_bind::binder::Finder;
use focuser_bind::binding::{collected, TypeParams};
use focuser_bind::page::PageText;
use focuser_bind::{Dictionary, Kind};
use focuser_formats::segment::Status;
use focuser_multidoc::tokenize::Tokenizer;
use focuser_schema::models::BindingDict;
use focuser_tests::{free_port, get, metric, wait_for, TestDb};

const CALM: usize = 6;

/// The shop's pages: calm articles about phones, then a tragic one in each language.
fn shop() -> Vec<(String, String)> {
    let mut pages: Vec<(String, String)> = (0..CALM)
        .map(|i| {
            (
                format!("shop.test/reviews/{i}.html"),
                html(&format!("Review {i}"), &phones(i)),
            )
        })
        .collect();
    pages.push((
        "shop.test/news/quake.html".into(),
        html("Earthquake", TRAGIC_EN),
    ));
    pages.push((
        "shop.test/news/teract.html".into(),
        html("Теракт", TRAGIC_RU),
    ));
    pages
}

/// A dictionary whose phrases the calm pages and the tragic ones both have.
fn dictionary() -> String {
    direct(&[
        ("phone case", 12),
        ("wireless charging", 5),
        ("battery life", 3),
        ("rescue teams", 4),
        ("state of emergency", 2),
        ("уголовное дело", 2),
        ("число погибших", 1),
    ])
}

/// The phrases the binder and the collector keep of `text` alone, tragic or not.
fn bindable(text: &str) -> Vec<String> {
    let mut tokenizer = Tokenizer::default();
    let dict = Dictionary::parse("d", dictionary().as_bytes(), None, None, &mut tokenizer).unwrap();
    let mut page = PageText::new();
    page.read(&mut tokenizer, [(text, 1.0)]);
    let params = TypeParams::default_for(Kind::Direct);
    collected(&dict, &page, &[], &params, &mut Finder::new())
        .iter()
        .map(|c| dict.phrase(c.found.phrase).unwrap().text.to_string())
        .collect()
}

/// The last item of each doc id in the store, and how many each has.
fn last_items(items: &[ArchivedItem]) -> (BTreeMap<String, ArchivedItem>, BTreeMap<String, usize>) {
    let mut last = BTreeMap::new();
    let mut count = BTreeMap::new();
    for i in items {
        last.insert(i.doc_id.clone(), i.clone());
        *count.entry(i.doc_id.clone()).or_insert(0) += 1;
    }
    (last, count)
}

#[test]
fn pages_are_bound_tragic_ones_withheld_and_unchanged_bindings_not_shipped_again() {
    let db = TestDb::new();
    let site = Site::new(db.url(), BINDING);
    let urls = serve(&db, &site, &shop());
    load(&site, "direct", "direct.tsv", dictionary().as_bytes());
    let version = BindingDict::current(&mut db.conn()).unwrap()[0]
        .version
        .clone();
    site.once();

    let rows = rows(&db);
    assert_eq!(rows.len(), urls.len(), "{}", site.log());
    for url in &urls[..CALM] {
        let r = &rows[&id_of(url)];
        let b = parsed(r);
        assert_eq!((r.tragic, b.tragic), (0, false), "{url}");
        let phrases = direct_phrases(&b);
        for p in ["phone case", "wireless charging", "battery life"] {
            assert!(phrases.contains(&p.to_string()), "{url}: {phrases:?}");
        }
        assert_eq!(r.phrases as usize, phrases.len());
        assert_eq!(r.dict_versions, format!("direct:{version}"));
        assert_eq!(b.url, *url);
    }
    // The tragic pages: flagged, no phrases though the dictionary's phrases are on them.
    for (url, text, phrase) in [
        (&urls[CALM], TRAGIC_EN, "rescue teams"),
        (&urls[CALM + 1], TRAGIC_RU, "уголовное дело"),
    ] {
        assert!(bindable(text).contains(&phrase.to_string()), "{phrase}");
        let r = &rows[&id_of(url)];
        let b = parsed(r);
        assert_eq!((r.tragic, b.tragic, r.phrases), (1, true, 0), "{url}");
        assert!(direct_phrases(&b).is_empty(), "{url}");
        assert_eq!(b.bindings.len(), 1, "the flag is delivered with the type");
    }

    // The store: one UPDATE per page, each the stored item.
    let items = shipped(&site);
    assert_eq!(items.len(), urls.len());
    for i in &items {
        assert_eq!(i.status, Status::Update);
        let id = u64::from_str_radix(&i.doc_id, 16).unwrap();
        assert_eq!(i.doc_id.len(), 16);
        assert_eq!(i.content, rows[&id].item);
        assert_eq!(i.url, parsed(&rows[&id]).url);
    }

    // The operator's view.
    let out = show(&site, &urls[0]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("tragic\t0"), "{text}");
    assert!(
        text.contains(&format!("direct\tdictionary {version}")),
        "{text}"
    );
    assert!(text.contains("\t12\tphone case"), "{text}");
    let out = show(&site, &urls[CALM]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("tragic\t1") && text.contains("(no phrases)"),
        "{text}"
    );
    let out = show(&site, "http://shop.test/never-crawled.html");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no binding"));

    // Analysed again (a rewind): the first pages are weighed with more evidence now and may
    // change; analysed once more, nothing changes and nothing is shipped.
    multidoc_cmd(&site, &["rewind"]);
    site.once();
    let after_second = shipped(&site);
    let rows_second = common::bindings::rows(&db);
    multidoc_cmd(&site, &["rewind"]);
    site.once();
    assert_eq!(
        shipped(&site),
        after_second,
        "an unchanged binding was shipped again"
    );
    assert_eq!(common::bindings::rows(&db), rows_second);
    let (last, _) = last_items(&after_second);
    for (doc, item) in &last {
        let id = u64::from_str_radix(doc, 16).unwrap();
        assert_eq!(item.content, rows_second[&id].item);
    }
    assert!(site.log().contains("dictionary direct"), "{}", site.log());

    // The operator's SQL (docs/operations.md) answers.
    let answers = common::docs_sql(&db, "**Watching the bindings in SQL**");
    assert_eq!(answers.len(), 6, "{answers:?}");
    assert!(answers[0].contains(&version), "{}", answers[0]);
    let figures: Vec<&str> = answers[1].lines().nth(1).unwrap().split('\t').collect();
    assert_eq!(figures[0], urls.len().to_string(), "{}", answers[1]);
    assert_eq!(
        figures[2], "0.250",
        "two tragic pages of eight: {}",
        answers[1]
    );
    assert!(answers[2].contains("shop.test\t2\t8"), "{}", answers[2]);
    assert!(
        answers[3].contains("shop.test\tphone case\t6"),
        "{}",
        answers[3]
    );
    assert!(
        answers[4].contains(&format!("direct:{version}\t8")),
        "{}",
        answers[4]
    );
    assert!(answers[5].contains("yb1\t"), "{}", answers[5]);

    // A page gone: its binding withdrawn (a DELETE item) and its row removed.
    std::fs::remove_file(site.root().join("mirror/shop.test/reviews/1.html")).unwrap();
    common::sql(
        &db,
        &format!(
            "UPDATE url SET hits = 1, steady_level = 0, next_indexed = UTC_TIMESTAMP() - INTERVAL 1 SECOND WHERE url = '{}'",
            urls[1]
        ),
    );
    site.once();
    let items = shipped(&site);
    assert_eq!(items.len(), after_second.len() + 1);
    let gone = items.last().unwrap();
    assert_eq!(gone.status, Status::Delete);
    assert_eq!(gone.doc_id, format!("{:016x}", id_of(&urls[1])));
    assert!(gone.content.is_empty());
    let left = common::bindings::rows(&db);
    assert_eq!(left.len(), urls.len() - 1);
    assert!(!left.contains_key(&id_of(&urls[1])));
}

#[test]
fn a_dictionary_loaded_while_the_daemon_runs_is_used_from_the_next_batch() {
    let db = TestDb::new();
    let port = free_port();
    let site = Site::new(
        db.url(),
        &format!("{BINDING}status_listen = {port}\nstatus_sample = 1\n"),
    );
    let urls = serve(&db, &site, &shop());
    load(&site, "direct", "v1.tsv", dictionary().as_bytes());
    let daemon = site.spawn();
    let v1 = BindingDict::current(&mut db.conn()).unwrap()[0]
        .version
        .clone();
    wait_for("every page bound", Duration::from_secs(120), || {
        rows(&db).len() == urls.len()
    });
    // A new version while it runs: the pages analysed from now on are bound with it.
    load(
        &site,
        "direct",
        "v2.tsv",
        direct(&[("phone case", 14), ("camera", 6)]).as_bytes(),
    );
    let v2 = BindingDict::current(&mut db.conn()).unwrap()[0]
        .version
        .clone();
    assert_ne!(v1, v2);
    multidoc_cmd(&site, &["rewind"]);
    wait_for("every page bound with v2", Duration::from_secs(120), || {
        rows(&db)
            .values()
            .all(|r| r.dict_versions == format!("direct:{v2}"))
    });
    wait_for(
        "the new version in the log",
        Duration::from_secs(30),
        || site.log().contains(&format!("dictionary direct {v2}")),
    );
    // The figures: every page bound twice, the tragic ones flagged each time.
    let n = urls.len() as f64;
    wait_for("the figures", Duration::from_secs(30), || {
        metric(port, "focuser_yacobot_bindings_pages_total") == Some(2.0 * n)
    });
    let m = |s: &str| metric(port, s).unwrap_or_else(|| panic!("no {s}"));
    assert_eq!(m("focuser_yacobot_bindings_tragic_total"), 4.0);
    assert_eq!(m("focuser_yacobot_bindings_shipped_total"), 2.0 * n);
    assert_eq!(m("focuser_yacobot_bindings_withdrawn_total"), 0.0);
    assert_eq!(m("focuser_yacobot_bindings_unchanged_total"), 0.0);
    let phrases = m("focuser_yacobot_bindings_phrases_total");
    let stored: f64 = rows(&db).values().map(|r| f64::from(r.phrases)).sum();
    assert!(phrases > stored, "{phrases} vs {stored}");
    let status = get(port, "/status.json");
    for expected in [
        "\"label\": \"binding rate\"",
        "\"label\": \"phrases per binding\"",
        "\"label\": \"tragic share\"",
        &format!("\"direct {v2}\""),
    ] {
        assert!(status.contains(expected), "{expected} not in {status}");
    }
    daemon.stop();
    let rows = rows(&db);
    for url in &urls[..CALM] {
        let b = parsed(&rows[&id_of(url)]);
        let phrases = direct_phrases(&b);
        assert!(phrases.contains(&"camera".to_string()), "{phrases:?}");
        assert!(
            !phrases.contains(&"wireless charging".to_string()),
            "{phrases:?}"
        );
    }
    // Every page shipped with v1 first, then with v2, and the last item is the stored one.
    let items = shipped(&site);
    let (last, count) = last_items(&items);
    assert_eq!(last.len(), urls.len());
    for (doc, item) in &last {
        assert!(count[doc] >= 2, "{doc}: {}", count[doc]);
        let id = u64::from_str_radix(doc, 16).unwrap();
        assert_eq!(item.content, rows[&id].item);
        let first = items.iter().find(|i| &i.doc_id == doc).unwrap();
        assert!(first.content.contains(&v1), "{}", first.content);
    }
}

#[test]
fn yacobot_tragic_prints_a_flag_per_line_in_order() {
    use std::io::Write;
    use std::process::Stdio;
    let strip = |t: &str| t.replace("<p>", "").replace("</p>", "").replace('\n', " ");
    let mut input = format!(
        "en\t{}\ncalm\t{}\n\nru\t{}\n",
        strip(TRAGIC_EN),
        strip(&phones(1)),
        strip(TRAGIC_RU)
    )
    .into_bytes();
    input.extend_from_slice(b"bad\t\xff\xfe\nlast\tA quiet day at the beach.\n");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_yacobot"))
        .arg("tragic")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "en\t1\ncalm\t0\nru\t1\nlast\t0\n"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stdin line 5: not UTF-8"), "{err}");
    assert!(!out.status.success(), "a bad line makes the exit status 1");
}

/// The lines under `phrase` in `yacobot bindings` output: where it matched.
fn places_of<'a>(text: &'a str, phrase: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| !(l.starts_with("  ") && l.ends_with(&format!("\t{phrase}"))))
        .skip(1)
        .take_while(|l| l.starts_with("    block "))
        .collect()
}

#[test]
fn yacobot_bindings_shows_where_each_phrase_matched_and_says_when_the_copy_is_gone() {
    let db = TestDb::new();
    let site = Site::new(db.url(), BINDING);
    // Five pages: the evidence trusted enough to call the menu template, not so much that
    // it weighs nothing (docs/multidoc.md).
    let urls = serve(&db, &site, &shop()[..5]);
    load(&site, "direct", "direct.tsv", dictionary().as_bytes());
    site.once();
    let url = &urls[4];
    let out = show(&site, url);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("where\t"), "{text}");
    assert!(!text.contains("stored binding alone"), "{text}");
    // Only in the article: its paragraph, weighty, the page's own.
    let battery = places_of(&text, "battery life");
    assert_eq!(battery.len(), 1, "{text}");
    let cols: Vec<&str> = battery[0].split('\t').collect();
    let weight: f32 = cols[1].trim_start_matches("weight ").parse().unwrap();
    assert!(weight >= 0.5, "{text}");
    assert_eq!(cols[2], "own", "{text}");
    assert!(cols[3].ends_with('p'), "{text}");
    assert!(cols[4].contains("[Battery life] is long"), "{text}");
    // Also in the menu: the menu's block is there too, marked template, weighing less.
    let case = places_of(&text, "phone case");
    let menu: Vec<&&str> = case.iter().filter(|l| l.contains("\ttemplate\t")).collect();
    let own: Vec<&&str> = case.iter().filter(|l| l.contains("\town\t")).collect();
    assert_eq!(menu.len(), 1, "{text}");
    assert!(menu[0].contains("[Phone case] shop"), "{text}");
    assert!(!own.is_empty() && own[0].contains("[phone case]"), "{text}");
    let w = |l: &str| -> f32 {
        l.split('\t')
            .nth(1)
            .unwrap()
            .trim_start_matches("weight ")
            .parse()
            .unwrap()
    };
    assert!(w(menu[0]) < w(own[0]), "{text}");

    // The copy gone (retention deleted the archive's segments): said plainly, the stored
    // binding alone.
    for f in std::fs::read_dir(site.root().join("segments")).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let out = show(&site, url);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("is gone (the archive's retention deleted it): the stored binding alone"),
        "{text}"
    );
    assert!(text.contains("\t12\tphone case"), "{text}");
    assert!(!text.contains("    block "), "{text}");
}
