//! The archive's own retention, through the real yacobot and a real reader shipping the
//! archive to a real receiver: yacobot publishes a floor (`<Archive.Dir>/retention.floor`)
//! and the reader deletes only below it, so a URL due again is still re-indexed from its
//! archived copy after the reader has shipped it; and a URL due because its updatetag
//! changed is downloaded, never re-indexed from a stale copy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::reader::{self, Reader};
use common::{archive_items, due_url, record, sql, url_row, Site};
use diesel::RunQueryDsl;
use focuser_formats::segment::Status;
use focuser_formats::segment::{item_path, list_segments, read_position, Position};
use focuser_tests::{wait_for, TestDb};

const CRAWL_ONLY: &str = "Loader.Enable = 0\nQargfilter.Enable = 0\n";

/// Makes segment `id` of `dir` look written `days` ago.
fn age(dir: &Path, id: u64, days: u64) {
    let f = std::fs::File::options()
        .append(true)
        .open(item_path(dir, id))
        .unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(days * 86_400))
        .unwrap();
}

/// A receiver and a sender of the archive with the archive's floor file.
fn readers(site: &Site) -> (Reader, Reader) {
    let floor = site.root().join("segments/retention.floor");
    reader::pair(
        site.root(),
        "index",
        "yb1",
        "segments",
        &format!(
            "Store.CheckInterval = 1\nStore.FloorFile = {}\n",
            floor.display()
        ),
    )
}

#[test]
fn a_url_due_again_is_reindexed_from_its_archived_copy_after_the_reader_shipped_it() {
    let db = TestDb::new();
    // One page a segment; copies are kept for 10 days (the largest steady_level).
    let site = Site::new(
        db.url(),
        &format!("{CRAWL_ONLY}Segment.MaxItems = 1\nUrl.SteadyMax = 10\n"),
    );
    let urls = ["http://k.ru/1", "http://k.ru/2", "http://k.ru/3"];
    for (i, u) in urls.iter().enumerate() {
        site.page(&format!("k.ru/{}", i + 1), &format!("first copy {}", i + 1));
        due_url(&db, u, 1, 10 - i as u64);
    }
    site.once();
    let store = site.root().join("segments");
    let sealed = list_segments(&store).unwrap();
    assert!(sealed.len() >= 3, "{sealed:?}");
    let floor = || read_position(&store.join("retention.floor")).unwrap();
    assert_eq!(
        floor(),
        Some(Position {
            file_id: 1,
            item_idx: 1
        }),
        "all young: all kept"
    );
    let (_recv, _send) = readers(&site);
    let received = site.root().join("index/received");
    wait_for("the archive shipped", Duration::from_secs(60), || {
        received.is_dir() && archive_items(&received).len() == 3
    });
    // Segment 1 is old now; the second page is due again a day after its download, and
    // changed on the site meanwhile.
    age(&store, 1, 20);
    site.page("k.ru/2", "changed on the site");
    sql(
        &db,
        "UPDATE url SET hits = 4, download_prio = 4, next_indexed = UTC_TIMESTAMP(), steady_level = 5, \
         last_downloaded = UTC_TIMESTAMP() - INTERVAL 1 DAY WHERE url = 'http://k.ru/2'",
    );
    site.once();
    assert_eq!(floor().map(|p| p.file_id), Some(2));
    wait_for("segment 1 to go", Duration::from_secs(30), || {
        list_segments(&store).unwrap().first() == Some(&2)
    });
    let items = site.archive();
    let last = items.last().unwrap();
    assert_eq!(
        (last.url.as_str(), last.content.as_str()),
        ("http://k.ru/2", "first copy 2"),
        "re-indexed from the archive"
    );
    assert!(site
        .log()
        .contains("0 pages fetched, 1 re-indexed from the archive"));
    wait_for(
        "the re-indexed copy shipped",
        Duration::from_secs(30),
        || archive_items(&received).len() == 4,
    );
    // Shipped everywhere, yet kept: younger than the floor.
    assert_eq!(list_segments(&store).unwrap()[..2], [2, 3]);
    let row = url_row(&db, "http://k.ru/2").unwrap();
    assert!(
        row.last_downloaded < row.last_indexed,
        "not downloaded again"
    );
}

#[test]
fn a_url_due_because_its_updatetag_changed_is_downloaded() {
    let db = TestDb::new();
    let site = Site::new(db.url(), "Qargfilter.Enable = 0\n");
    let url = "http://t.ru/";
    site.page("t.ru/index.html", "old content");
    site.queue("m1-0000000001.q", &[record(url, 3, "v1")]);
    site.once();
    site.once();
    assert_eq!(site.archive().len(), 1);
    // Downloaded a day ago, steady for 5 days: due again now it would come from the archive.
    let recent =
        "UPDATE url SET steady_level = 5, last_downloaded = UTC_TIMESTAMP() - INTERVAL 1 DAY";
    sql(&db, recent);
    site.page("t.ru/index.html", "new content");
    // A new updatetag: the page changed; it is downloaded.
    site.queue("m1-0000000002.q", &[record(url, 1, "v2")]);
    site.once();
    site.once();
    let items = site.archive();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1].content, "new content", "downloaded");
    let row = url_row(&db, url).unwrap();
    assert_eq!(row.updatetag, "v2");
    assert!(
        row.archive_file.is_some(),
        "its new copy is where it is re-indexed from"
    );
}

