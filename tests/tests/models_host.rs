//! The record per host (`host`): a batch's news added to what is there, and robots.txt read
//! back for the hosts that have one a fetcher can take. (Beside models.rs, which holds the
//! other tables' round trips.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{NaiveDate, NaiveDateTime};
use focuser_schema::models::{DelaySource, Host, HostRow, KeptRobots, RobotsAnswer};
use focuser_tests::TestDb;

fn t(h: u32, m: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 26)
        .unwrap()
        .and_hms_opt(h, m, 0)
        .unwrap()
}

fn row(name: &str) -> HostRow<'_> {
    HostRow {
        name,
        documents: 0,
        bytes: 0,
        bps: None,
        server: None,
        errors: 0,
        errors_in_row: 0,
        last_error: None,
        last_error_at: None,
        last_answer_at: None,
        delay_ms: None,
        delay_source: None,
        robots: None,
    }
}

#[test]
fn a_batch_adds_to_the_record_and_leaves_alone_what_it_does_not_say() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let robots = b"User-agent: *\nDisallow: /x\n";
    let first = HostRow {
        documents: 3,
        bytes: 3000,
        bps: Some(1000.0),
        server: Some("nginx"),
        errors: 2,
        errors_in_row: 1,
        last_error: Some("timeout: slow"),
        last_error_at: Some(t(10, 1)),
        last_answer_at: Some(t(10, 0)),
        delay_ms: Some(1000),
        delay_source: Some(DelaySource::HostDelay),
        robots: Some(RobotsAnswer {
            fetched_at: t(10, 0),
            expires: t(11, 0),
            status: Some(200),
            md5: Some("0123456789abcdef0123456789abcdef"),
            bytes: Some(robots.len() as u32),
            txt: Some(robots),
        }),
        ..row("a.test:80")
    };
    assert_eq!(
        Host::record_batch(c, &[first, row("b.test:80")], t(10, 2)).unwrap(),
        2
    );
    let a = Host::find(c, "a.test:80").unwrap();
    assert_eq!(
        (a.documents, a.bytes, a.bps, a.errors, a.errors_in_row),
        (3, 3000, Some(1000.0), 2, 1)
    );
    assert_eq!(a.robots_txt.as_deref(), Some(&robots[..]));
    assert_eq!(
        (a.robots_status, a.robots_expires),
        (Some(200), Some(t(11, 0)))
    );
    assert_eq!(a.delay_source, Some(DelaySource::HostDelay));

    // Failures only: they add to the errors in a row; what the batch does not say stays.
    let failing = HostRow {
        errors: 2,
        errors_in_row: 2,
        last_error: Some("connect: refused"),
        last_error_at: Some(t(10, 5)),
        ..row("a.test:80")
    };
    Host::record_batch(c, &[failing], t(10, 6)).unwrap();
    let a = Host::find(c, "a.test:80").unwrap();
    assert_eq!((a.documents, a.errors, a.errors_in_row), (3, 4, 3));
    assert_eq!(a.last_error.as_deref(), Some("connect: refused"));
    assert_eq!(
        (a.server.as_deref(), a.bps, a.delay_ms),
        (Some("nginx"), Some(1000.0), Some(1000))
    );
    assert_eq!(
        a.robots_txt.as_deref(),
        Some(&robots[..]),
        "kept without robots news"
    );
    assert_eq!(a.updated_at, t(10, 6));

    // An answer: the errors in a row start again; the speed moves a quarter of the way; a new
    // robots.txt without a kept file replaces the old one whole.
    let answered = HostRow {
        documents: 1,
        bytes: 500,
        bps: Some(5000.0),
        server: Some("Apache"),
        last_answer_at: Some(t(10, 7)),
        delay_ms: Some(2500),
        delay_source: Some(DelaySource::CrawlDelay),
        robots: Some(RobotsAnswer {
            fetched_at: t(10, 7),
            expires: t(10, 17),
            status: None,
            md5: None,
            bytes: None,
            txt: None,
        }),
        ..row("a.test:80")
    };
    Host::record_batch(c, &[answered], t(10, 8)).unwrap();
    let a = Host::find(c, "a.test:80").unwrap();
    assert_eq!(
        (a.documents, a.bytes, a.errors, a.errors_in_row),
        (4, 3500, 4, 0)
    );
    assert_eq!(a.bps, Some(2000.0));
    assert_eq!(a.server.as_deref(), Some("Apache"));
    assert_eq!(
        (a.delay_ms, a.delay_source),
        (Some(2500), Some(DelaySource::CrawlDelay))
    );
    assert_eq!(
        (
            a.robots_status,
            a.robots_txt,
            a.robots_md5,
            a.robots_fetched_at
        ),
        (None, None, None, Some(t(10, 7)))
    );
    let b = Host::find(c, "b.test:80").unwrap();
    assert_eq!((b.documents, b.bps, b.robots_fetched_at), (0, None, None));
}

#[test]
fn kept_robots_are_those_still_trusted_that_a_fetcher_can_take() {
    let db = TestDb::new();
    let c = &mut db.conn();
    let answer = |status: Option<u16>, expires, txt: Option<&'static [u8]>| RobotsAnswer {
        fetched_at: t(9, 0),
        expires,
        status,
        md5: None,
        bytes: None,
        txt,
    };
    let rows = [
        HostRow {
            robots: Some(answer(Some(200), t(12, 0), Some(b"Disallow: /"))),
            ..row("ok.test:80")
        },
        HostRow {
            robots: Some(answer(Some(404), t(12, 0), None)),
            ..row("none.test:80")
        },
        HostRow {
            robots: Some(answer(Some(200), t(12, 0), None)),
            ..row("long.test:80")
        },
        HostRow {
            robots: Some(answer(Some(503), t(12, 0), None)),
            ..row("down.test:80")
        },
        HostRow {
            robots: Some(answer(None, t(12, 0), None)),
            ..row("away.test:80")
        },
        HostRow {
            robots: Some(answer(Some(200), t(10, 0), Some(b""))),
            ..row("old.test:80")
        },
        row("never.test:80"),
    ];
    Host::record_batch(c, &rows, t(9, 0)).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.name).collect();
    let mut kept = Host::kept_robots(c, &names, t(10, 0)).unwrap();
    kept.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(
        kept,
        [
            KeptRobots {
                name: "none.test:80".into(),
                status: 404,
                txt: None,
                expires: t(12, 0)
            },
            KeptRobots {
                name: "ok.test:80".into(),
                status: 200,
                txt: Some(b"Disallow: /".to_vec()),
                expires: t(12, 0)
            },
        ]
    );
    assert!(Host::kept_robots(c, &[], t(10, 0)).unwrap().is_empty());
}
