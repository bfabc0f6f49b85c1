#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn binding_item() -> Item {
    Item::Binding(PageBinding::new(
        0x4d2,
        "https://example.com/phones/a",
        false,
        vec![Binding {
            kind: Kind::Direct,
            dict_version: 0xabc,
            categories: vec![("1".into(), 900), ("2".into(), 800)],
            phrases: vec![
                BoundPhrase {
                    text: "phone case".into(),
                    relevance: 734,
                    advertisers: 12,
                },
                BoundPhrase {
                    text: "чехол".into(),
                    relevance: 1000,
                    advertisers: 0,
                },
            ],
        }],
    ))
}

fn stub_item() -> Item {
    Item::Stub(Stub {
        key: 0xfeed,
        section: "example.com/phones/".into(),
        urls: 12,
        tragic: false,
        bindings: vec![Binding {
            kind: Kind::Market,
            dict_version: 1,
            categories: vec![("1".into(), 1000)],
            phrases: vec![BoundPhrase {
                text: "phone case".into(),
                relevance: 500,
                advertisers: 0,
            }],
        }],
    })
}

fn args_item() -> Item {
    Item::QueryArgs(QueryArgs::new(
        0x2a,
        "example.com",
        ["utm_source".to_owned(), "sid".to_owned(), "sid".to_owned()],
    ))
}

#[test]
fn every_item_reads_back_as_written() {
    for item in [binding_item(), stub_item(), args_item()] {
        let line = item.render();
        assert!(!line.contains('\n'), "{line}");
        assert_eq!(Item::parse(line.as_bytes()).unwrap(), item, "{line}");
        assert_eq!(Item::parse(format!("{line}\n").as_bytes()).unwrap(), item);
    }
    assert_eq!(binding_item().key(), 0x4d2);
    assert_eq!(stub_item().key(), 0xfeed);
    assert_eq!(
        args_item().render(),
        r#"{"item":"query_args","v":1,"key":"000000000000002a","host":"example.com","args":["sid","utm_source"]}"#
    );
    assert_eq!(
        stub_item().render(),
        r#"{"item":"stub","v":1,"key":"000000000000feed","section":"example.com/phones/","urls":12,"tragic":0,"types":[{"type":"market","dict":"0000000000000001","categories":[{"id":"1","p":1000}],"phrases":[{"text":"phone case","rel":500,"adv":0}]}]}"#
    );
}

/// `good` with `from` replaced by `to` (which must be there).
fn edited(good: &str, from: &str, to: &str) -> String {
    assert!(good.contains(from), "{from} not in {good}");
    good.replacen(from, to, 1)
}

#[test]
fn malformed_items_are_refused_with_the_reason() {
    let good = binding_item().render();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"".to_vec(), "not JSON"),
        (b"{\"item\":\"binding\"".to_vec(), "not JSON"),
        (b"\xff\xfe{}".to_vec(), "not JSON"),
        (b"[1,2]".to_vec(), "no \"item\""),
        (b"{\"item\":7}".to_vec(), "no \"item\""),
        (br#"{"item":"banner","v":1}"#.to_vec(), "unknown item \"banner\""),
        (edited(&good, r#""v":1"#, r#""v":2"#).into(), "version 2"),
        (edited(&good, r#""tragic":0"#, r#""tragic":0,"extra":1"#).into(), "unknown field `extra`"),
        (edited(&good, r#","url":"https://example.com/phones/a""#, "").into(), "missing field `url`"),
        (edited(&good, r#""url":"https://example.com/phones/a""#, r#""url":"""#).into(), "empty url"),
        (edited(&good, "00000000000004d2", "00000000000004D2").into(), "doc \"00000000000004D2\""),
        (edited(&good, "00000000000004d2", "4d2").into(), "doc \"4d2\""),
        (edited(&good, "00000000000004d2", "+0000000000004d2").into(), "16 lower-case hex"),
        (edited(&good, "0000000000000abc", "zz").into(), "dict \"zz\""),
        (edited(&good, r#""tragic":0"#, r#""tragic":2"#).into(), "tragic 2"),
        (edited(&good, r#""tragic":0"#, r#""tragic":1"#).into(), "a tragic item with direct phrases"),
        (edited(&good, r#""rel":734"#, r#""rel":1001"#).into(), "0..=1000"),
        (edited(&good, r#""rel":734"#, r#""rel":-1"#).into(), "invalid value"),
        (edited(&good, r#""rel":734"#, r#""rel":0.5"#).into(), "invalid type"),
        (edited(&good, r#""p":900"#, r#""p":70000"#).into(), "invalid value"),
        (edited(&good, r#""id":"1""#, r#""id":"""#).into(), "category \"\""),
        (edited(&good, r#""text":"phone case""#, r#""text":" ""#).into(), "phrase \" \""),
        (edited(&good, r#""type":"direct""#, r#""type":"search""#).into(), "unknown type \"search\""),
        (
            edited(&good, r#""types":["#, r#""types":[{"type":"media","dict":"0000000000000001","categories":[],"phrases":[]},"#).into(),
            "repeated or out of order",
        ),
        (
            br#"{"item":"query_args","v":1,"key":"000000000000002a","host":"example.com","args":["utm","sid"]}"#.to_vec(),
            "not sorted",
        ),
        (
            br#"{"item":"query_args","v":1,"key":"000000000000002a","host":"","args":[]}"#.to_vec(),
            "empty host",
        ),
        (
            edited(&stub_item().render(), r#""section":"example.com/phones/""#, r#""section":"""#).into(),
            "empty section",
        ),
        (format!("{}1]", "[".repeat(100_000)).into(), "not JSON"),
        (vec![b' '; MAX_ITEM_BYTES + 1], "at most"),
    ];
    for (bytes, reason) in cases {
        let e = Item::parse(&bytes)
            .expect_err(&String::from_utf8_lossy(&bytes[..bytes.len().min(300)]));
        assert!(e.to_string().contains(reason), "{reason:?} not in {e}");
    }
}

#[test]
fn no_prefix_or_single_byte_change_of_an_item_panics() {
    let good = binding_item().render().into_bytes();
    for n in 0..good.len() {
        assert!(Item::parse(&good[..n]).is_err(), "prefix of {n} bytes read");
    }
    for i in 0..good.len() {
        for b in [b'"', b'{', b'0', 0xff, b'\\'] {
            let mut bad = good.clone();
            bad[i] = b;
            // Either refused or read as some other valid item; never a panic.
            if let Ok(item) = Item::parse(&bad) {
                assert_eq!(Item::parse(item.render().as_bytes()).unwrap(), item);
            }
        }
    }
}
