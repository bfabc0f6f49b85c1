//! The page analysis tools through the real binary, as an operator runs them: `yacobot train`
//! on a corpus in both forms, `yacobot analyze` of a committed fixture page, of a generated
//! site (`--site`) and of a URL of the test web server, `yacobot classify` on stdin, and bad
//! input of every kind (docs/operations.md, "Page analysis tools").
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::{output_with_input, output_within};
use serde_json::Value;

const CATALOG: &str = "tech\t\tTechnology\nsoftware\ttech\tSoftware\nscience\t\tScience\n\
    space\tscience\tSpace\nfood\t\tFood\nsport\t\tSport\n";

/// Each category's words: the generated documents are made of them.
const VOCABULARY: [(&str, &str); 4] = [
    (
        "Technology > Software",
        "code coverage test javascript function browser script developer library compiler \
         source program tool debug release framework bug module",
    ),
    (
        "Science > Space",
        "rocket launch nasa orbit spacecraft mission moon mars satellite astronaut vehicle \
         engine congress agency booster lunar committee exploration",
    ),
    (
        "Food",
        "flour butter sugar oven bake recipe dough salt cheese soup kitchen pepper garlic \
         onion cream bread",
    ),
    (
        "Sport",
        "match goal team player league coach season score striker penalty stadium referee \
         cup champion",
    ),
];

/// Document `k` of a category: twelve of its words, in an order of its own.
fn document(words: &str, k: usize) -> String {
    let w: Vec<&str> = words.split_whitespace().collect();
    let picked: Vec<&str> = (0..12).map(|i| w[(k * 3 + i * 5) % w.len()]).collect();
    format!(
        "The {} and the {}.",
        picked[..6].join(" "),
        picked[6..].join(" ")
    )
}

/// 20 documents per category, interleaved (the held-back part has some of each).
fn documents() -> Vec<(&'static str, String)> {
    (0..20)
        .flat_map(|k| VOCABULARY.iter().map(move |&(l, w)| (l, document(w, k))))
        .collect()
}

fn yacobot() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_yacobot"));
    c.env_remove("DATABASE_URL");
    c
}

