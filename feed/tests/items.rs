//! Items cut out of feeds: the rule language, failed keys, encodings, broken and truncated
//! XML, caps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::ops::ControlFlow;

use common::*;
use focuser_feed::encoding::EncodingError;
use focuser_feed::items::{extract, ErrorKind, FailReason, Limits, Outcome};

#[test]
fn a_shop_feed_gives_canonical_items() {
    let (got, r) = run(shop_feed(3).as_bytes(), &shop_rules());
    let s = r.unwrap();
    assert_eq!(
        (s.items, s.failed, s.capped, s.stopped),
        (3, 0, false, false)
    );
    assert_eq!(s.encoding, "UTF-8");
    assert_eq!(got.items.len(), 3);
    let (key, md5, canonical) = &got.items[1];
    assert_eq!(key, "k1");
    assert_eq!(
        canonical,
        r#"{"key":"k1","fields":[{"name":"id","flags":"KI","index_type":0,"group_type":0,"values":["k1"]},{"name":"title","flags":"RIF","index_type":0,"group_type":0,"values":["Item & number 1"]},{"name":"price","flags":"M","index_type":0,"group_type":0,"values":["1.99"]},{"name":"image","flags":"","index_type":0,"group_type":0,"values":["/i/1.jpg","/i/1b.jpg"]}]}"#
    );
    assert_eq!(md5, &md5_hex(canonical));
    // The canonical form is JSON.
    let v: serde_json::Value = serde_json::from_str(canonical).unwrap();
    assert_eq!(v["fields"][3]["values"][1], "/i/1b.jpg");
}

