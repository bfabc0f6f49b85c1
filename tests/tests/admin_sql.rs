//! Every query of conf/admin.sql, run with the real `mariadb` client against a database holding
//! the sample rows, answers what its comment says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Stdio;

use focuser_tests::{repo_root, TestDb};

/// `label -> SQL` from the `-- [label] description` blocks of admin.sql.
fn admin_queries() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(repo_root().join("conf/admin.sql")).unwrap();
    let mut queries = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("-- [") {
            let (label, description) = rest.split_once(']').unwrap();
            assert!(!description.trim().is_empty(), "{label} has no description");
            current = Some((label.to_string(), String::new()));
        } else if let Some((_, sql)) = current.as_mut() {
            sql.push_str(line);
            sql.push('\n');
            if line.trim_end().ends_with(';') {
                let (label, sql) = current.take().unwrap();
                assert!(
                    queries.insert(label.clone(), sql).is_none(),
                    "duplicate label {label}"
                );
            }
        }
    }
    assert!(current.is_none(), "admin.sql ends inside a query");
    queries
}

fn load_sample(db: &TestDb) {
    let sample = std::fs::File::open(repo_root().join("scripts/sample/foundation.sql")).unwrap();
    let out = db.client().stdin(sample).output().unwrap();
    assert!(
        out.status.success(),
        "sample load failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs one query with the client in batch mode: a header row and tab-separated rows.
fn run(db: &TestDb, sql: &str) -> Vec<BTreeMap<String, String>> {
    let out = db
        .client()
        .args(["--batch", "--raw", "-e", sql])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{sql}\nfailed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let names: Vec<&str> = header.split('\t').collect();
    lines
        .map(|l| {
            names
                .iter()
                .map(|n| n.to_string())
                .zip(l.split('\t').map(str::to_string))
                .collect()
        })
        .collect()
}

fn column(rows: &[BTreeMap<String, String>], name: &str) -> Vec<String> {
    rows.iter().map(|r| r[name].clone()).collect()
}

#[test]
fn every_admin_query_answers_its_question() {
    let db = TestDb::new();
    load_sample(&db);
    load_sample(&db); // loading it twice changes nothing
    let q = admin_queries();
    assert_eq!(
        q.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "domains_per_node",
            "duplicate_groups",
            "duplicates_per_domain",
            "expiring_urls",
            "hosts_in_error",
            "hosts_most_documents",
            "loader_watermarks",
            "node_load",
            "orphan_domains",
            "queue_files_applied",
            "recent_runs",
            "resource_feeds_in_error",
            "resources_due",
            "resources_in_error",
            "resources_withdrawing",
            "slowest_hosts",
            "stuck_claims",
            "top_due_urls",
            "vr_data_per_resource",
        ]
    );

    let load = run(&db, &q["node_load"]);
    assert_eq!(column(&load, "name"), ["yb01", "yb02", "yb03"]);
    assert_eq!(column(&load, "enabled"), ["1", "1", "0"]);
    assert_eq!(column(&load, "domains"), ["2", "1", "1"]);
    assert_eq!(column(&load, "urls"), ["2", "2", "0"]);
    assert_eq!(column(&load, "due_urls"), ["2", "1", "0"]);

    let per_node = run(&db, &q["domains_per_node"]);
    assert_eq!(column(&per_node, "domains"), ["2", "1", "1"]);
    assert_eq!(column(&per_node, "assigned_last_day"), ["1", "0", "0"]);

    let orphans = run(&db, &q["orphan_domains"]);
    assert_eq!(column(&orphans, "domain"), ["example.org"]);

    // 1003's claim lapsed, so it is due again; 1004 has no hits.
    let top = run(&db, &q["top_due_urls"]);
    assert_eq!(column(&top, "id"), ["1001", "1003", "1002"]);
    assert_eq!(column(&top, "download_prio"), ["12", "7", "3"]);

    let stuck = run(&db, &q["stuck_claims"]);
    assert_eq!(column(&stuck, "id"), ["1003"]);
    assert_eq!(column(&stuck, "claimed_by"), ["yb02/4242"]);
    let overdue: i64 = stuck[0]["minutes_overdue"].parse().unwrap();
    assert!((29..=31).contains(&overdue), "{overdue}");

    let feeds = run(&db, &q["resource_feeds_in_error"]);
    assert!(feeds.iter().all(|r| r["error"] != "NULL"), "{feeds:?}");
    let errors = run(&db, &q["resources_in_error"]);
    assert_eq!(column(&errors, "res_name"), ["weather-feed"]);
    assert!(errors[0]["fetch_detail"].contains("does not start with http"));
    assert_eq!(column(&errors, "live_items"), ["2"]);

    let due = run(&db, &q["resources_due"]);
    assert_eq!(column(&due, "res_name"), ["weather-feed"]);

    let items = run(&db, &q["vr_data_per_resource"]);
    assert_eq!(
        (
            column(&items, "live_items"),
            column(&items, "deleted_items"),
            column(&items, "unemitted")
        ),
        (
            vec!["2".to_string()],
            vec!["1".to_string()],
            vec!["1".to_string()]
        )
    );

    let runs = run(&db, &q["recent_runs"]);
    assert_eq!(
        (column(&runs, "run_id"), column(&runs, "status")),
        (vec!["1".to_string()], vec!["4".to_string()])
    );

    let slow = run(&db, &q["slowest_hosts"]);
    assert_eq!(
        column(&slow, "name"),
        ["fatalenergy.com.ru:80", "3dnews.ru:443", "astroma.net:80"],
        "example.org has no answer yet"
    );
    assert_eq!(column(&slow, "bps"), ["1200", "8000", "250000"]);
    let failing = run(&db, &q["hosts_in_error"]);
    assert_eq!(
        column(&failing, "name"),
        ["fatalenergy.com.ru:80", "example.org:80"]
    );
    assert_eq!(
        column(&failing, "last_error")[0],
        "connect: Connection refused"
    );
    let most = run(&db, &q["hosts_most_documents"]);
    assert_eq!(
        column(&most, "name")[..3],
        ["astroma.net:80", "3dnews.ru:443", "fatalenergy.com.ru:80"]
    );
    assert_eq!(column(&most, "mib")[0], "5.7");

    let queues = run(&db, &q["queue_files_applied"]);
    assert_eq!(column(&queues, "source"), ["master1", "master2"]);
    assert_eq!(column(&queues, "files"), ["2", "1"]);
    assert_eq!(column(&queues, "urls"), ["200", "80"]);
    assert_eq!(column(&queues, "skipped"), ["0", "1"]);
    assert_eq!(
        column(&queues, "last_file"),
        ["master1-000002.q", "master2-000002.q"]
    );

    let marks = run(&db, &q["loader_watermarks"]);
    assert_eq!(column(&marks, "master"), ["master1", "master2"]);
}

#[test]
fn the_whole_file_runs_in_the_client_on_an_empty_database() {
    let db = TestDb::new();
    let file = std::fs::File::open(repo_root().join("conf/admin.sql")).unwrap();
    let out = db.client().arg("--table").stdin(file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_resource_that_is_running_or_manual_is_not_due() {
    let db = TestDb::new();
    load_sample(&db);
    let q = admin_queries();
    run(&db, "UPDATE vr_resource SET fetch_status = 2 WHERE id = 1");
    assert!(
        run(&db, &q["resources_due"]).is_empty(),
        "a running resource is not started again"
    );
    run(
        &db,
        "UPDATE vr_resource SET fetch_status = 1, is_manual = 1 WHERE id = 1",
    );
    assert!(
        run(&db, &q["resources_due"]).is_empty(),
        "manual and not asked for"
    );
    run(&db, "UPDATE vr_resource SET manual_update = 1 WHERE id = 1");
    assert_eq!(
        column(&run(&db, &q["resources_due"]), "res_name"),
        ["weather-feed"]
    );
    // Withdrawn (resource disable) or removed (resource remove): not a run, a withdrawal.
    assert!(run(&db, &q["resources_withdrawing"]).is_empty());
    run(&db, "UPDATE vr_resource SET res_status = 2 WHERE id = 1");
    assert!(
        run(&db, &q["resources_due"]).is_empty(),
        "a resource being withdrawn has no run due"
    );
    let withdrawing = run(&db, &q["resources_withdrawing"]);
    assert_eq!(column(&withdrawing, "res_name"), ["weather-feed"]);
    assert_eq!(column(&withdrawing, "asked"), ["withdrawing"]);
    let live = run(
        &db,
        "SELECT COUNT(*) AS n FROM vr_data WHERE res_id = 1 AND data_status = 1",
    );
    assert_eq!(column(&withdrawing, "live_items"), column(&live, "n"));
    run(&db, "UPDATE vr_resource SET res_status = 3 WHERE id = 1");
    let removing = run(&db, &q["resources_withdrawing"]);
    assert_eq!(column(&removing, "asked"), ["removing"]);
}

#[test]
fn duplicate_groups_and_expiring_urls_are_counted() {
    let db = TestDb::new();
    let q = admin_queries();
    run(
        &db,
        "INSERT INTO multidoc_domain VALUES (7, 'a.test', 5, 0, UTC_TIMESTAMP(), UTC_DATE()), \
                                           (8, 'b.test', 1, 0, UTC_TIMESTAMP(), UTC_DATE()); \
         INSERT INTO multidoc_group VALUES (70, 7, 1, 0, 0, 0, 1, 1, UTC_TIMESTAMP()), \
                                           (71, 7, 2, 0, 0, 0, 2, 4, UTC_TIMESTAMP()), \
                                           (80, 8, 3, 0, 0, 0, 3, 6, UTC_TIMESTAMP()); \
         INSERT INTO multidoc_page (id, outcome, dup_group, analysed_at, archive_file, archive_item) \
         VALUES (1, 1, 70, UTC_TIMESTAMP(), 1, 1), (2, 1, 70, UTC_TIMESTAMP(), 1, 2), \
                (3, 1, 70, UTC_TIMESTAMP(), 1, 3), (4, 1, 71, UTC_TIMESTAMP(), 1, 4), \
                (5, 1, 71, UTC_TIMESTAMP(), 1, 5), (6, 1, 80, UTC_TIMESTAMP(), 1, 6); \
         INSERT INTO url (id, url, domain, path_hash, hits, first_seen, last_hit, next_indexed) \
         VALUES (1, 'http://a.test/1', 'a.test', 1, 0, UTC_TIMESTAMP(), \
                 UTC_TIMESTAMP() - INTERVAL 100 DAY, UTC_TIMESTAMP()), \
                (2, 'http://a.test/2', 'a.test', 1, 1, UTC_TIMESTAMP(), \
                 UTC_TIMESTAMP() - INTERVAL 100 DAY, UTC_TIMESTAMP() - INTERVAL 1 DAY), \
                (3, 'http://a.test/3', 'a.test', 1, 0, UTC_TIMESTAMP(), \
                 UTC_TIMESTAMP() - INTERVAL 10 DAY, UTC_TIMESTAMP())",
    );
    let groups = run(&db, &q["duplicate_groups"]);
    assert_eq!(column(&groups, "group_id"), ["70", "71"]);
    assert_eq!(column(&groups, "pages"), ["3", "2"]);
    assert_eq!(column(&groups, "rep_url"), ["http://a.test/1", "NULL"]);
    let per = run(&db, &q["duplicates_per_domain"]);
    assert_eq!(column(&per, "domain"), ["a.test", "b.test"]);
    assert_eq!(column(&per, "duplicates"), ["3", "0"]);
    assert_eq!(column(&per, "groups_with_duplicates"), ["2", "0"]);
    // 1 is old and not due; 2 is old but due; 3 was hit 10 days ago.
    let expiring = run(&db, &q["expiring_urls"]);
    assert_eq!(column(&expiring, "expiring"), ["1"]);
}
