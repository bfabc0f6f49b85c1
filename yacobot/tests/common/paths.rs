//! Classes with a location field or full-hit fields for the tests of the feeds' remaining
//! paths (docs/formats.md "Update types", "Locations", "Multi-hit classes").

use diesel::mysql::MysqlConnection;
use focuser_schema::models::{
    DataFrom, GroupType, IndexType, NewOpenXmlFormat, NewVrOpenDatasource, NewVrResource,
    ResStatus, VrData,
};

/// Rules of `class`: `<item>` elements with a key `id`, a required `title`, a `location`
/// and a repeated `tag`; `title` and `tag` are full-hit fields.
pub fn located_rules(c: &mut MysqlConnection, class: u32) {
    for (label, key, required, fullhit) in [
        ("id", true, false, false),
        ("title", false, true, true),
        ("location", false, false, false),
        ("tag", false, false, true),
    ] {
        NewOpenXmlFormat {
            class_id: class,
            label_name: label,
            parent_label: "item",
            xpath: "",
            is_key: key,
            is_index: false,
            is_fullhit: fullhit,
            is_mark: false,
            is_required: required,
            index_type: IndexType::KEYWORD,
            group_type: GroupType::NONE,
        }
        .insert(c)
        .unwrap();
    }
}

/// A resource of `class` with one source, `data_from` and `priority` as given.
pub fn resource_of(
    c: &mut MysqlConnection,
    class: u32,
    name: &str,
    sitemap: &str,
    data_from: DataFrom,
    priority: i32,
) -> u32 {
    let r = NewVrResource {
        class_id: class,
        res_name: name,
        data_group: "g",
        data_from,
        frequency: 0,
        is_manual: false,
        res_status: ResStatus::Enabled,
        priority,
        max_items: 0,
    }
    .insert(c)
    .unwrap();
    NewVrOpenDatasource {
        res_id: r.id,
        name: "partner",
        priority: 100,
        sitemap_url: sitemap,
    }
    .insert(c)
    .unwrap();
    r.id
}

/// One item: key, title, location (`None`: no element), tags.
pub struct Placed<'a> {
    pub key: &'a str,
    pub title: &'a str,
    pub location: Option<&'a str>,
    pub tags: &'a [&'a str],
}

pub fn placed_xml(items: &[Placed<'_>]) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<items>\n");
    for it in items {
        s.push_str(&format!(
            "<item><id>{}</id><title>{}</title>",
            it.key, it.title
        ));
        if let Some(l) = it.location {
            s.push_str(&format!("<location>{l}</location>"));
        }
        for t in it.tags {
            s.push_str(&format!("<tag>{t}</tag>"));
        }
        s.push_str("</item>\n");
    }
    s.push_str("</items>\n");
    s
}

/// The row of `key`.
pub fn row(c: &mut MysqlConnection, id: u32, key: &str) -> VrData {
    VrData::find_by_keyword(c, id, key).unwrap()
}
