//! The archive on a disk that fills up (a tmpfs the test mounts: it runs as root, as CI
//! does), through the real binary: the crawl stops with the error, books no page whose item
//! a failed write took back, and leaves the archive whole; once there is room the next run
//! crawls the rest, and every booked page's archived copy is where `url` says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{due_url, number, url_row, Site};
use focuser_formats::segment::SegmentIndex;
use focuser_formats::urls;
use focuser_tests::tmpfs::Tmpfs;
use focuser_tests::TestDb;

const PAGES: usize = 60;

fn page(i: usize) -> String {
    format!("page {i} ").repeat(1000)
}

/// Every URL booked with an archived copy: the copy at its position is that page.
fn booked_copies_are_there(db: &TestDb, archive: &std::path::Path) -> usize {
    let mut booked = 0;
    for i in 0..PAGES {
        let row = url_row(db, &format!("http://a.ru/{i}")).unwrap();
        let (Some(file), Some(idx)) = (row.archive_file, row.archive_item) else {
            continue;
        };
        let seg = SegmentIndex::open(archive, file).unwrap().unwrap();
        let stored = seg
            .read(idx)
            .unwrap_or_else(|e| panic!("page {i} booked at {file}:{idx}: {e}"));
        assert_eq!(stored.item.doc_id, urls::doc_id(row.id).as_bytes());
        assert_eq!(stored.item.content, page(i).as_bytes(), "page {i}");
        booked += 1;
    }
    booked
}

#[test]
fn a_full_archive_books_nothing_it_lost_and_the_next_run_goes_on() {
    let db = TestDb::new();
    let fs = Tmpfs::mount("256k");
    let archive = fs.path().join("segments");
    // One page at a time, ten claimed together, booked ten at a time, synced every third:
    // the disk fills while pages appended since the last sync wait to be booked.
    let site = Site::new(
        db.url(),
        &format!(
            "Loader.Enable = 0\nQargfilter.Enable = 0\nArchive.Dir = {}\n\
             Fetch.Connections = 1\nCrawl.ClaimBatch = 10\nCrawl.BookBatch = 10\n\
             Crawl.BookMs = 600000\nSegment.SyncEvery = 3\nSegment.SyncMs = 600000\n",
            archive.display()
        ),
    );
    for i in 0..PAGES {
        site.page(&format!("a.ru/{i}"), &page(i));
        due_url(&db, &format!("http://a.ru/{i}"), 1, 1);
    }
    let out = site.command().arg("--once").output().unwrap();
    assert!(!out.status.success(), "the archive never filled");
    let log = site.log();
    assert!(log.contains("No space left on device"), "{log}");
    let first = booked_copies_are_there(&db, &archive);
    assert!(first > 0 && first < PAGES, "{first} booked");
    let claimed = "SELECT COUNT(*) AS n FROM url WHERE claimed_by IS NOT NULL";
    assert_eq!(number(&db, claimed), 0, "claims given back");
    fs.resize("8m");
    site.once();
    assert_eq!(booked_copies_are_there(&db, &archive), PAGES);
    // The failed write was undone at once: the next start had no torn tail to cut.
    let log = site.log();
    assert!(!log.contains("recovered segment"), "{log}");
    // And the whole archive reads back without damage.
    let all = common::archive_items(&archive);
    assert!(all.len() >= PAGES);
}
