//! `yacobot analyze` through the real binary, as an operator runs it: a committed fixture
//! page (text and JSON), a generated site (`--site`: the template weighed down), a URL of the
//! test web server through the config's fetcher, and bad pages of every kind
//! (docs/operations.md, "Page analysis tools").
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::tools::{category_names, fixture, json_lines, run, text, train};
use focuser_tests::web::{Behaviour, WebServer};
use serde_json::Value;

#[test]
fn analyze_shows_a_fixture_page_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let t = train(dir.path());
    let page = fixture("readability-001.html");
    let model = t.model.to_str().unwrap();

    let out = run(&["analyze", &page, "--model", model, "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pages = json_lines(&out.stdout);
    assert_eq!(pages.len(), 1);
    let p = &pages[0];
    let blocks = p["blocks"].as_array().unwrap();
    assert!(blocks.len() > 10, "{p}");
    let mut main = Vec::new();
    for b in blocks {
        let w = b["weight"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&w), "{b}");
        assert!(!b["text"].as_str().unwrap().is_empty());
        if b["main"].as_bool().unwrap() {
            main.push(b["text"].as_str().unwrap());
        }
    }
    assert_eq!(p["main_text"].as_str().unwrap(), main.join("\n"));
    assert!(p["main_text"]
        .as_str()
        .unwrap()
        .contains("The idea behind code coverage is to record which parts of your code"));
    assert_eq!(p["lang"], "en");
    let words: Vec<&str> = p["words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["word"].as_str().unwrap())
        .collect();
    assert_eq!(words.len(), 20);
    assert!(
        words.contains(&"code") && words.contains(&"coverag"),
        "{words:?}"
    );
    assert_eq!(category_names(p), ["Technology", "Software"], "{p}");
    let post: Vec<f64> = p["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["posterior"].as_f64().unwrap())
        .collect();
    assert!(post[0] >= post[1] && post[1] >= 0.5, "{post:?}");
    let evidence = p["evidence"].to_string();
    assert!(evidence.contains("\"code\""), "{evidence}");

    let out = run(&["analyze", &page, "--model", model]);
    let report = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(report.contains("language    en"), "{report}");
    assert!(
        report.contains(&format!("blocks      {} (", blocks.len())),
        "{report}"
    );
    let cats = report
        .lines()
        .find(|l| l.starts_with("categories"))
        .unwrap();
    assert!(
        cats.contains("Technology (") && cats.contains(") > Software ("),
        "{cats}"
    );
    let why = report.lines().find(|l| l.starts_with("why")).unwrap();
    assert!(why.contains("Software: ") && why.contains("code "), "{why}");

    // Without a model (and no config): no categories, and the output says so.
    let out = run(&["analyze", &page, "--format", "json"]);
    assert!(json_lines(&out.stdout)[0]["categories"].is_null());
    let out = run(&["analyze", &page]);
    assert!(text(&out.stdout).contains("categories  none: no model"));
}

/// Page `i` of a generated site: the menu and the footer every page has, and an article of
/// its own (its own words: fingerprints read every digit as `0`).
fn site_page(i: usize) -> String {
    const FLOWERS: [&str; 10] = [
        "roses", "tulips", "lilies", "peonies", "dahlias", "irises", "asters", "poppies",
        "orchids", "violets",
    ];
    const PLACES: [&str; 10] = [
        "valley", "hill", "orchard", "meadow", "river", "forest", "lake", "field", "harbour",
        "village",
    ];
    let (f, p) = (FLOWERS[i % 10], PLACES[(i * 3) % 10]);
    format!(
        "<html><head><title>Page {i}</title></head><body>\
         <nav class=menu><ul><li><a href=/>Home page of the garden club</a></li>\
         <li><a href=/about>About the garden club and its members</a></li></ul></nav>\
         <article><h1>Garden notes on {f}</h1>\
         <p>Our garden note on the {f} tells how they grew by the {p} this year, which \
         fertiliser helped them, and why the {f} near the {p} flowered early after a mild \
         winter and a wet spring.</p></article>\
         <footer><p>Copyright the garden club. All rights reserved.</p></footer></body></html>"
    )
}

#[test]
fn analyze_site_weighs_the_template_down() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(site.join("notes")).unwrap();
    for i in 0..10 {
        std::fs::write(site.join("notes").join(format!("{i}.html")), site_page(i)).unwrap();
    }
    std::fs::write(site.join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    let one = site.join("notes/3.html");

    let weight = |page: &Value, starts: &str| -> f64 {
        let b = page["blocks"].as_array().unwrap();
        let b = b
            .iter()
            .find(|b| b["text"].as_str().unwrap().starts_with(starts));
        b.unwrap_or_else(|| panic!("no block {starts}: {page}"))["weight"]
            .as_f64()
            .unwrap()
    };
    let out = run(&["analyze", one.to_str().unwrap(), "--format", "json"]);
    let alone = &json_lines(&out.stdout)[0];
    let out = run(&[
        "analyze",
        "--site",
        site.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("logo.png: not a page, passed over"));
    let pages = json_lines(&out.stdout);
    assert_eq!(pages.len(), 10);
    let with_site = pages
        .iter()
        .find(|p| p["source"].as_str().unwrap().ends_with("notes/3.html"))
        .unwrap();
    let menu = "About the garden club";
    assert!(
        weight(with_site, menu) < weight(alone, menu),
        "the menu weighs {} with the site, {} alone",
        weight(with_site, menu),
        weight(alone, menu)
    );
    assert!(weight(with_site, menu) < 0.05);
    assert!(with_site["template_share"].as_f64().unwrap() > 0.0);
    let article = "Our garden note on the peonies";
    assert_eq!(weight(with_site, article), weight(alone, article));
    let b = with_site["blocks"].as_array().unwrap();
    let menu_block = b
        .iter()
        .find(|b| b["text"].as_str().unwrap().starts_with(menu));
    assert_eq!(menu_block.unwrap()["page_weight"], weight(alone, menu));

    let out = run(&["analyze", "--site", site.to_str().unwrap()]);
    assert!(text(&out.stdout).contains(": 10 pages (1 other files passed over)"));
}

/// A yacobot config for the tools: the test web server reachable, and a model.
fn config(dir: &Path, server: &WebServer, model: &Path, allow_private: bool) -> PathBuf {
    let file = dir.join(format!("yacobot-{allow_private}.cf"));
    let allow = if allow_private {
        "Fetch.AllowPrivate = 127.0.0.1\n"
    } else {
        ""
    };
    std::fs::write(
        &file,
        format!(
            "rootdir = {}\ndatabase = mysql://nobody@127.0.0.1:1/none\nnode = yb1\n\
             Loader.Inbox.m1 = inbox/m1\nFetch.Resolve = {}\n{allow}\
             Fetch.ConnectTimeout = 2\nFetch.Timeout = 10\nFetch.Retries = 1\n\
             MultiDoc.Model = {}\n",
            dir.display(),
            server.resolve()[0],
            model.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    file
}

#[test]
fn analyze_fetches_a_url_with_the_configs_fetcher() {
    let dir = tempfile::tempdir().unwrap();
    let t = train(dir.path());
    let server = WebServer::start().unwrap();
    server.set_robots("*", "User-agent: *\nAllow: /\n");
    let body = std::fs::read_to_string(fixture("aeb-thespacereview.html")).unwrap();
    server.set(
        "news.test",
        "/space/rocket.html",
        Behaviour::fixed(200, "text/html; charset=utf-8", body.into_bytes()),
    );
    let url = server.url("news.test", "/space/rocket.html");

    // The model is the config's MultiDoc.Model (relative to its rootdir).
    let cf = config(dir.path(), &server, &t.model, true);
    let out = run(&[
        "-c",
        cf.to_str().unwrap(),
        "analyze",
        &url,
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let p = &json_lines(&out.stdout)[0];
    assert_eq!(p["url"], url.as_str());
    assert_eq!(p["encoding"], "UTF-8");
    assert_eq!(p["charset_from"], "header");
    assert!(p["main_text"].as_str().unwrap().contains("SLS"), "{p}");
    let url_words = p["url_words"].to_string();
    assert!(url_words.contains("\"rocket\"") && url_words.contains("\"space\""));
    assert_eq!(category_names(p), ["Science", "Space"], "{p}");
    assert_eq!(
        server.requests_to("news.test", "/space/rocket.html").len(),
        1
    );

    // Loopback is refused as the crawler refuses it, unless Fetch.AllowPrivate says otherwise.
    let cf = config(dir.path(), &server, &t.model, false);
    let out = run(&["-c", cf.to_str().unwrap(), "analyze", &url]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("refused"),
        "{}",
        text(&out.stderr)
    );
    let direct = server.url("127.0.0.1", "/space/rocket.html");
    let out = run(&["analyze", &direct]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("refused"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        server.requests_to("news.test", "/space/rocket.html").len(),
        1
    );
}

#[test]
fn bad_pages_get_clear_errors_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.html");
    std::fs::write(&empty, b"").unwrap();
    let binary = dir.path().join("image.html");
    std::fs::write(&binary, b"GIF89a\x01\0\x01\0\0\0\0;").unwrap();
    let huge = dir.path().join("huge.html");
    // 50 MB (sparse): refused by its size before it is read.
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(50 << 20)
        .unwrap();
    let missing = dir.path().join("missing.html");
    let good = fixture("readability-001.html");
    let paths: Vec<String> = [&empty, &binary, &huge, &missing]
        .iter()
        .map(|p| p.display().to_string())
        .chain([good])
        .collect();
    let mut args = vec!["analyze", "--format", "json"];
    args.extend(paths.iter().map(String::as_str));
    let out = run(&args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("empty.html: the body is empty"), "{stderr}");
    assert!(
        stderr.contains("image.html: the body is binary data (GIF"),
        "{stderr}"
    );
    assert!(
        stderr.contains("huge.html: the body is 52428800 bytes, over the limit of 16777216"),
        "{stderr}"
    );
    assert!(stderr.contains("missing.html: No such file"), "{stderr}");
    assert!(stderr.contains("4 bad inputs"), "{stderr}");
    let pages = json_lines(&out.stdout);
    assert_eq!(pages.len(), 1, "the good page is still analysed");
    assert!(pages[0]["source"]
        .as_str()
        .unwrap()
        .ends_with("readability-001.html"));

    let out = run(&["analyze", "--url", "http://x.test/", &paths[4], &paths[0]]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--url goes with one FILE"));
}

/// A shop page: a menu of links and an article about phone cases; and a news page about an
/// earthquake that killed people.
fn binding_pages(dir: &Path) -> (String, String) {
    let menu = "<ul><li><a href=\"/a\">Wireless charging</a></li><li><a href=\"/b\">Home</a></li><li><a href=\"/c\">Contacts</a></li></ul>";
    let calm = format!(
        "<html><head><title>Phone cases</title></head><body><nav>{menu}</nav><article><h1>The best phone case of the year</h1>\
         <p>We tested every phone case we could find. A good phone case protects the screen and keeps the battery life of the phone intact, \
         and a thin phone case fits the pocket.</p><p>Our favourite phone case is made of leather; its battery life test went well.</p></article></body></html>"
    );
    let tragic = format!(
        "<html><head><title>Earthquake</title></head><body><nav>{menu}</nav><article><h1>Earthquake kills dozens</h1>\
         <p>At least forty people were killed and hundreds injured when a powerful earthquake struck the city at night. \
         Rescue workers searched the rubble for survivors; the death toll is expected to rise, officials said.</p>\
         <p>Many victims died in collapsed buildings. The phone case factory was destroyed.</p></article></body></html>"
    );
    let calm_file = dir.join("calm.html");
    let tragic_file = dir.join("tragic.html");
    std::fs::write(&calm_file, calm).unwrap();
    std::fs::write(&tragic_file, tragic).unwrap();
    (
        calm_file.display().to_string(),
        tragic_file.display().to_string(),
    )
}

fn phrases(binding: &Value) -> Vec<(String, f64)> {
    binding["phrases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["text"].as_str().unwrap().to_owned(),
                p["relevance"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// `--dict KIND=FILE`: the JSON has the tragic flag and, per type given, the phrases the
/// collector kept with their relevance (an article's phrase above a menu link's) and the
/// categories; a tragic page keeps its flag and gets no phrases; without `--dict` only the
/// flag; a bad dictionary file is refused with its line.
#[test]
fn analyze_shows_the_tragic_flag_and_the_bindings_of_the_dictionaries_given() {
    let dir = tempfile::tempdir().unwrap();
    let (calm, tragic) = binding_pages(dir.path());
    let direct = dir.path().join("direct.tsv");
    std::fs::write(
        &direct,
        "#focuser-dictionary 1 kind=direct\nphone case\t7\nbattery life\t2\nwireless charging\t3\nearthquake insurance\t4\n",
    )
    .unwrap();
    let media = dir.path().join("media.tsv");
    std::fs::write(&media, "#focuser-dictionary 1 kind=media\nphones\t632\n").unwrap();
    let d = format!("direct={}", direct.display());
    let m = format!("media={}", media.display());

    let out = run(&[
        "analyze", &calm, &tragic, "--dict", &m, "--dict", &d, "--format", "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pages = json_lines(&out.stdout);
    assert_eq!(pages.len(), 2);
    let (c, t) = (&pages[0], &pages[1]);
    assert_eq!(c["tragic"], 0, "{c}");
    let types: Vec<&str> = c["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["direct", "media"], "in binding-type order: {c}");
    let direct_of = |p: &Value| p["bindings"][0].clone();
    let got = phrases(&direct_of(c));
    assert_eq!(got[0].0, "phone case", "{got:?}");
    assert!(got[0].1 > 0.1 && got[0].1 <= 1.0, "{got:?}");
    assert_eq!(direct_of(c)["phrases"][0]["advertisers"], 7);
    assert_eq!(direct_of(c)["dict"].as_str().unwrap().len(), 16);
    let rel = |name: &str| got.iter().find(|(t, _)| t == name).map(|(_, r)| *r);
    // The menu link's phrase ranks below the article's, if it is kept at all.
    assert!(
        rel("wireless charging").unwrap_or(0.0) < got[0].1,
        "{got:?}"
    );
    assert!(rel("battery life").is_some(), "{got:?}");
    assert_eq!(
        phrases(&c["bindings"][1]),
        [("phones".to_string(), phrases(&c["bindings"][1])[0].1)]
    );
    assert!(
        c["bindings"][0]["categories"]
            .as_array()
            .unwrap()
            .is_empty(),
        "no model: {c}"
    );

    assert_eq!(t["tragic"], 1, "{t}");
    for b in t["bindings"].as_array().unwrap() {
        assert!(phrases(b).is_empty(), "a tragic page gets no phrases: {t}");
    }

    // Without --dict: the flag, no bindings; the text report says the same.
    let out = run(&["analyze", &tragic, "--format", "json"]);
    let p = &json_lines(&out.stdout)[0];
    assert_eq!(
        (p["tragic"].as_u64(), p["bindings"].as_array().map(Vec::len)),
        (Some(1), Some(0))
    );
    let out = run(&["analyze", &calm, "--dict", &d]);
    let report = text(&out.stdout);
    assert!(report.contains("\ntragic      0\n"), "{report}");
    assert!(
        report.contains("\nbinding     direct  dictionary "),
        "{report}"
    );
    assert!(report.contains("  phone case\n"), "{report}");

    // A bad dictionary: refused with its file and line, nothing analysed.
    let bad = dir.path().join("bad.tsv");
    std::fs::write(
        &bad,
        "#focuser-dictionary 1 kind=direct\nphone case\tmany\n",
    )
    .unwrap();
    let out = run(&[
        "analyze",
        &calm,
        "--dict",
        &format!("direct={}", bad.display()),
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains(&format!("{}:2: ", bad.display())), "{err}");
    assert!(out.stdout.is_empty());
    let out = run(&["analyze", &calm, "--dict", "direct"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("KIND=FILE"),
        "{}",
        text(&out.stderr)
    );
}
