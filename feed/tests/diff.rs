//! The write plan and its safety valve, table-driven: the issue's cases and the boundaries.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use focuser_feed::diff::{plan, same, Current, Plan, Previous, Valve, ValveReason};

/// Items `k0..kn` with MD5 `m0`; `changed` of them with another MD5.
fn prev_items(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| (format!("k{i}"), "m0".to_string()))
        .collect()
}

struct Case {
    name: &'static str,
    previous: usize,
    /// This run: the keys kept from `k0..`, how many of them changed, how many new ones.
    kept: usize,
    changed: usize,
    added: usize,
    failed: u64,
    /// inserts, updates, unchanged, deletes, withheld
    want: (usize, usize, usize, usize, usize),
    valve: Option<ValveReason>,
}

fn run_case(c: &Case) -> Plan {
    let prev = prev_items(c.previous);
    let previous: Vec<Previous> = prev
        .iter()
        .map(|(k, m)| Previous {
            keyword: k,
            md5: m,
            digest: None,
            status_id: Some(1),
        })
        .collect();
    let mut cur: Vec<(String, String)> = (0..c.kept)
        .map(|i| {
            (
                format!("k{i}"),
                if i < c.changed { "m1" } else { "m0" }.to_string(),
            )
        })
        .collect();
    cur.extend((0..c.added).map(|i| (format!("new{i}"), "m0".to_string())));
    let current: Vec<Current> = cur
        .iter()
        .map(|(k, m)| Current {
            keyword: k,
            md5: m,
            digest: None,
        })
        .collect();
    plan(&previous, &current, c.failed, Valve::default(), |_| false)
}

#[test]
fn the_issues_cases_and_the_boundaries() {
    let shrunk = |items, previous| {
        Some(ValveReason::Shrunk {
            items,
            previous,
            min_percent: 20,
        })
    };
    let failed = |failed, total| {
        Some(ValveReason::FailedKeys {
            failed,
            total,
            max_percent: 80,
        })
    };
    let cases = [
        Case {
            name: "first run",
            previous: 0,
            kept: 0,
            changed: 0,
            added: 5,
            failed: 0,
            want: (5, 0, 0, 0, 0),
            valve: None,
        },
        Case {
            name: "unchanged feed",
            previous: 100,
            kept: 100,
            changed: 0,
            added: 0,
            failed: 0,
            want: (0, 0, 100, 0, 0),
            valve: None,
        },
        Case {
            name: "3 modified, 2 removed, 1 added",
            previous: 100,
            kept: 98,
            changed: 3,
            added: 1,
            failed: 0,
            want: (1, 3, 95, 2, 0),
            valve: None,
        },
        Case {
            name: "shrinks to 10 %",
            previous: 100,
            kept: 10,
            changed: 0,
            added: 0,
            failed: 0,
            want: (0, 0, 10, 0, 90),
            valve: shrunk(10, 100),
        },
        Case {
            name: "exactly 20 % is healthy",
            previous: 100,
            kept: 20,
            changed: 0,
            added: 0,
            failed: 0,
            want: (0, 0, 20, 80, 0),
            valve: None,
        },
        Case {
            name: "just under 20 %",
            previous: 1000,
            kept: 199,
            changed: 0,
            added: 0,
            failed: 0,
            want: (0, 0, 199, 0, 801),
            valve: shrunk(199, 1000),
        },
        Case {
            name: "85 % lose their key",
            previous: 100,
            kept: 15,
            changed: 0,
            added: 0,
            failed: 85,
            want: (0, 0, 15, 0, 85),
            valve: failed(85, 100),
        },
        Case {
            name: "exactly 80 % failed is healthy",
            previous: 100,
            kept: 20,
            changed: 0,
            added: 0,
            failed: 80,
            want: (0, 0, 20, 80, 0),
            valve: None,
        },
        Case {
            name: "just over 80 % failed",
            previous: 1000,
            kept: 199,
            changed: 0,
            added: 0,
            failed: 801,
            want: (0, 0, 199, 0, 801),
            valve: failed(801, 1000),
        },
        Case {
            name: "all failed on a first run",
            previous: 0,
            kept: 0,
            changed: 0,
            added: 0,
            failed: 3,
            want: (0, 0, 0, 0, 0),
            valve: failed(3, 3),
        },
        Case {
            name: "an empty run",
            previous: 7,
            kept: 0,
            changed: 0,
            added: 0,
            failed: 0,
            want: (0, 0, 0, 0, 7),
            valve: Some(ValveReason::NoItems),
        },
        Case {
            name: "a valve run still writes its changes",
            previous: 100,
            kept: 10,
            changed: 4,
            added: 2,
            failed: 0,
            want: (2, 4, 6, 0, 90),
            valve: shrunk(12, 100),
        },
    ];
    for c in &cases {
        let p = run_case(c);
        let got = (
            p.inserts.len(),
            p.updates.len(),
            p.unchanged,
            p.deletes.len(),
            p.withheld,
        );
        assert_eq!(got, c.want, "{}", c.name);
        assert_eq!(p.valve, c.valve, "{}", c.name);
        assert!(p.duplicates.is_empty());
    }
}