fn md5_hex(s: &str) -> String {
    use md5::{Digest, Md5};
    Md5::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn rule_language_paths_attributes_cdata_and_entities() {
    let rules = rules(
        "/feed/entry",
        &[
            rule("id", "@id", "K"),
            rule("text", ".", ""),
            rule("desc", "", ""),
            rule("bold", "desc/b", ""),
            rule("tag", "tags/tag", ""),
            rule("lang", "desc/@xml:lang", ""),
        ],
    );
    let feed = br#"<feed>
<entry id=" a&amp;1 "><desc xml:lang="zh">Hello <b>big</b>
   <![CDATA[<world> & co]]> &#x4e2d;&#25991; &nbsp;</desc><tags><tag>x</tag><tag/><tag> y </tag></tags></entry>
<other><entry id="nested-not-anchored"><desc>no</desc></entry></other>
<entry id="e2"/>
</feed>"#;
    let (got, r) = run(feed, &rules);
    assert_eq!(r.unwrap().items, 2, "{got:?}");
    let v: serde_json::Value = serde_json::from_str(&got.items[0].2).unwrap();
    let values = |i: usize| v["fields"][i]["values"].clone();
    assert_eq!(got.items[0].0, "a&1");
    assert_eq!(
        values(1),
        serde_json::json!(["Hello big <world> & co 中文 &nbsp;x y"])
    );
    assert_eq!(
        values(2),
        serde_json::json!(["Hello big <world> & co 中文 &nbsp;"])
    );
    assert_eq!(values(3), serde_json::json!(["big"]));
    assert_eq!(values(4), serde_json::json!(["x", "y"]));
    assert_eq!(values(5), serde_json::json!(["zh"]));
    assert_eq!(got.items[1].0, "e2");
}

#[test]
fn an_item_inside_an_item_is_content_and_items_match_by_path_suffix() {
    let rules = rules("item", &[rule("id", "", "K"), rule("sub", "item/id", "")]);
    let feed =
        b"<a><b><item><id>1</id><item><id>2</id></item></item></b><item><id>3</id></item></a>";
    let (got, r) = run(feed, &rules);
    assert_eq!(r.unwrap().items, 2);
    assert_eq!(got.items[0].0, "1");
    assert!(
        got.items[0].2.contains(r#""values":["2"]"#),
        "{}",
        got.items[0].2
    );
    assert_eq!(got.items[1].0, "3");
}

#[test]
fn failed_keys_say_why() {
    let limits = Limits {
        max_field_bytes: 40,
        max_item_bytes: 100,
        max_key_chars: 10,
        ..Limits::default()
    };
    let long = "x".repeat(50);
    let feed = format!(
        "<rss><channel>
<item><title>no id</title></item>
<item><id>  </id><title>blank id</title></item>
<item><id>k2</id></item>
<item><id>k3</id><title>{long}</title></item>
<item><id>k4</id><title>t</title><g:price>{p}</g:price><g:price>{p}</g:price><g:price>{p}</g:price></item>
<item><id>{long_key}</id><title>t</title></item>
<item><id>k6</id><title>ok</title></item>
</channel></rss>",
        p = "1".repeat(39),
        long_key = "y".repeat(20),
    );
    let (got, r) = run_with(feed.as_bytes(), None, &shop_rules(), &limits);
    let s = r.unwrap();
    assert_eq!((s.items, s.failed), (1, 6));
    assert_eq!(got.items[0].0, "k6");
    let reasons: Vec<_> = got
        .failed
        .iter()
        .map(|f| (f.number, f.key.clone(), f.reason.clone()))
        .collect();
    assert_eq!(
        reasons,
        [
            (1, None, FailReason::NoKey { label: "id".into() }),
            (2, None, FailReason::NoKey { label: "id".into() }),
            (
                3,
                Some("k2".into()),
                FailReason::MissingRequired {
                    label: "title".into()
                }
            ),
            (
                4,
                Some("k3".into()),
                FailReason::FieldTooLong {
                    label: "title".into(),
                    limit: 40
                }
            ),
            (
                5,
                Some("k4".into()),
                FailReason::ItemTooLarge { limit: 100 }
            ),
            (
                6,
                None,
                FailReason::KeyTooLong {
                    chars: 20,
                    limit: 10
                }
            ),
        ]
    );
    let shown: Vec<String> = got.failed.iter().map(ToString::to_string).collect();
    assert_eq!(shown[0], "item 1 (line 2): no key \"id\"");
    assert_eq!(shown[2], "k2: no \"title\" (required)");
    assert_eq!(shown[3], "k3: \"title\" longer than 40 bytes");
    assert_eq!(shown[5], "item 6 (line 7): key of 20 characters (limit 10)");
}

#[test]
fn a_gbk_feed_gives_utf8_items() {
    let text = "<?xml version=\"1.0\" encoding=\"GBK\"?>\n<rss><channel><item><id>编号1</id><title>中文标题：价格</title><g:price>１２</g:price></item></channel></rss>";
    let (gbk, _, unmappable) = encoding_rs::GBK.encode(text);
    assert!(!unmappable);
    assert!(std::str::from_utf8(&gbk).is_err(), "really not UTF-8");
    let (got, r) = run(&gbk, &shop_rules());
    assert_eq!(r.unwrap().encoding, "GBK");
    assert_eq!(got.items[0].0, "编号1");
    assert!(got.items[0].2.contains("中文标题：价格"));
    // The same items from the same text in UTF-8: the same MD5.
    let (utf8, _) = run(text.replace("GBK", "UTF-8").as_bytes(), &shop_rules());
    assert_eq!(utf8.items, got.items);
    // An HTTP charset of gb18030 reads GBK bytes too.
    let (got18030, r) = run_with(&gbk, Some("gb18030"), &shop_rules(), &Limits::default());
    assert_eq!(r.unwrap().encoding, "gb18030");
    assert_eq!(got18030.items, got.items);
}

#[test]
fn invalid_utf8_ends_the_feed_with_its_offset_after_the_items_before_it() {
    let mut feed = shop_feed(3).into_bytes();
    let at = shop_feed(3).find("k2").unwrap();
    feed[at] = 0xFF;
    let (got, r) = run(&feed, &shop_rules());
    let e = r.unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::Encoding(EncodingError::Malformed {
            encoding: "UTF-8",
            offset: at as u64
        })
    );
    assert_eq!((e.items, e.failed), (2, 0));
    assert_eq!(got.items.len(), 2);
    assert!(
        e.to_string().starts_with(&format!(
            "the bytes at offset {at} are not valid UTF-8 at line"
        )),
        "{e}"
    );
}

#[test]
fn broken_xml_says_where_and_how_many_items_came_before() {
    let feed = "<rss><channel>\n<item><id>1</id><title>a</title></item>\n<item><id>2</id><title>b</titel></item>\n</channel></rss>";
    let (got, r) = run(feed.as_bytes(), &shop_rules());
    let e = r.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Xml(_)), "{e:?}");
    assert_eq!((e.line, e.items), (3, 1));
    assert_eq!(got.items.len(), 1);
    let msg = e.to_string();
    assert!(
        msg.starts_with("the feed is not well-formed XML: "),
        "{msg}"
    );
    assert!(msg.contains("at line 3, column"), "{msg}");
    assert!(
        msg.ends_with("(1 items and 0 failed keys read before it)"),
        "{msg}"
    );

    for (feed, want) in [
        (
            "<rss><item><id>1</id></item>",
            "the feed ends inside <rss> (truncated?)",
        ),
        (
            "<rss><channel><item><id>1</i",
            "the feed is not well-formed XML",
        ),
        ("", "the feed contains no XML element"),
        ("just text, no XML", "the feed contains no XML element"),
        ("<rss><item a='1' a='2'><id>1</id></item></rss>", ""),
        (
            "<rss><channel><item><id>&#0;</id></item></channel></rss>",
            "the feed is not well-formed XML",
        ),
        (
            "<rss><channel><item><title x='&amp'/></item></channel></rss>",
            "",
        ),
    ] {
        let (_, r) = run(feed.as_bytes(), &shop_rules());
        match r {
            Err(e) => assert!(e.to_string().starts_with(want), "{feed}: {e}"),
            Ok(s) => assert!(want.is_empty() && s.items == 0, "{feed}: {s:?}"),
        }
    }
}