fn run(args: &[&str]) -> Output {
    output_within(yacobot().args(args), Duration::from_secs(60))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../multidoc/tests/fixtures/pages/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A catalog, a corpus file and a model trained from them in `dir`.
struct Trained {
    catalog: PathBuf,
    corpus: PathBuf,
    model: PathBuf,
    out: Output,
}

fn train(dir: &Path) -> Trained {
    let catalog = dir.join("catalog.tsv");
    std::fs::write(&catalog, CATALOG).unwrap();
    let corpus = dir.join("corpus.tsv");
    let lines: String = documents()
        .iter()
        .map(|(l, d)| format!("{l}\t{d}\n"))
        .collect();
    std::fs::write(&corpus, lines).unwrap();
    let model = dir.join("test.model");
    let out = run(&[
        "train",
        corpus.to_str().unwrap(),
        "--catalog",
        catalog.to_str().unwrap(),
        "-o",
        model.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    Trained {
        catalog,
        corpus,
        model,
        out,
    }
}

/// `accuracy    0.875 on 8 held-back documents …` → (0.875, 8).
fn accuracy(stdout: &str) -> (f64, usize) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("accuracy "))
        .unwrap_or_else(|| panic!("no accuracy line in {stdout}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&w[2..4], ["on", w[3]], "{line}");
    (w[1].parse().unwrap(), w[3].parse().unwrap())
}

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The names of a JSON page's category path.
fn category_names(page: &Value) -> Vec<String> {
    page["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn train_reads_lines_and_label_folders_and_reports_its_accuracy() {
    let dir = tempfile::tempdir().unwrap();
    let t = train(dir.path());
    let stdout = text(&t.out.stdout);
    assert!(
        stdout.contains("corpus      80 documents from 1 source (0 skipped), 4 categories"),
        "{stdout}"
    );
    assert!(stdout.contains("catalog     6 nodes ("), "{stdout}");
    let (acc, held) = accuracy(&stdout);
    assert_eq!(held, 8, "every 10th of 80: {stdout}");
    assert!(acc >= 0.75, "{stdout}");
    assert!(t.model.is_file());
    assert!(!dir.path().join(".test.model.tmp").exists());

    // The same documents as files under label folders, some of them pages; no catalog: the
    // folders make it.
    let folders = dir.path().join("folders");
    for (i, (label, doc)) in documents().iter().enumerate() {
        let folder = folders.join(label.replace(" > ", "/"));
        std::fs::create_dir_all(&folder).unwrap();
        if i % 3 == 0 {
            let page =
                format!("<html><body><nav><a href=/>Home</a></nav><p>{doc}</p></body></html>");
            std::fs::write(folder.join(format!("{i:03}.html")), page).unwrap();
        } else {
            std::fs::write(folder.join(format!("{i:03}.txt")), doc).unwrap();
        }
    }
    let model2 = dir.path().join("folders.model");
    let out = run(&[
        "train",
        folders.to_str().unwrap(),
        "--holdout",
        "20",
        "-o",
        model2.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("80 documents from 1 source (0 skipped)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("catalog     6 nodes made from the labels"),
        "{stdout}"
    );
    let (acc, held) = accuracy(&stdout);
    assert_eq!(held, 16, "every 5th of 80: {stdout}");
    assert!(acc >= 0.75, "{stdout}");

    // Bad lines are named, counted and passed over; the model is still written, and the exit
    // status says that not every document was good.
    let bad = dir.path().join("bad.tsv");
    let mut lines = std::fs::read(&t.corpus).unwrap();
    lines.extend_from_slice(b"no tab on this line\nAstrology\tstars and planets\n\xff\n");
    std::fs::write(&bad, lines).unwrap();
    let model3 = dir.path().join("bad.model");
    let out = run(&[
        "train",
        bad.to_str().unwrap(),
        "--catalog",
        t.catalog.to_str().unwrap(),
        "-o",
        model3.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bad.tsv line 81: corpus line 81: expected a label"),
        "{stderr}"
    );
    assert!(
        stderr.contains("bad.tsv line 82: label \"Astrology\" is neither"),
        "{stderr}"
    );
    assert!(stderr.contains("bad.tsv line 83: not UTF-8"), "{stderr}");
    assert!(text(&out.stdout).contains("80 documents from 1 source (3 skipped)"));
    assert!(model3.is_file());
}

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
fn classify_prints_a_path_per_line_and_names_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let t = train(dir.path());
    let model = t.model.to_str().unwrap();
    let input = "a\tThe rocket launch from the nasa pad put the satellite in orbit.\n\
                 b\tMix the flour, butter and sugar and bake the dough in the oven.\n\
                 \n\
                 no tab here\n\
                 c\tThe striker scored a late goal and the team won the cup.\r\n\
                 \t empty id\n\
                 d\tzzz qqq\n";
    let out = output_with_input(
        yacobot().args(["classify", "--model", model]),
        input.as_bytes(),
        Duration::from_secs(60),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<(&str, &str)> = stdout
        .lines()
        .map(|l| l.split_once('\t').unwrap())
        .collect();
    let ids: Vec<&str> = lines.iter().map(|l| l.0).collect();
    assert_eq!(ids, ["a", "b", "c", "d"], "{stdout}");
    assert!(lines[0].1.starts_with("Science (") && lines[0].1.contains(") > Space ("));
    assert!(lines[1].1.starts_with("Food ("), "{stdout}");
    assert!(lines[2].1.starts_with("Sport ("), "{stdout}");
    assert_eq!(lines[3].1, "", "no known word: no category");
    assert!(
        stderr.contains("stdin line 4: expected an id, a tab and the text"),
        "{stderr}"
    );
    assert!(stderr.contains("stdin line 6: empty id"), "{stderr}");
    assert!(stderr.contains("2 bad inputs"), "{stderr}");

    let out = output_with_input(
        yacobot().args(["classify", "--model", model, "--depth", "1"]),
        b"a\tThe rocket launch put the satellite in orbit around the moon.\n",
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = text(&out.stdout);
    assert!(
        got.starts_with("a\tScience (") && !got.contains(">"),
        "{got}"
    );
}

#[test]
fn a_damaged_model_is_refused_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let t = train(dir.path());
    let good = std::fs::read(&t.model).unwrap();
    let cases: [(&str, Vec<u8>, &str); 3] = [
        (
            "flipped.model",
            {
                let mut b = good.clone();
                let at = b.len() / 2;
                b[at] ^= 0x40;
                b
            },
            "model file damaged: checksum",
        ),
        (
            "short.model",
            good[..good.len() - 10].to_vec(),
            "model file truncated",
        ),
        (
            "page.model",
            b"<html>not a model</html>".to_vec(),
            "not a focuser model file",
        ),
    ];
    for (name, bytes, says) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let out = output_with_input(
            yacobot().args(["classify", "--model", file.to_str().unwrap()]),
            b"a\tthe rocket\n",
            Duration::from_secs(60),
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(name) && stderr.contains(says),
            "{name}: {stderr}"
        );
        assert!(out.stdout.is_empty());
        let page = fixture("readability-001.html");
        let out = run(&["analyze", &page, "--model", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }
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
