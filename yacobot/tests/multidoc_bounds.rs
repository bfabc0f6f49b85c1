//! The multidoc worker's template evidence stays bounded, through the real binary: a domain
//! over `MultiDoc.MaxFingerprints` loses its least seen fingerprints (the template's stay),
//! and evidence not seen for `MultiDoc.ExpireDays` is forgotten: fingerprints, then domains.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::multidoc::{
    domain_key, domains, fingerprint_rows, fingerprints, page, shared_fingerprints,
};
use common::{due_url, sql, Site};
use focuser_multidoc::analyze::analyze;
use focuser_tests::{free_port, metric, wait_for, TestDb};

const PAGES: usize = 30;
const CAP: usize = 40;

#[test]
fn multidoc_evidence_is_capped_per_domain_and_ages() {
    let db = TestDb::new();
    let port = free_port();
    let site = Site::new(
        db.url(),
        &format!(
            "Loader.Enable = 0\nQargfilter.Enable = 0\nstatus_listen = {port}\n\
             MultiDoc.Enable = 1\nMultiDoc.Batch = 4\nMultiDoc.MaxFingerprints = {CAP}\n\
             MultiDoc.ExpireDays = 30\n"
        ),
    );
    for (host, n) in [("a.test", PAGES), ("old.test", 3)] {
        for i in 0..n {
            site.page(&format!("{host}/p/{i}.html"), &page(i).1);
            due_url(&db, &format!("http://{host}/p/{i}.html"), 1, 3);
        }
    }
    let daemon = site.spawn();
    wait_for("every page analysed", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_multidoc_pages_total") == Some((PAGES + 3) as f64)
    });

    // The cap: a.test's blocks, 4 of each page's own and the template's, kept under CAP.
    let mut seen = BTreeSet::new();
    for i in 0..PAGES {
        let a = analyze(page(i).1.as_bytes(), None, 1 << 20, None).unwrap();
        seen.extend(a.fingerprints);
    }
    assert!(seen.len() > 2 * CAP, "{}", seen.len());
    let kept = fingerprints(&db, "a.test");
    assert!(kept.len() <= CAP, "{} rows", kept.len());
    let shared = shared_fingerprints();
    for fp in &shared {
        let row = kept.iter().find(|f| f.fingerprint == *fp);
        assert_eq!(
            row.map(|f| f.pages),
            Some(PAGES as u32),
            "template kept: {fp}"
        );
    }
    let d = domains(&db);
    assert_eq!(d[0].domain, "a.test");
    assert_eq!(
        (d[0].pages, d[0].fingerprints as usize),
        (PAGES as u32, kept.len())
    );
    assert_eq!(
        metric(port, "focuser_yacobot_multidoc_fingerprints_capped_total"),
        Some((seen.len() - kept.len()) as f64)
    );
    let old = fingerprints(&db, "old.test");
    assert!(!old.is_empty() && old.len() <= CAP);
    daemon.stop();

    // Ageing: old.test not seen for 40 days, nor a.test's own blocks; the next start forgets them.
    sql(&db, "UPDATE multidoc_domain SET seen_on = UTC_DATE() - INTERVAL 40 DAY WHERE domain = 'old.test'");
    sql(
        &db,
        &format!(
            "UPDATE multidoc_fingerprint SET seen_on = UTC_DATE() - INTERVAL 40 DAY \
             WHERE domain_key = {} OR pages = 1",
            domain_key("old.test")
        ),
    );
    let expired = kept.iter().filter(|f| f.pages == 1).count() + old.len();
    assert!(expired > 0);
    let daemon = site.spawn();
    wait_for("the ageing", Duration::from_secs(30), || {
        metric(port, "focuser_yacobot_multidoc_domains_expired_total") == Some(1.0)
    });
    assert_eq!(
        metric(port, "focuser_yacobot_multidoc_fingerprints_expired_total"),
        Some(expired as f64)
    );
    let log = site.log();
    assert!(
        log.contains(&format!(
            "multidoc: forgot {expired} template fingerprints and 1 domains not seen since before"
        )),
        "{log}"
    );
    let left = domains(&db);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].domain, "a.test");
    let kept_now = fingerprints(&db, "a.test");
    assert!(kept_now.iter().all(|f| f.pages > 1), "{kept_now:?}");
    assert_eq!(fingerprint_rows(&db), kept_now.len() as i64);
    assert!(shared
        .iter()
        .all(|fp| kept_now.iter().any(|f| f.fingerprint == *fp)));

    // A page of the forgotten domain starts its evidence afresh.
    site.page("old.test/p/new.html", &page(7).1);
    due_url(&db, "http://old.test/p/new.html", 1, 3);
    wait_for("the new page", Duration::from_secs(60), || {
        metric(port, "focuser_yacobot_multidoc_pages_total") == Some(1.0)
    });
    let again = domains(&db);
    let old_again = again.iter().find(|d| d.domain == "old.test").unwrap();
    assert_eq!(old_again.pages, 1);
    assert!(fingerprints(&db, "old.test").iter().all(|f| f.pages == 1));
    daemon.stop();
}
