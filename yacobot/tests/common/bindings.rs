//! What the bindings tests share: a site of pages under one template (a menu and a footer),
//! dictionary files, the `dict` and `bindings` commands, the binding rows and the bindings
//! store read back.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Output;
use std::time::Duration;

use diesel::prelude::*;
use focuser_bind::adserver::Item;
use focuser_bind::PageBinding;
use focuser_schema::models::BindingPage;
use focuser_schema::schema::binding_page;
use focuser_tests::TestDb;

use super::{archive_items, due_url, ArchivedItem, Site};

/// The yacobot config of a node that crawls, analyses and binds (the mirror backend).
pub const BINDING: &str = "Loader.Enable = 0\nQargfilter.Enable = 0\nMultiDoc.Enable = 1\n\
                           Bindings.Enable = 1\nMultiDoc.Batch = 5\n";

/// A calm English article about phones, page `i`'s own (its paragraphs carry a word of
/// their own, so that the templater does not take them for the site's template).
pub fn phones(i: usize) -> String {
    let w = super::multidoc::word(i);
    format!(
        "<p>Our review of the new {w} smartphone. The phone case keeps the screen \
         safe, and wireless charging works with every phone case we tried. Battery life is \
         long, the camera of the {w} takes sharp photos in daylight.</p>\n\
         <p>Buy a phone case with a strap if you travel with the {w}; wireless charging pads \
         are cheap now. We compared prices in several shops and found the best deals online.</p>"
    )
}

/// A tragic English article.
pub const TRAGIC_EN: &str = "<p>At least forty people were killed and dozens injured when a \
    powerful earthquake struck the region overnight. Rescue teams are searching the rubble for \
    survivors; the death toll is expected to rise. Hospitals are overwhelmed with wounded \
    victims, and officials declared a state of emergency after the deadly disaster. Many \
    bodies were recovered from collapsed buildings.</p>";

/// A tragic Russian article.
pub const TRAGIC_RU: &str = "<p>В результате теракта в центре города погибли двадцать человек, \
    ещё сорок ранены. Взрыв произошёл утром. Спасатели разбирают завалы, число погибших может \
    вырасти. Власти объявили траур по жертвам трагедии. Раненых доставили в больницы, \
    возбуждено уголовное дело о терроризме.</p>";

/// A page of the shop's site: a menu (which names a phrase too) and a footer around `body`.
pub fn html(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>\n\
         <nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/cases\">Phone case shop</a></li>\
         <li><a href=\"/about\">About us</a></li></ul></nav>\n<main><h1>{title}</h1>\n{body}</main>\n\
         <footer><p>Copyright Example Shop Ltd. All rights reserved.</p></footer></body></html>\n"
    )
}

/// A direct dictionary file's text with `lines` (`phrase \t advertisers`).
pub fn direct(lines: &[(&str, u32)]) -> String {
    let mut s = String::from("#focuser-dictionary 1 kind=direct\n");
    for (p, a) in lines {
        s.push_str(&format!("{p}\t{a}\n"));
    }
    s
}

/// The first direct dictionary of the tests.
pub fn direct_v1() -> String {
    direct(&[
        ("phone case", 12),
        ("wireless charging", 5),
        ("battery life", 3),
        ("earthquake insurance", 4),
        ("страхование от теракта", 2),
    ])
}

/// `yacobot dict ARGS` for `site`.
pub fn dict(site: &Site, args: &[&str]) -> Output {
    focuser_tests::output_within(
        site.command().arg("dict").args(args),
        Duration::from_secs(60),
    )
}

/// Writes `text` as `name` in the site's root and loads it as a `kind` dictionary; stdout.
pub fn load(site: &Site, kind: &str, name: &str, text: &[u8]) -> String {
    let path = site.root().join(name);
    std::fs::write(&path, text).unwrap();
    let out = dict(site, &["load", kind, path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "dict load {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `yacobot bindings URL`.
pub fn show(site: &Site, url: &str) -> Output {
    focuser_tests::output_within(
        site.command().arg("bindings").arg(url),
        Duration::from_secs(60),
    )
}

/// Puts the pages in the mirror and their URLs due; returns the URLs.
pub fn serve(db: &TestDb, site: &Site, pages: &[(String, String)]) -> Vec<String> {
    pages
        .iter()
        .map(|(path, content)| {
            site.page(path, content);
            let url = format!("http://{path}");
            due_url(db, &url, 1, 3);
            url
        })
        .collect()
}

/// Every URL's binding row, by URL id.
pub fn rows(db: &TestDb) -> BTreeMap<u64, BindingPage> {
    binding_page::table
        .select(BindingPage::as_select())
        .load(&mut db.conn())
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r))
        .collect()
}

/// A row's binding, parsed.
pub fn parsed(row: &BindingPage) -> PageBinding {
    match Item::parse(row.item.as_bytes()).unwrap() {
        Item::Binding(b) => b,
        other => panic!("not a binding: {other:?}"),
    }
}

/// The bindings store's items, in order.
pub fn shipped(site: &Site) -> Vec<ArchivedItem> {
    let dir = site.root().join("bindings");
    if !dir.is_dir() {
        return Vec::new();
    }
    archive_items(&dir)
}

/// The phrases of a binding's direct type.
pub fn direct_phrases(b: &PageBinding) -> Vec<String> {
    b.binding(focuser_bind::Kind::Direct)
        .map(|t| t.phrases.iter().map(|p| p.text.clone()).collect())
        .unwrap_or_default()
}
