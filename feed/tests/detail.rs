//! fetch_detail reports: what they say, in what order, and their cap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use focuser_feed::detail::{Counts, FetchDetail, MAX_DETAIL_BYTES};
use focuser_feed::diff::{plan, Current, Previous, Valve};
use focuser_feed::items::{FailReason, FailedKey, Limits};
use focuser_feed::sitemap;

#[test]
fn a_report_a_person_can_act_on() {
    let mut d = FetchDetail::new();
    assert!(!d.is_error());
    let e = sitemap::parse(b"http://ok/\nftp://bad/\n", None).unwrap_err();
    d.source_failed("partner-a", &e);
    let feed = "<rss><channel><item><id>1</id><title>t</title></item><item><id>2</titel></item></channel></rss>";
    let (_, r) = run(feed.as_bytes(), &shop_rules());
    d.feed_failed("partner-b", "http://b.example/feed.xml", &r.unwrap_err());

    let keys: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
    let previous: Vec<Previous> = keys
        .iter()
        .map(|k| Previous {
            keyword: k,
            md5: "1",
            digest: None,
            status_id: None,
        })
        .collect();
    let current = [Current {
        keyword: "y",
        md5: "1",
        digest: None,
    }];
    let p = plan(&previous, &current, 9, Valve::default(), |_| false);
    d.valve(p.valve.as_ref().unwrap());
    d.counts(Counts::of(&p, 9));
    for i in 0..25u64 {
        d.failed_key(&FailedKey {
            number: i + 1,
            line: i + 3,
            key: (i % 2 == 1).then(|| format!("key{i}")),
            reason: if i % 2 == 1 {
                FailReason::MissingRequired {
                    label: "price".into(),
                }
            } else {
                FailReason::NoKey { label: "id".into() }
            },
        });
    }
    assert!(d.is_error());
    let text = d.render(MAX_DETAIL_BYTES);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "error: safety valve: 9 of 10 items failed validation, more than 80 %; nothing deleted"
    );
    assert_eq!(lines[1], "source \"partner-a\": the sitemap has a format error: line 2 does not start with http: \"ftp://bad/\"");
    assert!(
        lines[2].starts_with(
            "source \"partner-b\", http://b.example/feed.xml: the feed is not well-formed XML: "
        ),
        "{}",
        lines[2]
    );
    assert!(
        lines[2].ends_with("(1 items and 0 failed keys read before it)"),
        "{}",
        lines[2]
    );
    assert_eq!(
        lines[3],
        "items: 1 new, 0 changed, 0 deleted, 0 unchanged, 9 failed keys, 10 kept though missing"
    );
    assert!(lines[4].starts_with("failed keys (first 20 of 25): item 1 (line 3): no key \"id\"; key1: no \"price\" (required); "), "{}", lines[4]);
    assert_eq!(lines[4].matches("; ").count(), 19);
    assert_eq!(lines.len(), 5);
    assert!(text.len() <= MAX_DETAIL_BYTES, "{}", text.len());
}

#[test]
fn a_healthy_run_is_one_line() {
    let mut d = FetchDetail::new();
    d.counts(Counts {
        new: 1,
        changed: 3,
        deleted: 2,
        unchanged: 94,
        ..Counts::default()
    });
    assert!(!d.is_error());
    assert_eq!(
        d.render(MAX_DETAIL_BYTES),
        "items: 1 new, 3 changed, 2 deleted, 94 unchanged, 0 failed keys"
    );
}

#[test]
fn long_reports_are_capped_on_a_char_boundary() {
    let mut d = FetchDetail::new();
    for i in 0..100 {
        d.feed_failed(
            &format!("数据源{i}"),
            &format!("http://例子.example/{}", "长".repeat(80)),
            &"连接超时",
        );
    }
    for i in 0..100u64 {
        d.failed_key(&FailedKey {
            number: i,
            line: i,
            key: Some("键".repeat(300)),
            reason: FailReason::ItemTooLarge { limit: 1 },
        });
    }
    let text = d.render(MAX_DETAIL_BYTES);
    assert!(text.len() <= MAX_DETAIL_BYTES);
    assert!(text.len() > MAX_DETAIL_BYTES - 4);
    assert!(text.ends_with('…'));
    let all = d.render(usize::MAX);
    assert!(
        all.contains("… and 90 more failed sources or feeds"),
        "{all}"
    );
    // Each quoted key is cut to 80 characters.
    assert!(all.contains(&format!("{}…", "键".repeat(80))));
    assert!(!all.contains(&"键".repeat(81)));
    for max in [0, 1, 2, 3, 4, 7, 100] {
        assert!(d.render(max).len() <= max);
    }
    let _ = Limits::default();
}
