#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn parse(text: &str, kind: Option<Kind>) -> Result<Dictionary, DictError> {
    parse_bytes(text.as_bytes(), kind)
}

fn parse_bytes(bytes: &[u8], kind: Option<Kind>) -> Result<Dictionary, DictError> {
    Dictionary::parse("d.tsv", bytes, kind, None, &mut Tokenizer::default())
}

fn err(text: &[u8]) -> (usize, String) {
    let e = parse_bytes(text, None).unwrap_err();
    assert_eq!(e.file, "d.tsv");
    assert!(
        e.to_string().starts_with(&format!("d.tsv:{}: ", e.line)),
        "{e}"
    );
    (e.line, e.reason)
}

const CATALOG: &str = "1\t\tShopping\n2\t1\tPhones\n3\t\tSports\n";

#[test]
fn a_direct_dictionary_is_parsed_normalised_and_compiled() {
    let d = parse(
        "#focuser-dictionary 1 kind=direct\n\
         # advertisers' phrases\n\
         Купить   телефон\t12\n\
         \n\
         buy the iPhone 15\t3\t2\r\n\
         cheap flights\t0\n",
        Some(Kind::Direct),
    )
    .unwrap();
    assert_eq!(d.kind(), Kind::Direct);
    assert_eq!(d.len(), 3);
    type Row = (String, Vec<String>, u32, Option<String>, u32);
    let all: Vec<Row> = (0..3)
        .map(|p| {
            let x = d.phrase(p).unwrap();
            (
                x.text.to_owned(),
                d.stems(p).map(str::to_owned).collect(),
                x.advertisers,
                x.category.map(|c| c.id.clone()),
                x.line,
            )
        })
        .collect();
    // In the stems' sorted order; the text as written, white space collapsed.
    assert_eq!(
        all,
        [
            (
                "buy the iPhone 15".into(),
                vec!["buy".into(), "iphon".into(), "15".into()],
                3,
                Some("2".into()),
                5
            ),
            (
                "cheap flights".into(),
                vec!["cheap".into(), "flight".into()],
                0,
                None,
                6
            ),
            (
                "Купить телефон".into(),
                vec!["куп".into(), "телефон".into()],
                12,
                None,
                3
            ),
        ]
    );
    assert_eq!(d.version_hex().len(), 16);
}

#[test]
fn market_and_media_phrases_point_at_catalog_categories_with_their_ancestors() {
    let catalog = Catalog::parse(CATALOG).unwrap();
    let text = "#focuser-dictionary 1 kind=market\nsmartphones\t2\nсмартфоны\t2\nsports shoes\t3\n";
    let d = Dictionary::parse(
        "m.tsv",
        text.as_bytes(),
        Some(Kind::Market),
        Some(&catalog),
        &mut Tokenizer::default(),
    )
    .unwrap();
    let phone = (0..3)
        .filter_map(|p| d.phrase(p))
        .find(|p| p.text == "smartphones")
        .unwrap();
    assert_eq!(phone.category.unwrap().chain, ["1", "2"]);
    let e = Dictionary::parse(
        "m.tsv",
        b"#focuser-dictionary 1 kind=market\nshoes\t9\n",
        None,
        Some(&catalog),
        &mut Tokenizer::default(),
    )
    .unwrap_err();
    assert_eq!(
        (e.line, e.reason.as_str()),
        (2, "category \"9\" is not in the catalog")
    );
}

#[test]
fn the_version_is_the_normalised_content_not_the_files_order() {
    let a = parse(
        "#focuser-dictionary 1 kind=direct\nred wine\t3\nbuy cars\t2\n",
        None,
    )
    .unwrap();
    let b = parse(
        "#focuser-dictionary 1 kind=direct\n# reordered\nbuy  cars\t2\r\n\nred wine\t3",
        None,
    )
    .unwrap();
    assert_eq!(a.version(), b.version());
    for changed in [
        "#focuser-dictionary 1 kind=direct\nred wine\t4\nbuy cars\t2\n",
        "#focuser-dictionary 1 kind=direct\nred wine\t3\nbuy cars\t2\tx\n",
        "#focuser-dictionary 1 kind=direct\nRed wine\t3\nbuy cars\t2\n",
        "#focuser-dictionary 1 kind=direct\nred wine\t3\n",
    ] {
        assert_ne!(
            parse(changed, None).unwrap().version(),
            a.version(),
            "{changed}"
        );
    }
    let media = parse("#focuser-dictionary 1 kind=media\nred wine\t3\n", None).unwrap();
    let market = parse("#focuser-dictionary 1 kind=market\nred wine\t3\n", None).unwrap();
    assert_ne!(media.version(), market.version());
}