#[test]
fn which_items_are_planned() {
    let previous = [
        Previous {
            keyword: "a",
            md5: "1",
            digest: None,
            status_id: Some(10),
        },
        Previous {
            keyword: "b",
            md5: "1",
            digest: None,
            status_id: Some(10),
        },
        Previous {
            keyword: "c",
            md5: "1",
            digest: None,
            status_id: Some(11),
        },
        Previous {
            keyword: "d",
            md5: "1",
            digest: None,
            status_id: None,
        },
    ];
    let current = [
        Current {
            keyword: "b",
            md5: "2",
            digest: None,
        },
        Current {
            keyword: "e",
            md5: "1",
            digest: None,
        },
        Current {
            keyword: "a",
            md5: "1",
            digest: None,
        },
        Current {
            keyword: "e",
            md5: "9",
            digest: None,
        },
    ];
    // Feed URL 11 failed this run: its items are kept.
    let p = plan(&previous, &current, 0, Valve::default(), |p| {
        p.status_id == Some(11)
    });
    assert_eq!(p.updates, [0]);
    assert_eq!(p.inserts, [1]);
    assert_eq!(p.unchanged, 1);
    assert_eq!(p.duplicates, [3]);
    assert_eq!(p.deletes, [3]);
    assert_eq!(p.withheld, 1);
    assert_eq!(p.valve, None);
}

#[test]
fn thresholds_are_parameters() {
    let previous: Vec<Previous> = ["a", "b", "c", "d"]
        .iter()
        .map(|k| Previous {
            keyword: k,
            md5: "1",
            digest: None,
            status_id: None,
        })
        .collect();
    let current = [Current {
        keyword: "a",
        md5: "1",
        digest: None,
    }];
    let strict = Valve {
        min_kept_percent: 50,
        max_failed_percent: 10,
    };
    let p = plan(&previous, &current, 0, strict, |_| false);
    assert_eq!(
        p.valve,
        Some(ValveReason::Shrunk {
            items: 1,
            previous: 4,
            min_percent: 50
        })
    );
    let lax = Valve {
        min_kept_percent: 25,
        max_failed_percent: 10,
    };
    let p = plan(&previous, &current, 0, lax, |_| false);
    assert_eq!((p.valve, p.deletes.len()), (None, 3));
    let p = plan(&previous, &current, 1, lax, |_| false);
    assert_eq!(
        p.valve,
        Some(ValveReason::FailedKeys {
            failed: 1,
            total: 2,
            max_percent: 10
        })
    );
}

#[test]
fn valve_reasons_read_as_sentences() {
    assert_eq!(
        ValveReason::Shrunk {
            items: 10,
            previous: 100,
            min_percent: 20
        }
        .to_string(),
        "safety valve: 10 items, fewer than 20 % of the previous run's 100; nothing deleted"
    );
    assert_eq!(
        ValveReason::FailedKeys {
            failed: 85,
            total: 100,
            max_percent: 80
        }
        .to_string(),
        "safety valve: 85 of 100 items failed validation, more than 80 %; nothing deleted"
    );
}

#[test]
fn items_compare_by_digest_when_both_have_one_else_by_md5() {
    let p = |md5, digest| Previous {
        keyword: "k",
        md5,
        digest,
        status_id: None,
    };
    let c = |md5, digest| Current {
        keyword: "k",
        md5,
        digest,
    };
    // Both digests: they decide, whatever the MD5s say (the current one is not computed).
    assert!(same(&p("m", Some(7)), &c("", Some(7))));
    assert!(!same(&p("m", Some(7)), &c("m", Some(8))));
    // A side without a digest: the MD5 decides.
    assert!(same(&p("m", None), &c("m", Some(7))));
    assert!(same(&p("m", Some(7)), &c("m", None)));
    assert!(!same(&p("m", None), &c("n", Some(7))));
    // Neither a digest nor a current MD5: changed, so rewritten rather than missed.
    assert!(!same(&p("", None), &c("", None)));
    assert!(!same(&p("m", None), &c("", Some(7))));

    let previous = [
        p("m", Some(1)),
        Previous {
            keyword: "j",
            ..p("x", None)
        },
    ];
    let current = [
        c("", Some(1)),
        Current {
            keyword: "j",
            ..c("y", Some(5))
        },
    ];
    let got = plan(&previous, &current, 0, Valve::default(), |_| false);
    assert_eq!((got.unchanged, got.updates.clone()), (1, vec![1]));
}
