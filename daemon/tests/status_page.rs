//! The status page as a person sees it: headless Chromium opens the test daemon's page, takes
//! a screenshot, and the text it rendered must hold what `/status.json` reports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::Testd;
use focuser_daemon::status::format_number;
use focuser_tests::browser::{text_of, Chromium};
use focuser_tests::{free_port, http, poll, wait_exit};
use nix::sys::signal::Signal;
use serde_json::Value;

/// Written into cards and table cells through `Work.Message`.
const HOSTILE: &str = r#"<script>alert("x")</script> & 'q' " onmouseover="alert(1)"#;
const WINDOW: (u32, u32) = (1280, 1100);

fn json(addr: SocketAddr) -> Value {
    let (status, _, body) = http(addr, "GET", "/status.json", None);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// A card or cell as the page shows it.
fn shown(v: &Value) -> String {
    match v {
        Value::Number(n) => format_number(n.as_f64().unwrap()),
        Value::String(s) => s.clone(),
        other => panic!("a value is a number or a string, not {other}"),
    }
}

fn chart<'a>(snapshot: &'a Value, figure: &str) -> &'a Value {
    snapshot["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["figure"] == figure)
        .unwrap_or_else(|| panic!("no chart of {figure} in {snapshot}"))
}

fn points(series: &Value) -> Vec<(f64, f64)> {
    series["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
        .collect()
}

/// The markup of the element that starts at `start` (a unique opening tag prefix) up to
/// `end`.
fn element<'a>(dom: &'a str, start: &str, end: &str) -> &'a str {
    let at = dom
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in the page:\n{dom}"));
    let len = dom[at..].find(end).unwrap();
    &dom[at..at + len]
}

/// The text of the first element with this class in `markup` (an SVG label: no markup in it).
fn text_of_class(markup: &str, class: &str) -> String {
    let at = markup
        .find(&format!("class=\"{class}\""))
        .unwrap_or_else(|| panic!("no {class} in {markup}"));
    let rest = &markup[at..];
    let open = rest.find('>').unwrap() + 1;
    rest[open..open + rest[open..].find('<').unwrap()].to_string()
}

/// How many `x,y` pairs each polyline of `markup` has, in order.
fn polyline_lengths(markup: &str) -> Vec<usize> {
    markup
        .split("<polyline")
        .skip(1)
        .map(|p| {
            let at = p.find("points=\"").unwrap() + 8;
            p[at..at + p[at..].find('"').unwrap()]
                .split_whitespace()
                .count()
        })
        .collect()
}