#[test]
fn rare_phrases_are_rarer_than_those_of_common_words() {
    let mut text = String::from("#focuser-dictionary 1 kind=direct\n");
    for i in 0..50 {
        text.push_str(&format!("buy thing{i}\t1\n"));
    }
    text.push_str("buy\t1\nzeppelin\t1\n");
    let d = parse(&text, None).unwrap();
    let rarity = |t: &str| {
        (0..d.len() as u32)
            .filter_map(|p| d.phrase(p))
            .find(|p| p.text == t)
            .unwrap()
            .rarity
    };
    assert!((rarity("zeppelin") - 1.0).abs() < 1e-6);
    assert!(rarity("buy") < 0.2, "{}", rarity("buy"));
    // A phrase is as rare as its rarest word.
    assert!((rarity("buy thing3") - 1.0).abs() < 1e-6);
}

#[test]
fn bad_files_are_refused_with_the_file_and_the_line() {
    let h = "#focuser-dictionary 1 kind=direct\n";
    let cases: Vec<(Vec<u8>, usize, &str)> = vec![
        (b"".to_vec(), 1, "not a dictionary file"),
        (b"red wine\t3\n".to_vec(), 1, "not a dictionary file"),
        (
            b"#focuser-dictionary 2 kind=direct\n".to_vec(),
            1,
            "dictionary format \"2\"",
        ),
        (
            b"#focuser-dictionary 1 kind=other\n".to_vec(),
            1,
            "the first line must be",
        ),
        // Wrong columns.
        (
            format!("{h}ok\t1\nred wine\n").into_bytes(),
            3,
            "1 columns, a direct phrase",
        ),
        (format!("{h}a b\t1\tc\td\n").into_bytes(), 2, "4 columns"),
        (
            b"#focuser-dictionary 1 kind=media\nwine\t1\t2\n".to_vec(),
            2,
            "3 columns, a media phrase",
        ),
        (
            format!("{h}red wine\tmany\n").into_bytes(),
            2,
            "not a non-negative whole number",
        ),
        (
            format!("{h}red wine\t-1\n").into_bytes(),
            2,
            "not a non-negative whole number",
        ),
        (
            format!("{h}red wine\t99999999999\n").into_bytes(),
            2,
            "more than",
        ),
        // Invalid UTF-8.
        (
            [h.as_bytes(), b"ok\t1\nred \xff wine\t1\n"].concat(),
            3,
            "not UTF-8 (byte 5 of the line)",
        ),
        // A 1 MB phrase, a long one, a wordless one.
        (
            format!("{h}{}\t1\n", "a".repeat(1 << 20)).into_bytes(),
            2,
            "a line of 1048578 bytes, at most 4096",
        ),
        (
            format!("{h}{}\t1\n", "word ".repeat(60)).into_bytes(),
            2,
            "a phrase of 299 bytes",
        ),
        (
            format!("{h}the of and\t1\n").into_bytes(),
            2,
            "has no words once normalised",
        ),
        (format!("{h}   \t1\n").into_bytes(), 2, "an empty phrase"),
        (
            format!("{h}cat dog cow pig hen fox owl bee ant\t1\n").into_bytes(),
            2,
            "at most 8",
        ),
        (
            format!("{h}see www.example.com\t1\n").into_bytes(),
            2,
            "not a phrase",
        ),
        (
            format!("{h}bad\u{7}bell\t1\n").into_bytes(),
            2,
            "a control character",
        ),
        // Duplicates, also once normalised.
        (
            format!("{h}red wine\t1\ncars\t2\nRed  Wines\t5\n").into_bytes(),
            4,
            "\"Red Wines\" has the same words as line 2 (\"red wine\")",
        ),
        (
            format!("{h}buy cars\t1\tmy cat\n").into_bytes(),
            2,
            "without spaces",
        ),
    ];
    for (text, line, reason) in cases {
        let (l, r) = err(&text);
        assert_eq!(l, line, "{r}");
        assert!(r.contains(reason), "{r:?} should say {reason:?}");
    }
    let e = parse("#focuser-dictionary 1 kind=market\n", Some(Kind::Direct)).unwrap_err();
    assert_eq!(e.reason, "a market dictionary, direct expected");
}

#[test]
fn a_dictionary_with_no_phrases_is_empty_not_an_error() {
    let d = parse("#focuser-dictionary 1 kind=media\n# nothing yet\n", None).unwrap();
    assert!(d.is_empty());
    assert!(d.phrase(0).is_none());
}