/// A site whose copies are kept by compaction alone: `Archive.KeepBytes = 1` lets every sealed
/// segment go; two pages downloaded, each in a segment of its own, steady for 5 days.
fn compacting(db: &TestDb) -> Site {
    let site = Site::new(
        db.url(),
        &format!("{CRAWL_ONLY}Segment.MaxItems = 1\nUrl.SteadyMax = 10\nArchive.KeepBytes = 1\n"),
    );
    for i in 1..=2 {
        site.page(&format!("c.ru/{i}"), &format!("only copy {i}"));
        due_url(db, &format!("http://c.ru/{i}"), 1, 10 - i);
    }
    // The first download leaves steady_level alone: both may be re-indexed from the archive.
    sql(db, "UPDATE url SET steady_level = 5");
    site.once();
    site
}

fn keeps(site: &Site) -> usize {
    let items = site.archive();
    items.iter().filter(|i| i.status == Status::Keep).count()
}

/// Makes `url` due again a day after its download, changed on the site meanwhile.
fn due_again(db: &TestDb, site: &Site, url: &str) {
    site.page(&url["http://".len()..], "changed on the site");
    sql(
        db,
        &format!(
            "UPDATE url SET hits = 4, download_prio = 4, next_indexed = UTC_TIMESTAMP(), \
             last_downloaded = UTC_TIMESTAMP() - INTERVAL 1 DAY WHERE url = '{url}'"
        ),
    );
}

#[test]
fn compaction_keeps_the_only_copy_past_the_size_cap_without_shipping_it_again() {
    let db = TestDb::new();
    let site = compacting(&db);
    let store = site.root().join("segments");
    let floor = read_position(&store.join("retention.floor"))
        .unwrap()
        .unwrap();
    let row = url_row(&db, "http://c.ru/1").unwrap();
    assert!(
        row.archive_file.unwrap() >= floor.file_id,
        "its copy moved above the floor"
    );
    assert!(keeps(&site) >= 1, "{:?}", site.archive());
    let (_recv, _send) = readers(&site);
    let received = site.root().join("index/received");
    wait_for("the old segments to go", Duration::from_secs(60), || {
        list_segments(&store).unwrap().first() == Some(&floor.file_id)
    });
    assert!(
        !site
            .archive()
            .iter()
            .any(|i| i.status == Status::Update && i.url == "http://c.ru/1"),
        "the downloaded copy's segment is gone"
    );
    due_again(&db, &site, "http://c.ru/1");
    site.once();
    let items = site.archive();
    let last = items.iter().rfind(|i| i.status == Status::Update).unwrap();
    assert_eq!(
        (last.url.as_str(), last.content.as_str()),
        ("http://c.ru/1", "only copy 1"),
        "re-indexed from the moved copy"
    );
    assert!(site
        .log()
        .contains("0 pages fetched, 1 re-indexed from the archive"));
    // Senders ship in store order: the moved copies came before the re-indexed page, so
    // when it has arrived, any of them shipped would have too.
    wait_for(
        "the re-indexed page shipped",
        Duration::from_secs(60),
        || {
            received.is_dir()
                && archive_items(&received).iter().any(|i| {
                    i.content == "only copy 1"
                        && i.url == "http://c.ru/1"
                        && archive_items(&received).len() >= 3
                })
        },
    );
    let got = archive_items(&received);
    assert_eq!(got.len(), 3, "two downloads and one re-index: {got:?}");
    assert!(got.iter().all(|i| i.status == Status::Update));
}

#[test]
fn kill_9_during_compaction_loses_no_copy_and_the_floor_waits() {
    let db = TestDb::new();
    let site = compacting(&db);
    let store = site.root().join("segments");
    let floor_file = store.join("retention.floor");
    let before = read_position(&floor_file).unwrap().unwrap();
    let rows = || {
        ["http://c.ru/1", "http://c.ru/2"].map(|u| {
            let r = url_row(&db, u).unwrap();
            (r.archive_file.unwrap(), r.archive_item.unwrap())
        })
    };
    let booked = rows();
    assert!(
        booked
            .iter()
            .any(|&(f, _)| f < list_segments(&store).unwrap().last().copied().unwrap()),
        "a copy in a sealed segment, to be moved at the next start: {booked:?}"
    );
    // The copies' rows locked: the compaction copies, then waits to book the move.
    let mut lock = db.conn();
    diesel::sql_query("START TRANSACTION")
        .execute(&mut lock)
        .unwrap();
    diesel::sql_query("SELECT id FROM url FOR UPDATE")
        .execute(&mut lock)
        .unwrap();
    let kept = keeps(&site);
    let daemon = site.spawn();
    wait_for("the copies appended again", Duration::from_secs(60), || {
        keeps(&site) > kept
    });
    let mut daemon = daemon;
    daemon.child.kill().unwrap(); // SIGKILL
    daemon.child.wait().unwrap();
    diesel::sql_query("ROLLBACK").execute(&mut lock).unwrap();
    assert_eq!(rows(), booked, "the move was not booked");
    assert_eq!(
        read_position(&floor_file).unwrap().unwrap(),
        before,
        "the floor did not pass the unmoved copies"
    );
    site.once();
    let after = read_position(&floor_file).unwrap().unwrap();
    assert!(after.file_id > before.file_id, "{after:?} {before:?}");
    for (u, (f, _)) in ["http://c.ru/1", "http://c.ru/2"].iter().zip(rows()) {
        assert!(f >= after.file_id, "{u}: its copy moved above the floor");
    }
    due_again(&db, &site, "http://c.ru/2");
    site.once();
    let items = site.archive();
    let last = items.iter().rfind(|i| i.status == Status::Update).unwrap();
    assert_eq!(
        (last.url.as_str(), last.content.as_str()),
        ("http://c.ru/2", "only copy 2")
    );
}
