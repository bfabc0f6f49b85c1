//! Withdrawals for the resources tests (docs/formats.md "Withdrawing a resource"): a fed
//! resource, what its withdrawal must have emitted, and the locks that stop a withdrawal at a
//! chosen row.

use std::collections::{BTreeSet, HashMap};

use diesel::connection::SimpleConnection;
use diesel::mysql::MysqlConnection;
use diesel::RunQueryDsl;
use focuser_formats::segment::Status;
use focuser_schema::models::{DataStatus, VrData};
use focuser_tests::web::WebServer;
use focuser_tests::TestDb;

use super::feeds::{items, live, resource, serve_feed, serve_sitemap};
use super::{number, ArchivedItem, Site};

/// The doc ids of the resource's live rows.
pub fn live_docs(c: &mut MysqlConnection, id: u32) -> BTreeSet<String> {
    VrData::for_resource(c, id)
        .unwrap()
        .into_iter()
        .filter(|d| d.data_status == DataStatus::Live)
        .map(|d| d.doc_id)
        .collect()
}

/// `items` are all `DELETE` items, one for each of `docs`, none twice.
pub fn assert_one_delete_each(items: &[ArchivedItem], docs: &BTreeSet<String>) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for it in items {
        assert_eq!(it.status, Status::Delete, "{it:?}");
        assert!(it.content.is_empty(), "{it:?}");
        *seen.entry(&it.doc_id).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "DELETE items emitted twice: {twice:?}");
    let got: BTreeSet<String> = seen.keys().map(|d| d.to_string()).collect();
    assert_eq!(&got, docs, "not one DELETE item per live item");
}

pub fn pending(db: &TestDb, id: u32) -> i64 {
    number(
        db,
        &format!("SELECT COUNT(*) AS n FROM vr_data WHERE res_id = {id} AND status = 0"),
    )
}

/// A resource `name` of `n` items (keys `prefix0..`) on its own host, run once.
pub fn fed(db: &TestDb, server: &WebServer, site: &Site, name: &str, n: usize) -> u32 {
    let c = &mut db.conn();
    let host = format!("{name}.test");
    let sitemap = serve_sitemap(server, &host, &["/feed.xml"]);
    serve_feed(server, &host, "/feed.xml", &items(name, n));
    let id = resource(c, name, &[("partner", sitemap)]);
    site.once();
    assert_eq!(live(c, id).len(), n, "{}", site.log());
    id
}

/// Whether a statement of yacobot starting with `sql` is running (waiting on a lock the test
/// holds: the others take a moment).
pub fn running(db: &TestDb, sql: &str) -> bool {
    number(
        db,
        &format!(
            "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE db = '{}' AND info LIKE '{sql}%'",
            db.name()
        ),
    ) > 0
}

/// The id of the `n`th `vr_data` row of resource `id`.
pub fn nth_row(db: &TestDb, id: u32, n: usize) -> i64 {
    number(
        db,
        &format!(
            "SELECT CAST(id AS SIGNED) AS n FROM vr_data WHERE res_id = {id} ORDER BY id LIMIT 1 OFFSET {}",
            n - 1
        ),
    )
}

/// Holds `vr_data` row `row` locked: a withdrawal a row a batch (in id order) stops there.
pub fn hold_row(db: &TestDb, row: i64) -> MysqlConnection {
    let mut c = db.conn();
    c.batch_execute("BEGIN").unwrap();
    diesel::sql_query(format!(
        "UPDATE vr_data SET valid_info = valid_info WHERE id = {row}"
    ))
    .execute(&mut c)
    .unwrap();
    c
}
