#![allow(clippy::unwrap_used, clippy::expect_used)]

use focuser_multidoc::tokenize::Tokenizer;

use super::*;

fn builtin() -> Lexicon {
    Lexicon::builtin(&mut Tokenizer::default()).unwrap()
}

const EN_TRAGIC: &str = "At least 12 people were killed and dozens injured when a car bomb \
exploded outside a market on Friday. Police said the blast destroyed several shops; rescuers \
searched the rubble for survivors as hospitals appealed for blood donors.";

const RU_TRAGIC: &str = "В результате взрыва на рынке погибли 12 человек, ещё несколько \
десятков ранены. Спасатели разбирают завалы, число погибших может вырасти. В городе объявлен \
траур.";

const EN_CALM: &str = "The new release of the compiler brings faster builds, better error \
messages and a formatter. Download it from the website and read the migration guide.";

const RU_CALM: &str = "Новый выпуск компилятора ускоряет сборку, улучшает сообщения об \
ошибках и добавляет форматирование кода. Скачать его можно на сайте проекта.";

#[test]
fn tragic_pages_are_flagged_in_russian_and_english_and_calm_ones_are_not() {
    let lex = builtin();
    let mut j = TextJudge::default();
    let p = Params::default();
    for t in [EN_TRAGIC, RU_TRAGIC] {
        let v = j.judge(&lex, t, &p);
        assert!(v.tragic, "{t}: {v:?}");
    }
    for t in [EN_CALM, RU_CALM] {
        let v = j.judge(&lex, t, &p);
        assert!(!v.tragic, "{t}: {v:?}");
    }
}

#[test]
fn main_text_counts_and_a_menu_link_does_not() {
    let lex = builtin();
    let p = Params::default();
    let mut tokenizer = Tokenizer::default();
    let mut page = PageText::new();
    let mut finder = Finder::new();
    // An ordinary article under a template menu whose only tragic words are a link to another
    // story: the templater weighs the menu low, so the page is not tragic; the same words in
    // the main text make it so (the weights, not the words, decide).
    for (menu, calm, tragic) in [
        ("Killed in a bombing: what we know", EN_CALM, EN_TRAGIC),
        ("Взрыв на рынке: погибли 12 человек", RU_CALM, RU_TRAGIC),
    ] {
        page.read(&mut tokenizer, [(menu, 0.05), (calm, 0.9)]);
        let v = judge(&lex, &page, &mut finder, &p);
        assert!(!v.tragic, "{menu} in the menu: {v:?}");
        assert!(
            v.score > 0.0,
            "the menu's terms are found, and weigh little: {v:?}"
        );
        page.read(&mut tokenizer, [(menu, 0.9), (calm, 0.9)]);
        let v = judge(&lex, &page, &mut finder, &p);
        assert!(v.tragic, "{menu} in the main text: {v:?}");
        page.read(
            &mut tokenizer,
            [("Home | News | Sport", 0.05), (tragic, 0.9)],
        );
        let v = judge(&lex, &page, &mut finder, &p);
        assert!(v.tragic, "{tragic}: {v:?}");
    }
}

#[test]
fn the_score_needs_both_enough_terms_and_enough_density() {
    let mut lex = Lexicon::builder();
    lex.add(
        &mut Tokenizer::default(),
        "t",
        "killed\t1\nstorm\t0.25\n",
        Shape::Weighted,
    )
    .unwrap();
    let lex = lex.build();
    let mut j = TextJudge::default();
    let p = Params::default();
    // One weak term: under the score.
    assert!(!j.judge(&lex, "a storm tonight", &p).tragic);
    // A strong term in a short text: both.
    let v = j.judge(&lex, "two killed", &p);
    assert!(v.tragic && (v.score - 1.0).abs() < 1e-6, "{v:?}");
    // The same term lost in a long text: too thin.
    let long = format!("two killed {}", "quiet words here ".repeat(100));
    assert!(!j.judge(&lex, &long, &p).tragic);
    // A term repeated counts up to the cap.
    let v = j.judge(&lex, &"killed ".repeat(10), &p);
    assert!((v.score - p.cap).abs() < 1e-6, "{v:?}");
}

