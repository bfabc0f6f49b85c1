//! The exclusion file (`Url.ExcludeFile`, the source's excldb) through the `yacobot` binary:
//! the loader does not store what it excludes, the scheduler parks what it claims and finds
//! excluded, a SIGUSR2 puts a new file in force — and a bad file is refused with its file and
//! line: the start stops, a reload keeps the rules in force.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{due_url, record, url_row, Site};
use focuser_schema::models::FetchState;
use focuser_tests::TestDb;
use focuser_tests::{check_config, free_port, metric, metric_with, wait_for};
use nix::sys::signal::Signal;

fn site(db: &TestDb, port: u16, rules: &str) -> Site {
    let site = Site::new(
        db.url(),
        &format!(
            "status_listen = {port}\nstatus_sample = 1\nQargfilter.Enable = 0\nUrl.ExcludeFile = exclude.conf\n"
        ),
    );
    site.rules(rules);
    for page in [
        "keep.test/1",
        "keep.test/2",
        "keep.test/private/1",
        "keep.test/private/2",
    ] {
        site.page(page, "<html><body>a page</body></html>");
    }
    for page in ["old.test/1", "old.test/2", "new.test/1", "new.test/2"] {
        site.page(page, "<html><body>a page</body></html>");
    }
    site
}

trait Rules {
    fn rules(&self, text: &str);
    fn times(&self, line: &str) -> usize;
}

