//! What the multidoc worker's tests share: generated sites whose pages share a menu and a
//! footer, the worker's tables read back, and its figures.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use diesel::prelude::*;
use focuser_formats::urls;
use focuser_multidoc::analyze::analyze;
use focuser_schema::models::{MultidocDomain, MultidocFingerprint, MultidocPage};
use focuser_schema::schema::{multidoc_domain, multidoc_fingerprint, multidoc_page};
use focuser_tests::TestDb;

use super::tools::documents;

/// The menu and footer every page of a site shows.
pub const MENU: [&str; 5] = ["Home", "News", "Products", "About us", "Contact"];
pub const FOOTER: &str = "Copyright Example Publishing Ltd. All rights reserved.";

/// A word of page `i` alone. (Not a number: a block's fingerprint reads every digit as `0`.)
pub fn word(i: usize) -> String {
    let letter = |n: usize| char::from(b'a' + (n % 26) as u8);
    format!("zq{}{}{}", letter(i / 676), letter(i / 26), letter(i))
}

/// Page `i` of a site: the shared menu and footer around a title and three paragraphs of one
/// category of the tools' corpus (its label is returned with it), each with a word of its own.
pub fn page(i: usize) -> (&'static str, String) {
    let docs = documents();
    let (label, _) = docs[i % docs.len()];
    let own: Vec<&String> = docs
        .iter()
        .filter(|(l, _)| *l == label)
        .map(|(_, d)| d)
        .collect();
    let paragraphs: String = (0..3)
        .map(|k| {
            format!(
                "<p>{} Item {} {}.</p>\n",
                own[(i + k * 7) % own.len()],
                word(i),
                word(k)
            )
        })
        .collect();
    let menu: String = MENU
        .iter()
        .map(|m| format!("<li><a href=\"/{m}\">{m}</a></li>"))
        .collect();
    let html = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Page {w}</title></head><body>\n\
         <nav><ul>{menu}</ul></nav>\n<main><h1>Article {w}</h1>\n{paragraphs}</main>\n\
         <footer><p>{FOOTER}</p></footer></body></html>\n",
        w = word(i)
    );
    (label, html)
}

/// The fingerprints of page 0's blocks that every page of the site shows (the menu's and the
/// footer's), found by analysing two pages as the worker does.
pub fn shared_fingerprints() -> Vec<u64> {
    let a = analyze(page(0).1.as_bytes(), None, 1 << 20, None).unwrap();
    let b = analyze(page(1).1.as_bytes(), None, 1 << 20, None).unwrap();
    let mut shared: Vec<u64> = a
        .fingerprints
        .iter()
        .copied()
        .filter(|f| b.fingerprints.contains(f))
        .collect();
    shared.sort_unstable();
    shared.dedup();
    shared
}

pub fn domain_key(domain: &str) -> u64 {
    focuser_yacobot::multidoc::domain_key(domain)
}

pub fn pages(db: &TestDb) -> Vec<MultidocPage> {
    multidoc_page::table
        .order((multidoc_page::archive_file, multidoc_page::archive_item))
        .select(MultidocPage::as_select())
        .load(&mut db.conn())
        .unwrap()
}

/// Each URL's row, by URL id.
pub fn pages_by_id(db: &TestDb) -> BTreeMap<u64, MultidocPage> {
    pages(db).into_iter().map(|p| (p.id, p)).collect()
}

pub fn page_count(db: &TestDb) -> i64 {
    multidoc_page::table
        .count()
        .get_result(&mut db.conn())
        .unwrap()
}

pub fn domains(db: &TestDb) -> Vec<MultidocDomain> {
    multidoc_domain::table
        .order(multidoc_domain::domain)
        .select(MultidocDomain::as_select())
        .load(&mut db.conn())
        .unwrap()
}

pub fn fingerprints(db: &TestDb, domain: &str) -> Vec<MultidocFingerprint> {
    MultidocFingerprint::of_domain(&mut db.conn(), domain_key(domain)).unwrap()
}

pub fn fingerprint_rows(db: &TestDb) -> i64 {
    multidoc_fingerprint::table
        .count()
        .get_result(&mut db.conn())
        .unwrap()
}

/// The URL id of `url` (normalised as the crawler stores it).
pub fn id_of(url: &str) -> u64 {
    urls::normalize(url, urls::MAX_URL_LENGTH).unwrap().id
}

/// `yacobot multidoc ARGS` for `site`; its stdout, which must say it succeeded.
pub fn multidoc_cmd(site: &super::Site, args: &[&str]) -> String {
    let out = focuser_tests::output_within(
        site.command().arg("multidoc").args(args),
        std::time::Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "yacobot multidoc {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
