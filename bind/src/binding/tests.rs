#![allow(clippy::unwrap_used, clippy::expect_used)]

use focuser_multidoc::tokenize::Tokenizer;

use super::*;
use crate::binder::tests::dict;
use crate::tragic::{self, Lexicon};

/// The page's category path in the test catalog: Shopping > Phones, and a third level that
/// only market keeps.
fn path() -> Vec<(String, f32)> {
    vec![
        ("1".to_owned(), 0.9),
        ("2".to_owned(), 0.8),
        ("x".to_owned(), 0.6),
    ]
}

fn page(blocks: &[(&str, f32)]) -> PageText {
    let mut p = PageText::new();
    p.read(&mut Tokenizer::default(), blocks.iter().copied());
    p
}

const EN_PHONE: &str = "We tested the new phone for a week. Buy the phone case with it: \
the phone case protects the screen, and a cheap phone charger is in the box.";
const EN_TRAGIC_PHONE: &str = "Twelve people were killed and dozens injured when a bomb \
exploded in a phone shop; police said the blast destroyed the phone case stand and rescuers \
searched the rubble for survivors.";
const RU_PHONE: &str = "Мы неделю тестировали новый телефон. Купить чехол для телефона стоит \
сразу: чехол для телефона защищает экран.";
const RU_TRAGIC_PHONE: &str = "В результате взрыва в магазине телефонов погибли 12 человек, \
ещё несколько десятков ранены. Спасатели разбирают завалы, чехол для телефона нашли под \
обломками; в городе объявлен траур.";

fn direct() -> Dictionary {
    dict(
        Kind::Direct,
        &[
            "phone case\t12\t2",
            "phone charger\t3\t2",
            "phone\t40\t2",
            "чехол для телефона\t7\t2",
            "football boots\t5\t4",
        ],
    )
}

#[test]
fn a_binding_has_the_collected_phrases_and_the_categories_cut_to_the_types_depth() {
    let d = direct();
    let mut finder = Finder::new();
    let p = page(&[("Home | Phones | Football boots", 0.05), (EN_PHONE, 0.9)]);
    let params = TypeParams::default_for(Kind::Direct);
    let b = bind(&d, &p, &path(), &params, false, &mut finder);
    assert_eq!(b.kind, Kind::Direct);
    assert_eq!(b.dict_version, d.version());
    assert_eq!(b.categories, [("1".to_owned(), 900), ("2".to_owned(), 800)]);
    let texts: Vec<&str> = b.phrases.iter().map(|p| p.text.as_str()).collect();
    // Nested `phone` is dropped for the longer phrases; the menu's football boots weigh too
    // little to pass the threshold.
    assert_eq!(texts, ["phone case", "phone charger"]);
    assert!(b.phrases[0].relevance > b.phrases[1].relevance, "{b:?}");
    assert_eq!(b.phrases[0].advertisers, 12);
    // The same as what `collected` explains, in thousandths.
    let kept = collected(&d, &p, &path(), &params, &mut finder);
    let rel: Vec<u16> = kept
        .iter()
        .map(|c| thousandths(c.found.relevance))
        .collect();
    assert_eq!(
        rel,
        b.phrases.iter().map(|p| p.relevance).collect::<Vec<_>>()
    );
    // Market keeps three levels.
    let m = dict(Kind::Market, &["phone case\t2"]);
    let b = bind(
        &m,
        &p,
        &path(),
        &TypeParams::default_for(Kind::Market),
        false,
        &mut finder,
    );
    assert_eq!(b.categories.len(), 3);
    assert_eq!(b.phrases.len(), 1);
}

#[test]
fn a_tragic_page_has_its_phrases_withheld_and_keeps_its_flag_in_russian_and_english() {
    let d = direct();
    let mut tokenizer = Tokenizer::default();
    let lexicon = Lexicon::builtin(&mut tokenizer).unwrap();
    let mut finder = Finder::new();
    let params = TypeParams::default_for(Kind::Direct);
    for (calm, tragic_text) in [(EN_PHONE, EN_TRAGIC_PHONE), (RU_PHONE, RU_TRAGIC_PHONE)] {
        for (text, expect_tragic) in [(calm, false), (tragic_text, true)] {
            let p = page(&[(text, 0.9)]);
            let verdict = tragic::judge(&lexicon, &p, &mut finder, &tragic::Params::default());
            assert_eq!(verdict.tragic, expect_tragic, "{text}: {verdict:?}");
            // The phrases are there to bind either way...
            assert!(
                !collected(&d, &p, &path(), &params, &mut finder).is_empty(),
                "{text}"
            );
            let b = bind(&d, &p, &path(), &params, verdict.tragic, &mut finder);
            let page = PageBinding::new(1, "https://example.com/a", verdict.tragic, vec![b]);
            // ...but a tragic page delivers none, with its flag and its categories.
            assert_eq!(page.tragic, expect_tragic);
            let b = page.binding(Kind::Direct).unwrap();
            assert_eq!(b.phrases.is_empty(), expect_tragic, "{text}: {b:?}");
            assert_eq!(b.categories.len(), 2);
            assert_eq!(page.canonical().contains("\"tragic\":1"), expect_tragic);
        }
    }
}