/// Kills the daemon if the test fails half-way, so that no test leaves it running.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[test]
fn the_page_shows_in_a_browser_what_status_json_reports() {
    let chromium = Chromium::find()
        .unwrap()
        .window(WINDOW.0, WINDOW.1)
        .timeout(Duration::from_secs(60));
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let url = format!("http://{addr}/");
    let t = Testd::new(&format!(
        "status_listen = 127.0.0.1:{port}\nstatus_sample = 2\nWork.TickMs = 150\n\
         Work.Paused = 0\nWork.Message = {HOSTILE}\n"
    ));
    let mut child = KillOnDrop(t.spawn());

    // Let every chart gather a few samples of changing figures.
    let filled = poll(Duration::from_secs(30), || {
        let s = json(addr);
        s["charts"].as_array().unwrap().iter().all(|c| {
            let series = c["series"].as_array().unwrap();
            !series.is_empty() && series.iter().all(|s| points(s).len() >= 3)
        })
    });
    assert!(filled, "charts did not fill:\n{}", json(addr));
    let moving = json(addr);
    let queue: Vec<f64> = points(&chart(&moving, "queue_urls")["series"][0])
        .iter()
        .map(|p| p.1)
        .collect();
    assert!(
        queue.windows(2).any(|w| w[0] != w[1]),
        "the queue moves: {queue:?}"
    );
    assert_eq!(moving["sample_seconds"], 2);
    assert_eq!(moving["history_seconds"], 3600);
    let times: Vec<f64> = points(&chart(&moving, "queue_urls")["series"][0])
        .iter()
        .map(|p| p.0)
        .collect();
    assert!(
        times
            .windows(2)
            .all(|w| (1.0..4.0).contains(&(w[1] - w[0]))),
        "a sample every 2 s: {times:?}"
    );

    // Hold the work still, so the page and the JSON around it agree.
    t.edit_config("Work.Paused = 0", "Work.Paused = 1");
    t.signal(Signal::SIGUSR2);
    t.wait_log("reloaded: message=", Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(400));

    let shot_path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("testd-status.png");
    let shot = chromium.screenshot(&url, &shot_path).unwrap();
    assert_eq!((shot.width, shot.height), WINDOW, "{shot:?}");
    assert!(
        shot.bytes > 10_000 && shot.colours > 50,
        "a page, not a blank window: {shot:?}"
    );

    let before = json(addr);
    let dom = chromium.dom(&url).unwrap();
    let after = json(addr);
    let text = text_of(&dom);

    // Nothing hostile ran or broke out of its attribute; it is all there as text.
    // (Chromium writes `<` in text as `&lt;` and `"` in attribute values as `&quot;`, so
    // every `<` starts a real element and an attribute appears as `name="`.)
    let tags: Vec<&str> = dom
        .split('<')
        .skip(1)
        .map(|t| &t[..t.find('>').unwrap_or(t.len())])
        .collect();
    assert!(tags.iter().all(|t| !t.starts_with("script")), "{dom}");
    assert!(tags.iter().all(|t| !t.contains("onmouseover=\"")), "{dom}");
    assert!(
        dom.contains("onmouseover=&quot;alert(1)\""),
        "the card's title: {dom}"
    );
    assert!(text.contains(HOSTILE), "{text}");

    // The header.
    for (key, shown_as) in [
        ("daemon", after["daemon"].as_str().unwrap().to_string()),
        (
            "version",
            format!("version {}", after["version"].as_str().unwrap()),
        ),
        ("pid", format!("pid {}", after["pid"])),
    ] {
        assert!(
            text.contains(&shown_as),
            "{key}: {shown_as:?} not in {text}"
        );
    }
    assert_eq!(after["pid"], child.0.id());

    // Cards and tables hold still while paused: the page shows what both snapshots say.
    assert_eq!(before["cards"], after["cards"]);
    assert_eq!(before["tables"], after["tables"]);
    let cards = after["cards"].as_array().unwrap();
    assert!(cards.len() >= 5, "{cards:?}");
    for card in cards {
        let mut expected = format!(
            "{} {}",
            card["label"].as_str().unwrap(),
            shown(&card["value"])
        );
        let unit = card["unit"].as_str().unwrap();
        if !unit.is_empty() {
            expected = format!("{expected} {unit}");
        }
        assert!(text.contains(&expected), "card {expected:?} not in {text}");
        let state = card["state"].as_str().unwrap();
        assert!(
            dom.contains(&format!("<div class=\"card {state}\"")),
            "{card}"
        );
    }
    let errors = cards.iter().find(|c| c["label"] == "errors").unwrap();
    assert_eq!(errors["state"], "error", "a batch failed every 10 ticks");

    let tables = after["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 1);
    let table = &tables[0];
    let columns: Vec<&str> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let section = text_of(element(&dom, "<section id=\"table-batches\"", "</section>"));
    assert!(
        section.starts_with(&format!("Last batches {}", columns.join(" "))),
        "{section}"
    );
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    for row in rows {
        let cells: Vec<String> = row["cells"].as_array().unwrap().iter().map(shown).collect();
        assert_eq!(cells.len(), columns.len());
        assert!(
            section.contains(&cells.join(" ")),
            "row {cells:?} not in {section}"
        );
    }

    // Charts: each line has the points sampled by the time the page was made (the history
    // only grows during this test, so that is a prefix of the later snapshot's line).
    for figure in ["ticks_total", "queue_urls", "lag_items"] {
        let (early, late) = (chart(&before, figure), chart(&after, figure));
        let markup = element(&dom, &format!("<figure id=\"chart-{figure}\""), "</figure>");
        let lengths = polyline_lengths(markup);
        let series = late["series"].as_array().unwrap();
        assert_eq!(lengths.len(), series.len(), "one line per series: {markup}");
        let mut values = Vec::new();
        for (i, s) in series.iter().enumerate() {
            let all = points(s);
            let earlier = points(&early["series"][i]).len();
            assert!(
                (earlier..=all.len()).contains(&lengths[i]),
                "{figure}: the page drew {} points, the JSON had {earlier} before and {} after",
                lengths[i],
                all.len()
            );
            let drawn = &all[..lengths[i]];
            values.extend(drawn.iter().map(|p| p.1));
            if series.len() > 1 {
                let name = s["labels"][0]
                    .as_array()
                    .map(|kv| format!("{}={}", kv[0].as_str().unwrap(), kv[1].as_str().unwrap()))
                    .unwrap();
                let legend = format!("{name} {}", format_number(drawn.last().unwrap().1));
                assert!(text_of(markup).contains(&legend), "{legend:?} in {markup}");
            } else {
                let caption = format!(
                    "now {} {}",
                    format_number(drawn.last().unwrap().1),
                    late["unit"].as_str().unwrap()
                );
                assert!(
                    text_of(markup).contains(&caption),
                    "{caption:?} in {markup}"
                );
            }
        }
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lo = values.iter().copied().fold(0.0, f64::min);
        let hi = if hi == lo { lo + 1.0 } else { hi };
        assert_eq!(text_of_class(markup, "ymax"), format_number(hi), "{markup}");
        assert_eq!(text_of_class(markup, "ymin"), format_number(lo), "{markup}");
        assert!(text_of(markup).contains("now"));
    }
    assert_eq!(chart(&after, "ticks_total")["unit"], "ticks/s");
    assert_eq!(chart(&after, "ticks_total")["rate"], true);
    assert_eq!(
        chart(&after, "lag_items")["series"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    t.signal(Signal::SIGTERM);
    assert!(wait_exit(&mut child.0, Duration::from_secs(10)).success());
}
