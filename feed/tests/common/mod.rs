//! Helpers shared by the feed tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::ops::ControlFlow;

use focuser_feed::items::{
    extract, ExtractError, FailedKey, FieldRule, Limits, Outcome, Rules, Summary,
};

/// A rule: `label`, its xpath, and flags from letters: K key, R required, I index,
/// F full hit, M mark.
pub fn rule(label: &str, xpath: &str, flags: &str) -> FieldRule {
    FieldRule {
        label_name: label.into(),
        parent_label: String::new(),
        xpath: xpath.into(),
        is_key: flags.contains('K'),
        is_required: flags.contains('R'),
        is_index: flags.contains('I'),
        is_fullhit: flags.contains('F'),
        is_mark: flags.contains('M'),
        index_type: 0,
        group_type: 0,
    }
}

pub fn rules(parent: &str, fields: &[FieldRule]) -> Rules {
    let mut fields = fields.to_vec();
    fields[0].parent_label = parent.into();
    Rules::compile(&fields).unwrap()
}

/// The classic test class: `channel/item` with id (key), title (required), price, images.
pub fn shop_rules() -> Rules {
    rules(
        "channel/item",
        &[
            rule("id", "", "KI"),
            rule("title", "", "RIF"),
            rule("price", "g:price", "M"),
            rule("image", "images/img/@src", ""),
        ],
    )
}

#[derive(Debug, Default)]
pub struct Got {
    /// (key, md5, canonical)
    pub items: Vec<(String, String, String)>,
    pub failed: Vec<FailedKey>,
}

pub fn run_with(
    feed: &[u8],
    charset: Option<&str>,
    rules: &Rules,
    limits: &Limits,
) -> (Got, Result<Summary, ExtractError>) {
    let mut got = Got::default();
    let r = extract(feed, charset, rules, limits, |o| {
        match o {
            Outcome::Item(i) => got.items.push((
                i.key().to_string(),
                i.md5().to_string(),
                i.canonical().to_string(),
            )),
            Outcome::Failed(f) => got.failed.push(f.clone()),
        }
        ControlFlow::Continue(())
    });
    (got, r)
}

pub fn run(feed: &[u8], rules: &Rules) -> (Got, Result<Summary, ExtractError>) {
    run_with(feed, None, rules, &Limits::default())
}

/// A shop feed of `n` items, item `i` with id `k{i}`.
pub fn shop_feed(n: usize) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss xmlns:g=\"g\">\n<channel>\n<title>shop</title>\n");
    for i in 0..n {
        s.push_str(&format!(
            "<item>\n  <id>k{i}</id>\n  <title>Item &amp; number {i}</title>\n  <g:price>{}.99</g:price>\n  <images><img src=\"/i/{i}.jpg\"/><img src='/i/{i}b.jpg'/></images>\n</item>\n",
            i % 100
        ));
    }
    s + "</channel>\n</rss>\n"
}
