//! Every daemon's status page as a person sees it, on a pipeline that has done real work:
//! headless Chromium opens each page, takes a screenshot, and the text it rendered must hold
//! the key figures that daemon reports in `/status.json` (the master's last cycles, each
//! yacobot's queue, fetch rate, errors and resources in error, each sender's receivers and
//! their lag, each receiver's streams), with a chart of the last hour.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use chrono::Utc;
use common::{start_pipeline, NODES, RECEIVERS};
use focuser_schema::models::{
    DataFrom, FetchStatus, NewVrResource, ResStatus, VrResource, VrResourceChanges,
};
use focuser_tests::browser::{text_of, Chromium};
use focuser_tests::pipeline::{observe, Instance, Kind};
use focuser_tests::status_page::{missing, shown};
use serde_json::Value;

const DETAIL: &str =
    "source \"main\": sitemap line 3 does not start with http; 0 of 2 URLs fetched";

fn card<'a>(status: &'a Value, label: &str) -> &'a Value {
    status["cards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["label"] == label)
        .unwrap_or_else(|| panic!("no card {label:?} in {}", status["cards"]))
}

fn table<'a>(status: &'a Value, id: &str) -> &'a Vec<Value> {
    status["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no table {id:?} in {}", status["tables"]))["rows"]
        .as_array()
        .unwrap()
}

/// Whether the run ships the resources' stores too (a receiver then has two streams a node).
fn plan_feeds_on(i: &Instance) -> bool {
    let dir = i.rootdir.parent().unwrap();
    focuser_tests::pipeline::Plan::load(dir).unwrap().feeds_on
}

/// The key figures each kind of daemon must show, checked against its own figures.
fn key_figures(i: &Instance, s: &Value) {
    let figure = |name: &str| observe::figure_sum(s, name);
    match i.kind {
        Kind::Master => {
            assert_eq!(shown(&card(s, "last cycle")["value"]), "1");
            assert_eq!(card(s, "lines read")["value"], figure("master_lines_total"));
            let cycles = table(s, "cycles");
            assert_eq!(cycles.len(), 1, "{cycles:?}");
            assert_eq!(cycles[0]["cells"][3], figure("master_last_cycle_lines"));
        }
        Kind::Yacobot => {
            assert_eq!(
                card(s, "pages fetched")["value"],
                figure("yacobot_pages_total")
            );
            assert_eq!(card(s, "due URLs")["value"], figure("yacobot_due_urls"));
            card(s, "fetch rate");
            card(s, "fetch errors");
            let errors = &card(s, "resources in error");
            let rows = table(s, "resources_in_error");
            if i.number == 1 {
                assert_eq!(
                    (errors["value"].as_f64(), errors["state"].as_str()),
                    (Some(1.0), Some("error"))
                );
                assert_eq!(rows.len(), 1);
                assert_eq!(rows[0]["cells"][3], DETAIL);
            } else {
                assert_eq!(errors["value"].as_f64(), Some(0.0));
                assert!(rows.is_empty());
            }
        }
        Kind::Sender => {
            assert_eq!(
                shown(&card(s, "receivers connected")["value"]),
                format!("{RECEIVERS} of {RECEIVERS}")
            );
            assert_eq!(card(s, "lag")["value"], figure("reader_sender_lag_items"));
            let rows = table(s, "receivers");
            assert_eq!(rows.len(), RECEIVERS, "{rows:?}");
            assert!(
                rows.iter()
                    .all(|r| r["cells"][3] == "yes" && r["state"] == "ok"),
                "{rows:?}"
            );
            assert_eq!(table(s, "sendfile").len(), 1);
        }
        Kind::FeedSender | Kind::BindingsSender | Kind::StubsSender => {
            let rows = table(s, "receivers");
            assert_eq!(rows.len(), RECEIVERS, "{rows:?}");
            assert!(rows.iter().all(|r| r["cells"][3] == "yes"), "{rows:?}");
        }
        // This run binds nothing: no ad-server receiver.
        Kind::AdServer => {}
        Kind::Receiver => {
            assert_eq!(
                card(s, "items stored")["value"],
                figure("reader_recv_items_total")
            );
            let streams = table(s, "streams");
            let per_node = if plan_feeds_on(i) { 2 } else { 1 };
            assert_eq!(
                streams.len(),
                NODES * per_node,
                "one stream per node and store: {streams:?}"
            );
        }
    }
}

#[test]
fn every_status_page_shows_in_a_browser_what_status_json_reports() {
    let p = start_pipeline(1, 20, 0.1);
    let plan = p.plan().clone();
    // A feed whose last run failed, as the resources worker leaves it (disabled, so that no
    // scan takes it up).
    let mut c = focuser_schema::db::connect(&plan.node_dbs[0]).unwrap();
    let res = NewVrResource {
        class_id: 1,
        res_name: "weather-feed",
        data_group: "weather",
        data_from: DataFrom::PARTNER_FEED,
        frequency: 3600,
        is_manual: false,
        res_status: ResStatus::Disabled,
        priority: 0,
        max_items: 0,
    }
    .insert(&mut c)
    .unwrap();
    let failed_at = Utc::now().naive_utc() - chrono::TimeDelta::hours(1);
    VrResource::update(
        &mut c,
        res.id,
        &VrResourceChanges {
            fetch_status: Some(FetchStatus::Error),
            fetch_detail: Some(Some(DETAIL)),
            last_fetch_time: Some(Some(failed_at)),
            ..Default::default()
        },
    )
    .unwrap();

    p.run.drop_reflog(0).unwrap();
    p.settle("status pages");
    // Every page has sampled its charts a few times (status_sample = 5).
    let t = Instant::now();
    let instances = p.run.instances();
    loop {
        let ready = instances.iter().all(|i| {
            let s = observe::status_json(i).unwrap();
            s["charts"].as_array().unwrap().iter().any(|c| {
                c["series"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|s| s["points"].as_array().unwrap().len() >= 2)
            })
        });
        if ready {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the charts did not fill"
        );
        std::thread::sleep(Duration::from_secs(1));
    }

    let chromium = Chromium::find()
        .unwrap()
        .window(1280, 1400)
        .timeout(Duration::from_secs(90));
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-pages");
    std::fs::create_dir_all(&shots).unwrap();
    for i in &instances {
        let url = i.status_url();
        let png = shots.join(format!("{}.png", i.name));
        let shot = chromium.screenshot(&url, &png).unwrap();
        assert!(
            shot.bytes > 10_000 && shot.colours > 50,
            "{}: a page, not a blank window: {shot:?}",
            i.name
        );
        let before = observe::status_json(i).unwrap();
        let dom = chromium.dom(&url).unwrap();
        let after = observe::status_json(i).unwrap();
        let text = text_of(&dom);
        key_figures(i, &after);
        let (lacks, compared) = missing(&text, &before, &after);
        assert!(
            lacks.is_empty(),
            "{} ({url}): the page lacks {}:\n{text}",
            i.name,
            lacks.join(", ")
        );
        let cards = after["cards"].as_array().unwrap().len();
        assert!(
            cards >= 5 && compared >= cards,
            "{}: {cards} cards, {compared} cards and cells compared",
            i.name
        );
        assert!(
            dom.contains("<svg") && dom.contains("<polyline"),
            "{}: a chart of the last hour is drawn",
            i.name
        );
        eprintln!(
            "{}: {compared} cards and cells checked; screenshot {}",
            i.name,
            png.display()
        );
    }
}
