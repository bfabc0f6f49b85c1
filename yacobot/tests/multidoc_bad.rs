//! The multidoc worker on bad input, through the real binary: damaged archive records (a
//! record that fails its CRC, a segment cut short) are counted and logged and the worker goes
//! on; empty and binary pages get rows of their kind and are counted; a damaged model file is
//! refused with a clear error and a status card, and the model in use stays.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::multidoc::{id_of, page, page_count, pages_by_id};
use common::tools::train;
use common::{due_url, Site};
use focuser_schema::models::PageOutcome;
use focuser_tests::{free_port, get, metric, metric_with, wait_for, TestDb};
use nix::sys::signal::Signal;

const CRAWL: &str = "Loader.Enable = 0\nQargfilter.Enable = 0\nSegment.MaxItems = 10\n";

/// `n` pages of host `h` (from page `from` on) in the mirror, due; their URLs.
fn pages(db: &TestDb, site: &Site, h: &str, from: usize, n: usize) -> Vec<String> {
    (from..from + n)
        .map(|i| {
            site.page(&format!("{h}/p/{i}.html"), &page(i).1);
            let url = format!("http://{h}/p/{i}.html");
            due_url(db, &url, 1, 3);
            url
        })
        .collect()
}

/// The item files of the archive, oldest first.
fn item_files(site: &Site) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(site.root().join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("item_") && n.ends_with(".dat")
        })
        .collect();
    files.sort_by_key(|p| {
        let n = p.file_stem().unwrap().to_string_lossy().into_owned();
        n["item_".len()..].parse::<u64>().unwrap()
    });
    files
}

fn kind(port: u16, kind: &str) -> Option<f64> {
    metric_with(
        port,
        "focuser_yacobot_multidoc_errors_total",
        &format!("kind=\"{kind}\""),
    )
}

/// The status page's card `label`: (value, state).
fn card(port: u16, label: &str) -> (serde_json::Value, String) {
    let status: serde_json::Value = serde_json::from_str(&get(port, "/status.json")).unwrap();
    let found = find_card(&status, label).unwrap_or_else(|| panic!("no card {label}: {status}"));
    (
        found["value"].clone(),
        found["state"].as_str().unwrap().to_owned(),
    )
}

fn find_card<'a>(v: &'a serde_json::Value, label: &str) -> Option<&'a serde_json::Value> {
    match v {
        serde_json::Value::Object(o) => {
            if o.get("label").and_then(|l| l.as_str()) == Some(label) && o.contains_key("value") {
                return Some(v);
            }
            o.values().find_map(|x| find_card(x, label))
        }
        serde_json::Value::Array(a) => a.iter().find_map(|x| find_card(x, label)),
        _ => None,
    }
}

fn flip(file: &Path, at: u64) {
    let mut bytes = std::fs::read(file).unwrap();
    bytes[at as usize] ^= 0x5a;
    std::fs::write(file, bytes).unwrap();
}

#[test]
fn multidoc_counts_damaged_records_and_bad_pages_and_goes_on() {
    let db = TestDb::new();
    let site = Site::new(db.url(), CRAWL);
    let good = pages(&db, &site, "b.test", 0, 25);
    site.once();
    let files = item_files(&site);
    assert!(files.len() >= 3, "two sealed segments: {files:?}");
    // A byte flipped amid the first segment (one record fails its CRC), the second cut short.
    let len = std::fs::metadata(&files[0]).unwrap().len();
    flip(&files[0], len / 2);
    let len = std::fs::metadata(&files[1]).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&files[1])
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    // Then an empty page and a binary one, archived after the damage.
    site.page("b.test/empty.html", "");
    let binary: Vec<u8> = (0..4000u32).map(|i| (i * 7 % 256) as u8).collect();
    std::fs::write(site.root().join("mirror/b.test/binary.html"), binary).unwrap();
    for p in ["empty", "binary"] {
        due_url(&db, &format!("http://b.test/{p}.html"), 1, 3);
    }
    site.once();

    let port = free_port();
    let cf = std::fs::read_to_string(&site.config).unwrap();
    std::fs::write(
        &site.config,
        format!("{cf}status_listen = {port}\nMultiDoc.Enable = 1\nMultiDoc.Batch = 3\n"),
    )
    .unwrap();
    let daemon = site.spawn();
    wait_for("the archive analysed", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_multidoc_lag_items") == Some(0.0)
            && kind(port, "binary") == Some(1.0)
    });
    let log = site.log();
    let store = kind(port, "store").unwrap();
    assert_eq!(kind(port, "empty"), Some(1.0), "{log}");
    assert_eq!(kind(port, "too_large"), Some(0.0));
    assert_eq!(kind(port, "model"), Some(0.0));
    // One record, and the cut segment's tail.
    assert!(store >= 2.0, "{store}: {log}");
    let rows = pages_by_id(&db);
    assert_eq!(rows.len() as f64 + store, 27.0, "{log}");
    let analysed = good.iter().filter(|u| rows.contains_key(&id_of(u))).count();
    assert_eq!(
        metric(port, "focuser_yacobot_multidoc_pages_total"),
        Some(analysed as f64)
    );
    assert!(analysed >= 10, "the undamaged pages analysed: {analysed}");
    let outcome = |p: &str| rows[&id_of(&format!("http://b.test/{p}.html"))].clone();
    let empty = outcome("empty");
    assert_eq!(empty.outcome, PageOutcome::Empty);
    assert_eq!(
        (
            empty.lang,
            empty.main_md5,
            empty.main_simhash,
            empty.counted_at
        ),
        (None, None, None, None)
    );
    assert_eq!(outcome("binary").outcome, PageOutcome::Binary);
    for f in &files[..2] {
        let named = format!(
            "multidoc: archive {}: {}",
            site.root().join("segments").display(),
            f.display()
        );
        assert!(log.contains(&named), "{named} not in {log}");
    }
    assert!(
        log.contains("record CRC mismatch; the worker goes on after it"),
        "{log}"
    );
    assert!(
        log.contains("items skipped; the worker goes on after it"),
        "{log}"
    );
    assert_eq!(card(port, "archive read errors").1, "warn");
    assert_eq!(card(port, "pages not analysed").0, serde_json::json!(2.0));
    daemon.stop();
    assert_eq!(page_count(&db), rows.len() as i64);
}