impl Rules for Site {
    fn rules(&self, text: &str) {
        let tmp = self.root().join(".exclude.conf.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(tmp, self.root().join("exclude.conf")).unwrap();
    }

    /// Lines of the log holding `line`.
    fn times(&self, line: &str) -> usize {
        self.log().lines().filter(|l| l.contains(line)).count()
    }
}

fn excluded(port: u16, by: &str) -> f64 {
    metric_with(
        port,
        "focuser_yacobot_urls_excluded_total",
        &format!("by=\"{by}\""),
    )
    .unwrap_or(-1.0)
}

/// Waits until the loader has applied queue file `name`.
fn applied(site: &Site, name: &str) {
    wait_for(name, Duration::from_secs(30), || {
        site.log().contains(&format!("applied {name}:"))
    });
}

#[test]
fn exclusions_are_obeyed_by_the_loader_and_the_scheduler_after_sigusr2() {
    let db = TestDb::new();
    let port = free_port();
    let site = site(&db, port, "# spam\ndomain old.test\n");
    let daemon = site.spawn();
    wait_for("the rules", Duration::from_secs(30), || {
        site.times("exclusions: 1 rules from") == 1
    });
    site.queue(
        "m1-0000000001.q",
        &[
            record("http://old.test/1", 1, ""),
            record("http://keep.test/1", 1, ""),
        ],
    );
    applied(&site, "m1-0000000001.q");
    assert!(url_row(&db, "http://old.test/1").is_none(), "not stored");
    assert!(url_row(&db, "http://keep.test/1").is_some());
    assert!(site.log().contains("applied m1-0000000001.q: 2 URLs, query arguments 0 dropped, 0 kept (0 new), 1 excluded (Url.ExcludeFile)"), "{}", site.log());

    // A new file, in force from the reload on.
    site.rules("domain old.test\nprefix http://keep.test/private/   # new\n");
    daemon.signal(Signal::SIGUSR2);
    wait_for("the new rules", Duration::from_secs(30), || {
        site.times("exclusions: 2 rules from") == 1
    });
    // A URL stored before its rule: claimed, then parked instead of fetched.
    let private = "http://keep.test/private/1";
    due_url(&db, private, 3, 10);
    wait_for("parked", Duration::from_secs(30), || {
        url_row(&db, private)
            .is_some_and(|r| r.fetch_state == FetchState::Excluded && r.claimed_by.is_none())
    });
    let row = url_row(&db, private).unwrap();
    let file = site.root().join("exclude.conf");
    assert_eq!(
        row.fetch_error.as_deref(),
        Some(
            format!(
                "excluded: {}:2 (prefix http://keep.test/private/)",
                file.display()
            )
            .as_str()
        )
    );
    assert_eq!(
        (row.hits, row.errors, row.last_fetch),
        (3, 0, None),
        "hits kept, not fetched"
    );
    let parked_for = row.next_indexed - chrono::Utc::now().naive_utc();
    assert!(
        (6..=7).contains(&parked_for.num_days()),
        "Url.ReindexPeriod: {parked_for}"
    );
    // And the loader stores no URL of it any more.
    site.queue(
        "m1-0000000002.q",
        &[
            record("http://keep.test/private/2", 1, ""),
            record("http://keep.test/2", 1, ""),
        ],
    );
    applied(&site, "m1-0000000002.q");
    assert!(url_row(&db, "http://keep.test/private/2").is_none());
    assert!(url_row(&db, "http://keep.test/2").is_some());
    wait_for("the figures", Duration::from_secs(10), || {
        excluded(port, "loader") == 2.0 && excluded(port, "scheduler") == 1.0
    });
    assert_eq!(metric(port, "focuser_yacobot_exclusion_rules"), Some(2.0));
    wait_for("keep.test/2 fetched", Duration::from_secs(30), || {
        url_row(&db, "http://keep.test/2").is_some_and(|r| r.fetch_state == FetchState::Fetched)
    });
    daemon.stop();
    let archived: Vec<String> = site.archive().into_iter().map(|i| i.url).collect();
    assert_eq!(archived, ["http://keep.test/1", "http://keep.test/2"]);
}

#[test]
fn a_bad_exclusion_file_is_refused_with_its_file_and_line_and_the_rules_in_force_stay() {
    let db = TestDb::new();
    let port = free_port();
    let site = site(&db, port, "domain old.test\n");
    let daemon = site.spawn();
    wait_for("the rules", Duration::from_secs(30), || {
        site.times("exclusions: 1 rules from") == 1
    });
    site.rules("domain new.test\nhots new.test\n");
    daemon.signal(Signal::SIGUSR2);
    let file = site.root().join("exclude.conf");
    let refused = format!(
        "exclusion file refused, the rules in force stay: {}:2: unknown rule \"hots\" (domain, host, prefix, path or pattern)",
        file.display()
    );
    wait_for("the refusal", Duration::from_secs(30), || {
        site.times(&refused) == 1
    });
    wait_for("the refusal counted", Duration::from_secs(10), || {
        metric(port, "focuser_yacobot_exclusion_files_refused_total") == Some(1.0)
    });
    site.queue(
        "m1-0000000001.q",
        &[
            record("http://old.test/1", 1, ""),
            record("http://new.test/1", 1, ""),
        ],
    );
    applied(&site, "m1-0000000001.q");
    assert!(
        url_row(&db, "http://old.test/1").is_none(),
        "the old rules stay"
    );
    assert!(
        url_row(&db, "http://new.test/1").is_some(),
        "the bad file's are not in force"
    );

    // Repaired: in force at the next reload.
    site.rules("domain new.test\n");
    daemon.signal(Signal::SIGUSR2);
    wait_for("the new rules", Duration::from_secs(30), || {
        site.times("exclusions: 1 rules from") == 2
    });
    site.queue(
        "m1-0000000002.q",
        &[
            record("http://old.test/2", 1, ""),
            record("http://new.test/2", 1, ""),
        ],
    );
    applied(&site, "m1-0000000002.q");
    assert!(url_row(&db, "http://old.test/2").is_some());
    assert!(url_row(&db, "http://new.test/2").is_none());
    daemon.stop();
}

#[test]
fn a_bad_exclusion_file_stops_the_start_naming_its_file_and_line() {
    let db = TestDb::new();
    let site = site(&db, free_port(), "domain a.test\n\npattern ***\n");
    let file = site.root().join("exclude.conf");
    let why = format!(
        "Url.ExcludeFile: {}:3: pattern \"***\": a pattern of stars only would exclude every URL",
        file.display()
    );
    let out = check_config(env!("CARGO_BIN_EXE_yacobot"), &site.config, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains(&why), "{stderr}");
    let out = site.command().output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains(&why), "{stderr}");

    std::fs::remove_file(&file).unwrap();
    let out = check_config(env!("CARGO_BIN_EXE_yacobot"), &site.config, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains(&format!("Url.ExcludeFile: {}: cannot read", file.display())),
        "{stderr}"
    );
    site.rules("host b.test:8080 # fine\n");
    let out = check_config(env!("CARGO_BIN_EXE_yacobot"), &site.config, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
