#![allow(clippy::unwrap_used, clippy::expect_used)]

use focuser_multidoc::classify::Catalog;
use focuser_multidoc::tokenize::Tokenizer;

use super::*;
use crate::dict::Kind;

pub(crate) fn dict(kind: Kind, lines: &[&str]) -> Dictionary {
    let catalog =
        Catalog::parse("1\t\tShopping\n2\t1\tPhones\n3\t\tSports\n4\t3\tSoccer\n").unwrap();
    let text = format!(
        "#focuser-dictionary 1 kind={}\n{}\n",
        kind.name(),
        lines.join("\n")
    );
    Dictionary::parse(
        "t.tsv",
        text.as_bytes(),
        None,
        Some(&catalog),
        &mut Tokenizer::default(),
    )
    .unwrap()
}

fn found(d: &Dictionary, blocks: &[(&str, f32)], cats: &[(&str, f32)]) -> Vec<(String, Found)> {
    let mut page = PageText::new();
    page.read(&mut Tokenizer::default(), blocks.iter().copied());
    let cats: Vec<(String, f32)> = cats.iter().map(|&(c, p)| (c.to_owned(), p)).collect();
    Finder::new()
        .find(d, &page, &cats, &Relevance::default())
        .into_iter()
        .map(|f| (d.phrase(f.phrase).unwrap().text.to_owned(), f))
        .collect()
}

fn relevance(d: &Dictionary, blocks: &[(&str, f32)], cats: &[(&str, f32)], phrase: &str) -> f32 {
    found(d, blocks, cats)
        .into_iter()
        .find(|(t, _)| t == phrase)
        .map_or(0.0, |(_, f)| f.relevance)
}

const ARTICLE: &str = "The new phone has a bright screen and the battery lasts two days.";

#[test]
fn phrases_are_found_on_stems_with_their_blocks_and_weights() {
    let d = dict(
        Kind::Direct,
        &[
            "bright screens\t3",
            "phones\t5",
            "two days\t1",
            "red wine\t9",
        ],
    );
    let f = found(
        &d,
        &[("Phones menu", 0.1), (ARTICLE, 0.9), ("Phone", 0.9)],
        &[],
    );
    let names: Vec<&str> = f.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(names, ["phones", "bright screens", "two days"]);
    let phone = &f[0].1;
    assert_eq!((phone.count, phone.blocks.clone()), (3, vec![0, 1, 2]));
    assert!((phone.weight - 1.9).abs() < 1e-6);
    assert!(f
        .iter()
        .all(|(_, x)| x.relevance > 0.0 && x.relevance < 1.0));
}

#[test]
fn a_phrase_only_in_the_menu_is_less_relevant_than_in_the_article() {
    let d = dict(Kind::Direct, &["bright screen\t3", "phone\t5"]);
    let in_menu = relevance(&d, &[("Phone", 0.05), (ARTICLE, 0.0)], &[], "phone");
    let in_article = relevance(&d, &[("Menu", 0.05), (ARTICLE, 0.9)], &[], "phone");
    assert!(in_menu > 0.0);
    assert!(in_article > 5.0 * in_menu, "{in_article} {in_menu}");
}

#[test]
fn more_occurrences_add_less_and_less_and_a_long_page_divides() {
    let d = dict(Kind::Direct, &["phone\t5", "battery\t1"]);
    let r = |n: usize, filler: usize| {
        let text = format!("{} {}", "phone ".repeat(n), "word ".repeat(filler));
        relevance(&d, &[(&text, 1.0)], &[], "phone")
    };
    let (one, two, four) = (r(1, 50), r(2, 50), r(4, 50));
    assert!(one < two && two < four, "{one} {two} {four}");
    assert!(two - one > four - two, "{one} {two} {four}");
    assert!(r(1, 3000) < one / 2.0, "{} {one}", r(1, 3000));
}

#[test]
fn rare_phrases_weigh_more_than_common_ones() {
    let mut lines: Vec<String> = (0..40).map(|i| format!("buy thing{i}\t1")).collect();
    lines.push("buy\t1".into());
    lines.push("zeppelin\t1".into());
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let d = dict(Kind::Direct, &refs);
    let page = [("buy a zeppelin", 1.0)];
    assert!(relevance(&d, &page, &[], "zeppelin") > 1.5 * relevance(&d, &page, &[], "buy"));
}

#[test]
fn agreeing_with_the_pages_categories_raises_relevance() {
    let d = dict(
        Kind::Direct,
        &[
            "smartphones\t2\t2",
            "shopping bags\t1\t1",
            "football boots\t4\t4",
            "gadgets\t1",
        ],
    );
    let page = [(
        "smartphones, shopping bags, gadgets and football boots on sale",
        1.0,
    )];
    let phones = [("1", 0.9), ("2", 0.8)];
    let r = |cats: &[(&str, f32)], phrase| relevance(&d, &page, cats, phrase);
    // On a phone page: the phone phrase, one of the page's top category, one without a
    // category, one of another tree.
    let same = r(&phones, "smartphones");
    let ancestor = r(&phones, "shopping bags");
    let none = r(&phones, "gadgets");
    let other = r(&phones, "football boots");
    assert!(same > none && same > ancestor, "{same} {ancestor} {none}");
    assert!(
        ancestor > other && none > other,
        "{ancestor} {none} {other}"
    );
    // A page with no categories: every phrase as if neutral.
    assert_eq!(r(&[], "smartphones"), r(&[], "gadgets"));
    let phrase = |t: &str| {
        (0..4)
            .filter_map(|p| d.phrase(p))
            .find(|p| p.text == t)
            .unwrap()
    };
    let cats = vec![("3".to_owned(), 0.7), ("4".to_owned(), 0.6)];
    assert_eq!(agreement(phrase("football boots").category, &[]), 0.5);
    assert_eq!(agreement(None, &cats), 0.5);
    assert!((agreement(phrase("football boots").category, &cats) - 0.65).abs() < 1e-6);
    assert_eq!(agreement(phrase("smartphones").category, &cats), 0.0);
}
