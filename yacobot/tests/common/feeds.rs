//! Partner feeds for the resources tests: a class's rules, resources with data sources, XML
//! feeds and sitemaps served by the test HTTP server, and what a run left behind.

use diesel::mysql::MysqlConnection;
use focuser_formats::segment::Status;
use focuser_schema::models::{
    DataFrom, DataStatus, EmitStatus, GroupType, IndexType, NewOpenXmlFormat, NewVrOpenDatasource,
    NewVrResource, ResStatus, VrData, VrResource, VrResourceChanges,
};
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

use super::{archive_items, ArchivedItem, Site};

pub const CLASS: u32 = 7;

/// The resources worker alone, fetching from `server` (every name resolved to it).
pub fn site(db: &TestDb, server: &WebServer, extra: &str) -> Site {
    server.set("*", "/robots.txt", Behaviour::status(404));
    let delay = if extra.contains("Fetch.HostDelay") {
        ""
    } else {
        "Fetch.HostDelay = 0\n"
    };
    Site::with(
        db.url(),
        &format!(
            "Loader.Enable = 0\nCrawl.Enable = 0\nQargfilter.Enable = 0\nResources.Enable = 1\n\
             Resources.ScanInterval = 1\nFetch.Resolve = {}\nFetch.AllowPrivate = 127.0.0.1\nFetch.ConnectTimeout = 2\n\
             Fetch.Timeout = 20\nFetch.RetryDelay = 0.1\n{delay}{extra}",
            server.resolve().join(" ")
        ),
    )
}

/// Rules of class [`CLASS`]: `<item>` elements with a key `id`, a required `title`, a
/// `price`.
pub fn rules(c: &mut MysqlConnection) {
    for (label, key, required) in [
        ("id", true, false),
        ("title", false, true),
        ("price", false, false),
    ] {
        NewOpenXmlFormat {
            class_id: CLASS,
            label_name: label,
            parent_label: "item",
            xpath: "",
            is_key: key,
            is_index: label == "title",
            is_fullhit: false,
            is_mark: false,
            is_required: required,
            index_type: IndexType::KEYWORD,
            group_type: GroupType::NONE,
        }
        .insert(c)
        .unwrap();
    }
}

/// A resource of class [`CLASS`] with these (name, sitemap URL) sources, in priority order.
pub fn resource(c: &mut MysqlConnection, name: &str, sources: &[(&str, String)]) -> u32 {
    let r = NewVrResource {
        class_id: CLASS,
        res_name: name,
        data_group: "g",
        data_from: DataFrom::PARTNER_FEED,
        frequency: 0,
        is_manual: false,
        res_status: ResStatus::Enabled,
        priority: 0,
        max_items: 0,
    }
    .insert(c)
    .unwrap();
    for (i, (ds, url)) in sources.iter().enumerate() {
        NewVrOpenDatasource {
            res_id: r.id,
            name: ds,
            priority: 100 - i as i32,
            sitemap_url: url,
        }
        .insert(c)
        .unwrap();
    }
    r.id
}

/// Asks for a run (what `yacobot resource fetch-now` does).
pub fn ask(c: &mut MysqlConnection, id: u32) {
    VrResource::update(
        c,
        id,
        &VrResourceChanges {
            manual_update: Some(true),
            ..Default::default()
        },
    )
    .unwrap();
}

/// One item: key, title, price.
pub type It = (String, String, String);

pub fn items(prefix: &str, n: usize) -> Vec<It> {
    (0..n)
        .map(|i| {
            (
                format!("{prefix}{i}"),
                format!("Title {prefix} {i}"),
                format!("{}.99", i % 50),
            )
        })
        .collect()
}

pub fn feed_xml(items: &[It]) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<items>\n");
    for (k, t, p) in items {
        s.push_str(&format!(
            "<item><id>{k}</id><title>{t}</title><price>{p}</price></item>\n"
        ));
    }
    s.push_str("</items>\n");
    s
}

pub fn serve_feed(server: &WebServer, host: &str, path: &str, items: &[It]) {
    server.set(
        host,
        path,
        Behaviour::fixed(200, "application/xml", feed_xml(items)),
    );
}

pub fn serve_text(server: &WebServer, host: &str, path: &str, body: &str) {
    server.set(host, path, Behaviour::text(body));
}

/// Serves `host`'s `/sitemap.txt` listing `feeds` (paths on `host`), one a line; returns its URL.
pub fn serve_sitemap(server: &WebServer, host: &str, feeds: &[&str]) -> String {
    let list: Vec<String> = feeds.iter().map(|f| server.url(host, f)).collect();
    serve_text(server, host, "/sitemap.txt", &list.join("\n"));
    server.url(host, "/sitemap.txt")
}

/// `yacobot resource ARGS` as an operator types it: its exit code and what it printed
/// (stdout, then stderr).
pub fn resource_cmd(site: &Site, args: &[&str]) -> (i32, String) {
    let out = site.command().arg("resource").args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

pub fn resource_row(c: &mut MysqlConnection, id: u32) -> VrResource {
    VrResource::find(c, id).unwrap()
}

/// Live items as (keyword, md5), sorted.
pub fn live(c: &mut MysqlConnection, id: u32) -> Vec<(String, String)> {
    let mut v: Vec<_> = VrData::for_resource(c, id)
        .unwrap()
        .into_iter()
        .filter(|d| d.data_status == DataStatus::Live)
        .map(|d| (d.keyword, d.md5_sum))
        .collect();
    v.sort();
    v
}

pub fn store(site: &Site) -> Vec<ArchivedItem> {
    archive_items(&site.root().join("segments-vr"))
}

pub fn count(items: &[ArchivedItem], status: Status) -> usize {
    items.iter().filter(|i| i.status == status).count()
}

/// The store agrees with `vr_data`: every row's last item is its current state (an `UPDATE`
/// with its content for a live row, a `DELETE` for a deleted one), every change is marked
/// emitted, and no item follows an identical one of the same doc id (nothing emitted twice).
pub fn assert_consistent(c: &mut MysqlConnection, site: &Site, id: u32) {
    let items = store(site);
    let mut last: std::collections::HashMap<&str, &ArchivedItem> = Default::default();
    for it in &items {
        if let Some(prev) = last.get(it.doc_id.as_str()) {
            assert!(
                !(prev.status == it.status && prev.content == it.content),
                "emitted twice: {it:?}"
            );
        }
        last.insert(&it.doc_id, it);
    }
    let rows = VrData::for_resource(c, id).unwrap();
    for r in &rows {
        assert_eq!(r.status, EmitStatus::Emitted, "not marked emitted: {r:?}");
        let it = last
            .get(r.doc_id.as_str())
            .unwrap_or_else(|| panic!("never emitted: {r:?}"));
        if r.data_status == DataStatus::Live {
            assert_eq!(it.status, Status::Update, "{r:?}");
            assert_eq!(Some(&it.content), r.content.as_ref(), "{r:?}");
        } else {
            assert_eq!(it.status, Status::Delete, "{r:?}");
        }
    }
    assert_eq!(
        last.len(),
        rows.len(),
        "items of doc ids vr_data does not know"
    );
}
