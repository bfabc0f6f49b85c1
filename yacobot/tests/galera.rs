//! yacobot on a Galera cluster (scripts/cluster.sh): two crawlers of one node database, both
//! given the nodes in the same order so that they write through one node (docs/operations.md,
//! "Several database addresses"), that node killed in the middle of the crawl. Runs in the
//! one-at-a-time `galera` group of .config/nextest.toml and leaves the cluster Synced.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{ArchivedItem, Site};
use diesel::{Connection, RunQueryDsl};
use focuser_formats::urls;
use focuser_tests::{wait_for, Cluster, TestDb};

const CRAWL_ONLY: &str = "Loader.Enable = 0\nQargfilter.Enable = 0\n";

/// One number from SQL on cluster node `n` (counted from 1).
fn number_on(db: &TestDb, n: usize, query: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut c = focuser_schema::db::connect(&db.urls()[n - 1]).unwrap();
    diesel::sql_query(query).get_result::<N>(&mut c).unwrap().n
}

/// `n` due URLs on seven hosts, their pages in `mirror`, in one transaction.
fn due_urls(db: &TestDb, mirror: &std::path::Path, n: u32) {
    let now = chrono::Utc::now().naive_utc() - chrono::TimeDelta::seconds(5);
    let mut c = db.conn();
    c.transaction::<_, diesel::result::Error, _>(|c| {
        for i in 0..n {
            let url = format!("http://s{}.ru/{i}", i % 7);
            let p = mirror.join(format!("s{}.ru/{i}", i % 7));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, format!("page {i}")).unwrap();
            let u = urls::normalize(&url, urls::MAX_URL_LENGTH).unwrap();
            focuser_schema::models::NewUrl {
                id: u.id,
                url: &u.url,
                domain: &u.domain,
                path_hash: urls::path_hash(&u.url),
                hits: 1,
                download_prio: u64::from(1 + i % 5),
                updatetag: "",
                first_seen: now,
                last_hit: now,
                next_indexed: now,
            }
            .insert(c)?;
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn crawlers_whose_node_is_killed_mid_crawl_fetch_each_url_once_and_book_it() {
    let cluster = Cluster::get();
    let _healed = cluster.healed_after();
    let db = TestDb::on_cluster(&cluster);
    let urls = db.urls();
    let mirror = tempfile::tempdir().unwrap();
    let n = 1000;
    due_urls(&db, mirror.path(), n);
    let extra = format!(
        "{CRAWL_ONLY}Crawl.ClaimBatch = 1\nFetch.Connections = 1\nCrawl.ClaimTtl = 10\n\
         Fetch.MirrorDir = {}\n",
        mirror.path().display()
    );
    // Both work on node 1, then on node 2.
    let list = format!("{},{}", urls[0], urls[1]);
    let a = Site::new(&list, &extra);
    let b = Site::new(&list, &extra);
    let (da, db_) = (a.spawn(), b.spawn());
    let fetched = "SELECT COUNT(*) AS n FROM url WHERE hits = 0";
    wait_for("the crawl is under way", Duration::from_secs(60), || {
        number_on(&db, 3, fetched) >= 100
    });
    cluster.script("kill", 1);
    let left = i64::from(n) - number_on(&db, 3, fetched);
    assert!(left > 0, "the crawl was over before the node was killed");
    wait_for(
        "every URL fetched and booked",
        Duration::from_secs(60),
        || {
            number_on(
                &db,
                3,
                "SELECT COUNT(*) AS n FROM url WHERE hits > 0 OR claimed_by IS NOT NULL",
            ) == 0
        },
    );
    for (d, s) in [(da, &a), (db_, &b)] {
        let mut d = d;
        d.signal(nix::sys::signal::Signal::SIGTERM);
        let status = d.child.wait().unwrap();
        assert!(status.success(), "{status:?}\n{}", s.log());
    }
    assert!(
        a.log().contains("database: moved from address 1 ("),
        "{}",
        a.log()
    );
    let ids = |s: &Site| -> Vec<String> {
        s.archive()
            .into_iter()
            .map(|i: ArchivedItem| i.doc_id)
            .collect()
    };
    let (ia, ib) = (ids(&a), ids(&b));
    let all: BTreeSet<&String> = ia.iter().chain(&ib).collect();
    assert!(!ia.is_empty() && !ib.is_empty(), "both crawled");
    assert_eq!(all.len(), ia.len() + ib.len(), "a URL was fetched twice");
    assert_eq!(all.len(), n as usize, "a URL was not fetched");
    assert_eq!(
        number_on(
            &db,
            2,
            "SELECT COUNT(*) AS n FROM url WHERE fetch_state = 2 AND archive_item IS NOT NULL"
        ),
        i64::from(n),
        "every fetch booked"
    );
}