#[test]
fn multidoc_refuses_a_damaged_model_and_keeps_the_one_in_use() {
    let db = TestDb::new();
    let models = tempfile::tempdir().unwrap();
    let model = train(models.path()).model;
    let good_model = std::fs::read(&model).unwrap();
    let port = free_port();
    let site = Site::new(
        db.url(),
        &format!(
            "{CRAWL}status_listen = {port}\nMultiDoc.Enable = 1\nMultiDoc.Model = {}\n",
            model.display()
        ),
    );
    let first = pages(&db, &site, "m.test", 0, 5);
    let daemon = site.spawn();
    wait_for("the first pages", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_multidoc_pages_total") == Some(5.0)
    });
    let (shown, state) = card(port, "model");
    let checksum = u32::from_str_radix(shown.as_str().unwrap(), 16).unwrap();
    assert_eq!(state, "ok");

    // The file damaged in place (a byte of its body), then a reload.
    let mut damaged = good_model.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 0xff;
    std::fs::write(&model, &damaged).unwrap();
    daemon.signal(Signal::SIGUSR2);
    wait_for("the model refused", Duration::from_secs(30), || {
        kind(port, "model") == Some(1.0)
    });
    let log = site.log();
    let refused = format!("multidoc: model {} refused: ", model.display());
    assert!(log.contains(&refused), "{log}");
    assert!(
        log.contains(&format!("; the model in use ({checksum:08x}) stays")),
        "{log}"
    );
    let (shown, state) = card(port, "model");
    assert!(
        shown.as_str().unwrap().contains(&format!("{checksum:08x}")),
        "{shown}"
    );
    assert!(shown.as_str().unwrap().contains("refused"), "{shown}");
    assert_eq!(state, "warn");
    // New pages are classified with the model in use.
    let second = pages(&db, &site, "m.test", 5, 5);
    wait_for("the new pages", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_multidoc_pages_total") == Some(10.0)
    });
    let rows = pages_by_id(&db);
    for url in first.iter().chain(&second) {
        assert_eq!(rows[&id_of(url)].model_checksum, Some(checksum), "{url}");
        assert!(rows[&id_of(url)].categories.is_some(), "{url}");
    }
    assert_eq!(
        kind(port, "model"),
        Some(1.0),
        "refused once, not at every step"
    );

    // The good file back: the card says so.
    std::fs::write(&model, &good_model).unwrap();
    daemon.signal(Signal::SIGUSR2);
    wait_for("the model back", Duration::from_secs(30), || {
        card(port, "model") == (serde_json::json!(format!("{checksum:08x}")), "ok".into())
    });
    daemon.stop();

    // Damaged at the start: no model, the pages analysed without categories.
    std::fs::write(&model, &damaged).unwrap();
    let daemon = site.spawn();
    wait_for(
        "the model refused at the start",
        Duration::from_secs(30),
        || kind(port, "model") == Some(1.0),
    );
    let (shown, state) = card(port, "model");
    assert_eq!(
        (shown, state.as_str()),
        (serde_json::json!("refused"), "warn")
    );
    assert!(site
        .log()
        .contains("; pages are analysed without categories"));
    let third = pages(&db, &site, "m.test", 10, 3);
    wait_for("pages without a model", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_multidoc_pages_total") == Some(3.0)
    });
    let rows = pages_by_id(&db);
    for url in &third {
        let r = &rows[&id_of(url)];
        assert_eq!(
            (r.model_checksum, r.categories.as_deref()),
            (None, None),
            "{url}"
        );
        assert_eq!(r.outcome, PageOutcome::Analysed);
    }
    daemon.stop();
}