fn sample() -> PageBinding {
    PageBinding::new(
        0x4d2,
        "https://example.com/phones/a?id=1",
        false,
        vec![
            Binding {
                kind: Kind::Media,
                dict_version: 0xab,
                categories: vec![("1".into(), 900)],
                phrases: vec![],
            },
            Binding {
                kind: Kind::Direct,
                dict_version: 0x0123_4567_89ab_cdef,
                categories: vec![("1".into(), 900), ("2".into(), 800)],
                phrases: vec![BoundPhrase {
                    text: "чехол \"для\" телефона".into(),
                    relevance: 734,
                    advertisers: 7,
                }],
            },
        ],
    )
}

#[test]
fn the_canonical_form_is_the_ad_server_item_and_its_md5_changes_only_with_the_binding() {
    let b = sample();
    assert_eq!(
        b.dict_versions(),
        [(Kind::Direct, 0x0123_4567_89ab_cdef), (Kind::Media, 0xab)]
    );
    assert_eq!(
        b.canonical(),
        r#"{"item":"binding","v":1,"doc":"00000000000004d2","url":"https://example.com/phones/a?id=1","tragic":0,"types":[{"type":"direct","dict":"0123456789abcdef","categories":[{"id":"1","p":900},{"id":"2","p":800}],"phrases":[{"text":"чехол \"для\" телефона","rel":734,"adv":7}]},{"type":"media","dict":"00000000000000ab","categories":[{"id":"1","p":900}],"phrases":[]}]}"#
    );
    assert_eq!(b.md5(), md5_hex(b.canonical().as_bytes()));
    assert_eq!(b.md5().len(), 32);
    // The types' order given does not matter; every value does.
    let mut same = b.clone();
    same.bindings.reverse();
    let same = PageBinding::new(same.doc, &same.url, same.tragic, same.bindings);
    assert_eq!(same.md5(), b.md5());
    let changes: [fn(&mut PageBinding); 5] = [
        |b| b.tragic = true,
        |b| b.bindings[0].phrases[0].relevance += 1,
        |b| b.bindings[0].dict_version += 1,
        |b| b.bindings[1].categories[0].1 -= 1,
        |b| b.url.push('x'),
    ];
    for change in changes {
        let mut other = b.clone();
        change(&mut other);
        assert_ne!(other.md5(), b.md5(), "{other:?}");
    }
}

#[test]
fn binding_the_same_page_twice_gives_the_same_md5() {
    let d = direct();
    let params = TypeParams::default_for(Kind::Direct);
    let md5 = |blocks: &[(&str, f32)]| {
        let b = bind(
            &d,
            &page(blocks),
            &path(),
            &params,
            false,
            &mut Finder::new(),
        );
        PageBinding::new(7, "https://example.com/", false, vec![b]).md5()
    };
    assert_eq!(md5(&[(EN_PHONE, 0.9)]), md5(&[(EN_PHONE, 0.9)]));
    // A change below a thousandth of relevance changes nothing; a real one does.
    assert_eq!(md5(&[(EN_PHONE, 0.9)]), md5(&[(EN_PHONE, 0.900_001)]));
    assert_ne!(md5(&[(EN_PHONE, 0.9)]), md5(&[(EN_PHONE, 0.5)]));
}

#[test]
fn collected_keeps_what_the_collector_keeps_of_everything_found() {
    // `collected` scores and chooses before it makes any `Found`: the same as finding all,
    // then collecting.
    let d = crate::binder::tests::dict(
        Kind::Direct,
        &[
            "bright screen\t3",
            "screen\t1",
            "phone\t5",
            "new phone\t2",
            "battery\t1",
            "two days\t4",
            "red wine\t9",
        ],
    );
    let p = page(&[
        ("Phones | Screens | Batteries", 0.1),
        (
            "The new phone has a bright screen and the battery lasts two days. A phone, a screen.",
            0.9,
        ),
    ]);
    let params = TypeParams::default_for(Kind::Direct);
    let cats = [("1".to_owned(), 0.8)];
    let mut finder = Finder::new();
    let all = finder.find(&d, &p, &cats[..1], &params.relevance);
    let want = crate::collect::collect(&d, all, &params.rules);
    let got = collected(&d, &p, &cats, &params, &mut finder);
    assert_eq!(got, want);
    let texts: Vec<&str> = got
        .iter()
        .map(|c| d.phrase(c.found.phrase).unwrap().text)
        .collect();
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert!(!texts.contains(&"screen") && !texts.contains(&"phone"));
}
