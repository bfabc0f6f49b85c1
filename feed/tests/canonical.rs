//! The canonical form and its MD5 are the same for every way of writing the same item that
//! docs/formats.md calls insignificant, and differ when a value changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use focuser_feed::items::Rules;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct ItemData {
    id: Vec<String>,
    title: Vec<String>,
    tags: Vec<Vec<String>>,
    src: Vec<String>,
    alt: Vec<String>,
}

/// How the item is written: none of it may change the MD5.
#[derive(Debug, Clone)]
struct Style {
    /// White-space runs used in turn between elements and between words.
    ws: Vec<&'static str>,
    attr_swap: bool,
    double_quotes: bool,
    /// 0 escaped, 1 CDATA, 2 character references for everything not ASCII.
    text_mode: u8,
    order: Vec<usize>,
    comments: bool,
    gb18030: bool,
    unknown_extras: bool,
}

fn plain() -> Style {
    Style {
        ws: vec![" "],
        attr_swap: false,
        double_quotes: true,
        text_mode: 0,
        order: vec![0, 1, 2, 3],
        comments: false,
        gb18030: false,
        unknown_extras: false,
    }
}

fn words() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-zA-Z0-9&<>\"'中文é€!;#]{1,6}", 1..5)
}

fn item_data() -> impl Strategy<Value = ItemData> {
    (
        words(),
        words(),
        prop::collection::vec(words(), 0..4),
        words(),
        words(),
    )
        .prop_map(|(id, title, tags, src, alt)| ItemData {
            id,
            title,
            tags,
            src,
            alt,
        })
}

fn style() -> impl Strategy<Value = Style> {
    (
        prop::collection::vec(
            prop::sample::select(vec![" ", "  ", "\n", "\t", " \r\n\t "]),
            1..6,
        ),
        any::<bool>(),
        any::<bool>(),
        0u8..3,
        Just(vec![0usize, 1, 2, 3]).prop_shuffle(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                ws,
                attr_swap,
                double_quotes,
                text_mode,
                order,
                comments,
                gb18030,
                unknown_extras,
            )| Style {
                ws,
                attr_swap,
                double_quotes,
                text_mode,
                order,
                comments,
                gb18030,
                unknown_extras,
            },
        )
}

struct Writer<'s> {
    style: &'s Style,
    turn: usize,
    out: String,
}

impl Writer<'_> {
    fn ws(&mut self) -> &'static str {
        self.turn += 1;
        self.style.ws[self.turn % self.style.ws.len()]
    }

    fn escaped(&self, s: &str, attr: bool) -> String {
        let mut o = String::new();
        for c in s.chars() {
            match c {
                '&' => o.push_str("&amp;"),
                '<' => o.push_str("&lt;"),
                '>' => o.push_str("&gt;"),
                '"' if attr => o.push_str("&quot;"),
                '\'' if attr => o.push_str("&apos;"),
                c if !c.is_ascii() && self.style.text_mode == 2 => {
                    o.push_str(&format!("&#x{:x};", c as u32))
                }
                c => o.push(c),
            }
        }
        o
    }

    /// Words joined by white-space runs, with runs around them too.
    fn spaced(&mut self, words: &[String]) -> String {
        let mut s = self.ws().to_string();
        for w in words {
            s.push_str(w);
            s.push_str(self.ws());
        }
        s
    }

    fn text(&mut self, words: &[String]) -> String {
        let s = self.spaced(words);
        if self.style.text_mode == 1 {
            format!("<![CDATA[{s}]]>")
        } else {
            self.escaped(&s, false)
        }
    }

    fn element(&mut self, name: &str, words: &[String]) {
        let t = self.text(words);
        let c = if self.style.comments {
            "<!-- note -->"
        } else {
            ""
        };
        self.out.push_str(&format!("<{name}>{c}{t}</{name}>"));
        let ws = self.ws();
        self.out.push_str(ws);
    }
}

fn render(item: &ItemData, style: &Style) -> Vec<u8> {
    let mut w = Writer {
        style,
        turn: 0,
        out: String::new(),
    };
    let enc = if style.gb18030 { "GB18030" } else { "UTF-8" };
    w.out.push_str(&format!(
        "<?xml version=\"1.0\" encoding=\"{enc}\"?>\n<rss><channel>"
    ));
    let ws = w.ws();
    w.out.push_str(&format!("{ws}<item>{ws}"));
    for &block in &style.order {
        match block {
            0 => w.element("id", &item.id),
            1 => w.element("title", &item.title),
            2 => {
                w.out.push_str("<tags>");
                for t in &item.tags {
                    w.element("tag", t);
                }
                w.out.push_str("</tags>");
            }
            _ => {
                let q = if style.double_quotes { '"' } else { '\'' };
                let src = w.spaced(&item.src);
                let alt = w.spaced(&item.alt);
                let (src, alt) = (w.escaped(&src, true), w.escaped(&alt, true));
                let mut attrs = vec![
                    format!("src={q}{src}{q}"),
                    format!("alt{ws}={ws}{q}{alt}{q}"),
                ];
                if style.attr_swap {
                    attrs.reverse();
                }
                if style.unknown_extras {
                    attrs.push("width='10'".into());
                }
                w.out.push_str(&format!(
                    "<images><img{ws}{}{ws}/></images>",
                    attrs.join(ws)
                ));
            }
        }
        if style.unknown_extras {
            w.out.push_str("<unknown a='b'>ignored</unknown>");
        }
        if style.comments {
            w.out.push_str("<!-- between fields -->");
        }
    }
    w.out.push_str("</item></channel></rss>\n");
    if style.gb18030 {
        encoding_rs::GB18030.encode(&w.out).0.into_owned()
    } else {
        w.out.into_bytes()
    }
}

fn class() -> Rules {
    rules(
        "channel/item",
        &[
            rule("id", "", "KI"),
            rule("title", "", "RIF"),
            rule("tag", "tags/tag", "I"),
            rule("image", "images/img/@src", ""),
            rule("alt", "./images/img/@alt", "M"),
        ],
    )
}

fn one_item(feed: &[u8]) -> (String, String, String) {
    let (got, r) = run(feed, &class());
    let s = r.unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(feed)));
    assert_eq!((s.items, s.failed), (1, 0), "{got:?}");
    got.items.into_iter().next().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn insignificant_differences_keep_the_md5(item in item_data(), style in style()) {
        let base = one_item(&render(&item, &plain()));
        let other = one_item(&render(&item, &style));
        prop_assert_eq!(&base, &other);
        // The values are the words joined by single spaces.
        let v: serde_json::Value = serde_json::from_str(&base.2).unwrap();
        prop_assert_eq!(v["fields"][1]["values"][0].as_str().unwrap(), item.title.join(" "));
        prop_assert_eq!(v["key"].as_str().unwrap(), item.id.join(" "));
        prop_assert_eq!(v["fields"][2]["values"].as_array().unwrap().len(), item.tags.len());
    }

    #[test]
    fn a_changed_value_changes_the_md5(item in item_data(), style in style(), which in 0usize..4) {
        let base = one_item(&render(&item, &plain()));
        let mut changed = item.clone();
        match which {
            0 => changed.title.push("more".into()),
            1 => changed.tags.push(vec!["new".into()]),
            2 => changed.src[0].push('x'),
            _ => changed.tags.reverse(),
        }
        let after = one_item(&render(&changed, &style));
        if which == 3 && item.tags.iter().rev().eq(item.tags.iter()) {
            prop_assert_eq!(&base.1, &after.1);
        } else {
            prop_assert_ne!(&base.1, &after.1);
        }
    }
}
