#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn words(text: &str, bigrams: bool) -> Vec<(String, f32)> {
    let mut t = Tokenizer::new(Options { bigrams });
    let mut bag = Bag::new();
    t.block(text, 1.0, &mut bag);
    bag.terms()
        .iter()
        .map(|x| (bag.text(x).to_owned(), x.weight))
        .collect()
}

fn texts(text: &str) -> Vec<String> {
    words(text, false).into_iter().map(|(w, _)| w).collect()
}

#[test]
fn english_words_get_their_stems() {
    assert_eq!(
        texts("Running runners ran; connection CONNECTED connects generously"),
        ["run", "runner", "ran", "connect", "generous"]
    );
    assert_eq!(texts("John's ponies"), ["john", "poni"]);
}

#[test]
fn russian_words_get_their_stems() {
    assert_eq!(
        texts("Футбольные команды играли в футбол"),
        ["футбольн", "команд", "игра", "футбол"]
    );
    // `ё` is read as `е`: both spellings are one word.
    assert_eq!(texts("Ёлки ёлка елка"), ["елк"]);
    assert_eq!(texts("Беспилотники сбили"), ["беспилотник", "сбил"]);
}

#[test]
fn stop_words_and_one_letter_words_are_dropped_but_cjk_characters_are_words() {
    assert_eq!(
        texts("The cat and a dog в доме и у нас x"),
        ["cat", "dog", "дом"]
    );
    assert_eq!(texts("中文网页"), ["中", "文", "网", "页"]);
}

#[test]
fn numbers_are_short_words_or_their_shape() {
    assert_eq!(
        texts("486 1987 123456 3.14 1,000 x11 MP3"),
        ["486", "1987", "<int>", "<dec>", "x11", "mp3"]
    );
}

#[test]
fn links_and_mail_addresses_are_their_host() {
    assert_eq!(
        texts("see https://Www.Example.com/a/b?c=d and <mathew@mantis.co.uk>, (www.lenta.ru)."),
        ["see", "@example.com", "@mantis.co.uk", "@lenta.ru"]
    );
}

#[test]
fn pairs_of_neighbours_stay_inside_a_sentence() {
    let w: Vec<String> = words("Bank of America rose. Shares fell", true)
        .into_iter()
        .map(|(w, _)| w)
        .collect();
    assert_eq!(
        w,
        [
            "bank",
            "america",
            "bank america",
            "rose",
            "america rose",
            "share",
            "fell",
            "share fell"
        ]
    );
}

#[test]
fn each_word_carries_its_blocks_weight() {
    let mut t = Tokenizer::new(Options { bigrams: false });
    let mut f = Features::default();
    t.page(
        Some("https://news.example.com/sport/football-results/2024/05"),
        [
            ("football results", 0.9),
            ("football menu", 0.1),
            ("ignored", 0.0),
            ("nan", f32::NAN),
        ],
        &mut f,
    );
    let w = |s: &str| f.words.weight(word_feature(s));
    assert!((w("footbal") - 1.0).abs() < 1e-6);
    assert!((w("result") - 0.9).abs() < 1e-6);
    assert!((w("menu") - 0.1).abs() < 1e-6);
    assert_eq!(w("ignor"), 0.0);
    assert_eq!(w("nan"), 0.0);
    assert!((f.words.total() - 2.0).abs() < 1e-6);
    // URL words are their own features: no numbers, no `www`, stems.
    let u: Vec<&str> = f.url.terms().iter().map(|x| f.url.text(x)).collect();
    assert_eq!(u, ["news", "exampl", "com", "sport", "footbal", "result"]);
    assert_eq!(f.url.weight(word_feature("sport")), 0.0);
    assert_eq!(f.url.weight(url_feature("sport")), 1.0);
}

#[test]
fn url_paths_are_percent_decoded() {
    let mut t = Tokenizer::default();
    let mut bag = Bag::new();
    t.url(
        "https://ru.wikipedia.org/wiki/%D0%9D%D0%B0%D0%B8%D0%B2%D0%BD%D1%8B%D0%B9_%D0%B1%D0%B0%D0%B9%D0%B5%D1%81%25?x=query#frag",
        &mut bag,
    );
    let u: Vec<&str> = bag.terms().iter().map(|x| bag.text(x)).collect();
    assert_eq!(u, ["ru", "wikipedia", "org", "wiki", "наивн", "байес"]);
}

#[test]
fn bad_input_never_panics() {
    let mut t = Tokenizer::default();
    let mut f = Features::default();
    let binary: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    let binary = String::from_utf8_lossy(&binary).into_owned();
    let huge = "слово word ".repeat(50_000);
    let long_word = "a".repeat(1_000_000);
    let odd = "\u{0}\u{200b}\u{feff}%%%@@@ http:// www. @ a@ @b.c https://@/ 𝔘𝔫𝔦 \u{301}\u{301}";
    for text in ["", " ", &binary, &huge, &long_word, odd] {
        t.page(Some(text), [(text, 1.0), (text, f32::INFINITY)], &mut f);
    }
    for url in ["", "://", "http://", "%", "%e", "%ff%fe/%%41", "a@b:c@d/?#"] {
        t.page(Some(url), [], &mut f);
    }
    t.page(None, [(huge.as_str(), 1.0)], &mut f);
    // "слов", "word" and their two pairs: the one sentence
    assert_eq!(f.words.len(), 4);
}

fn stem_list(text: &str) -> Vec<(String, bool, bool)> {
    let mut t = Tokenizer::default();
    let mut out = Vec::new();
    t.stems(text, |w| {
        out.push((w.text.to_owned(), w.link, w.sentence_start))
    });
    out
}

#[test]
fn stems_are_the_words_a_bag_counts_in_order() {
    for text in [
        "Running runners ran; connection CONNECTED connects generously",
        "Футбольные команды играли в футбол. Ёлки ёлка елка",
        "The cat and a dog в доме и у нас x 中文网页",
        "486 1987 123456 3.14 1,000 x11 MP3",
        "see https://Www.Example.com/a/b?c=d and <mathew@mantis.co.uk>, (www.lenta.ru).",
        "Bank of America rose. Shares fell",
    ] {
        let mut from_bag: Vec<String> = words(text, false).into_iter().map(|(w, _)| w).collect();
        let mut from_stems: Vec<String> = Vec::new();
        for (s, link, _) in stem_list(text) {
            let s = if link { format!("@{s}") } else { s };
            if !from_stems.contains(&s) {
                from_stems.push(s);
            }
        }
        from_bag.sort();
        from_stems.sort();
        assert_eq!(from_bag, from_stems, "{text}");
    }
}

#[test]
fn stems_say_where_words_are_and_where_sentences_start() {
    let text = "Bank of America rose. Shares fell, see www.x.ru now";
    let mut t = Tokenizer::default();
    let mut got = Vec::new();
    t.stems(text, |w| {
        got.push((
            w.text.to_owned(),
            &text[w.start..w.end],
            w.link,
            w.sentence_start,
        ))
    });
    let want = [
        ("bank", "Bank", false, true),
        ("america", "America", false, false),
        ("rose", "rose", false, false),
        ("share", "Shares", false, true),
        ("fell", "fell", false, false),
        ("see", "see", false, false),
        ("x.ru", "www.x.ru", true, false),
        ("now", "now", false, true),
    ];
    let got: Vec<_> = got
        .iter()
        .map(|(a, b, c, d)| (a.as_str(), *b, *c, *d))
        .collect();
    assert_eq!(got, want);
}