#[test]
fn truncated_anywhere_is_an_error_never_a_panic_and_items_before_are_counted() {
    let feed = shop_feed(4);
    let full = feed.trim_end().len();
    let (all, _) = run(feed.as_bytes(), &shop_rules());
    for cut in 0..full {
        let (got, r) = run(&feed.as_bytes()[..cut], &shop_rules());
        let e = r.expect_err(&format!("cut at {cut} reads as a whole feed"));
        assert_eq!(e.items as usize, got.items.len());
        assert_eq!(got.items[..], all.items[..got.items.len()], "cut at {cut}");
        assert!(e.line >= 1 && e.column >= 1);
    }
}

#[test]
fn byte_damage_never_panics() {
    let feed = shop_feed(2).into_bytes();
    for i in 0..feed.len() {
        for b in [0u8, b'<', b'>', b'&', b'"', 0xFF, b'/'] {
            let mut f = feed.clone();
            f[i] = b;
            let _ = run(&f, &shop_rules());
        }
    }
}

#[test]
fn caps_on_events_depth_and_items() {
    let big_text = format!(
        "<rss><channel><item><id>1</id><title>{}</title></item></channel></rss>",
        "x".repeat(10_000)
    );
    let limits = Limits {
        max_event_bytes: 4096,
        ..Limits::default()
    };
    let e = run_with(big_text.as_bytes(), None, &shop_rules(), &limits)
        .1
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::EventTooLong { limit: 4096 });
    assert_eq!(
        e.to_string().split(" at ").next().unwrap(),
        "the feed has a tag or text longer than 4096 bytes"
    );

    let deep = "<a>".repeat(300);
    let e = run(deep.as_bytes(), &shop_rules()).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::TooDeep { limit: 256 });

    let limits = Limits {
        max_items: 3,
        ..Limits::default()
    };
    let (got, r) = run_with(shop_feed(10).as_bytes(), None, &shop_rules(), &limits);
    let s = r.unwrap();
    assert!(s.capped && !s.stopped);
    assert_eq!(got.items.len(), 3);
}

#[test]
fn the_sink_can_stop() {
    let mut n = 0;
    let s = extract(
        shop_feed(10).as_bytes(),
        None,
        &shop_rules(),
        &Limits::default(),
        |o| {
            assert!(matches!(o, Outcome::Item(_)));
            n += 1;
            if n == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        },
    )
    .unwrap();
    assert!(s.stopped && !s.capped);
    assert_eq!(s.items, 2);
}

#[test]
fn rule_flags_are_part_of_the_canonical_form() {
    let feed = shop_feed(1);
    let (a, _) = run(feed.as_bytes(), &shop_rules());
    let changed = rules(
        "channel/item",
        &[
            rule("id", "", "KI"),
            rule("title", "", "RI"),
            rule("price", "g:price", "M"),
            rule("image", "images/img/@src", ""),
        ],
    );
    let (b, _) = run(feed.as_bytes(), &changed);
    assert_eq!(a.items[0].0, b.items[0].0);
    assert_ne!(a.items[0].1, b.items[0].1);
}