#[test]
fn the_tools_line_is_id_tab_flag() {
    let lex = builtin();
    let mut j = TextJudge::default();
    let p = Params::default();
    assert_eq!(
        tragic_line(&mut j, &lex, &p, &format!("a1\t{EN_TRAGIC}\n")),
        "a1\t1"
    );
    assert_eq!(
        tragic_line(&mut j, &lex, &p, &format!("b2\t{RU_CALM}\r\n")),
        "b2\t0"
    );
    assert_eq!(tragic_line(&mut j, &lex, &p, "no tab here"), "\t0");
    assert_eq!(tragic_line(&mut j, &lex, &p, ""), "\t0");
}

#[test]
fn lexicon_lists_are_read_in_their_shapes_and_refused_with_the_line() {
    let mut t = Tokenizer::default();
    let mut b = Lexicon::builder();
    b.add(
        &mut t,
        "a",
        "# terms\nflood victims\nKilled\n",
        Shape::Terms(0.5),
    )
    .unwrap();
    b.add(&mut t, "b", "killed\t1\n", Shape::Weighted).unwrap();
    b.add(
        &mut t,
        "c",
        "war\twar\tbattle\ncalm\tpeace\n",
        Shape::Categories(&[("war", 0.25)]),
    )
    .unwrap();
    let lex = b.build();
    let mut terms: Vec<(String, f32)> = (0..lex.len() as u32)
        .map(|i| (lex.term(i), lex.weight(i)))
        .collect();
    terms.sort_by(|a, b| a.0.cmp(&b.0));
    // A term in two lists keeps its largest weight; categories not taken are left out.
    assert_eq!(
        terms,
        [
            ("battl".to_owned(), 0.25),
            ("flood victim".to_owned(), 0.5),
            ("kill".to_owned(), 1.0),
            ("war".to_owned(), 0.25)
        ]
    );
    for (text, line, reason) in [
        ("killed\n", 1, "1 columns"),
        ("ok\t1\nkilled\tlots\n", 2, "not a number"),
        ("killed\t-1\n", 1, "not a number"),
    ] {
        let e = Lexicon::builder()
            .add(&mut t, "x.tsv", text, Shape::Weighted)
            .err()
            .unwrap();
        assert_eq!((e.file.as_str(), e.line), ("x.tsv", line));
        assert!(e.reason.contains(reason), "{e}");
    }
}

#[test]
fn a_term_inside_a_hashtag_counts_as_the_term() {
    let mut t = Tokenizer::default();
    let mut b = Lexicon::builder();
    b.add(
        &mut t,
        "t.tsv",
        "flood\t1\nwar\t1\nkilled\t0.5\n",
        Shape::Weighted,
    )
    .unwrap();
    let lex = b.build();
    let flood = lex.inside("yycflood").unwrap();
    assert_eq!(lex.term(flood), "flood");
    // Too short to be looked for inside a word; and a term is not inside itself.
    assert_eq!(lex.inside("softwar"), None);
    assert_eq!(lex.inside("flood"), None);
    let p = Params::default();
    let mut j = TextJudge::default();
    let v = j.judge(&lex, "Pumping out the basement again #yycflood", &p);
    assert!(v.tragic, "{v:?}");
    assert_eq!(v.terms, [(flood, 1.0)]);
    // Only a hashtag is looked into: the same letters as a word are no term.
    let v = j.judge(&lex, "Pumping out the basement again yycflood", &p);
    assert!(!v.tragic && v.terms.is_empty(), "{v:?}");
    // A hashtag that is a term is counted once, with the term's other occurrences.
    let v = j.judge(&lex, "Flood warning: the flood is here #flood", &p);
    assert_eq!(v.terms, [(flood, 2.0)], "capped at 2");
    // A lexicon of words only does not look inside.
    let lex = lex.words_only();
    assert_eq!(lex.inside("yycflood"), None);
    let v = j.judge(&lex, "Pumping out the basement again #yycflood", &p);
    assert!(!v.tragic && v.terms.is_empty(), "{v:?}");
}

#[test]
fn the_builtin_lexicon_flags_crisis_hashtags_not_calm_ones() {
    let lex = builtin();
    let p = Params::default();
    let mut j = TextJudge::default();
    for t in [
        "We are pumping out the basement! #yycflood #wetsos",
        "Praying for everyone in Moore tonight #oktornado",
    ] {
        assert!(j.judge(&lex, t, &p).tragic, "{t}");
    }
    for t in [
        "Great keynote today #softwareengineering #rustlang",
        "New release is out, grab it now #opensource #devlife",
    ] {
        let v = j.judge(&lex, t, &p);
        assert!(!v.tragic, "{t}: {v:?}");
    }
}
