#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::tokenize::{Features, Options, Tokenizer};

const CATALOG: &str = include_str!("../../testdata/catalog.tsv");
const CORPUS: &str = include_str!("../../testdata/corpus.tsv");
const IAB: &str = include_str!("../../catalog/iab-content-taxonomy-3.1.tsv");

fn params() -> Params {
    Params {
        min_df: 1,
        ..Params::default()
    }
}

/// The test catalog and corpus, each document tokenized as one block.
fn corpus() -> (Catalog, Corpus, Vec<u32>) {
    let catalog = Catalog::parse(CATALOG).unwrap();
    let mut t = Tokenizer::new(Options::default());
    let mut f = Features::default();
    let mut corpus = Corpus::new();
    let mut gold = Vec::new();
    for (i, line) in CORPUS.lines().enumerate() {
        let l = parse_line(line, i + 1).unwrap();
        let labels: Vec<u32> = l
            .labels
            .iter()
            .map(|x| catalog.resolve(x).unwrap())
            .collect();
        t.page(None, [(l.text, 1.0)], &mut f);
        corpus.add(&labels, &f);
        gold.push(labels[0]);
    }
    (catalog, corpus, gold)
}

fn model() -> Model {
    let (catalog, corpus, _) = corpus();
    train(&catalog, &corpus, |_| true, &params(), Options::default()).unwrap()
}

fn classify(m: &Model, text: &str) -> Categories {
    let mut f = Features::default();
    m.tokenizer().page(None, [(text, 1.0)], &mut f);
    m.classify(&f)
}

fn path_ids(m: &Model, c: &[(u32, f32)]) -> Vec<String> {
    c.iter()
        .map(|&(n, _)| m.catalog().node(n).unwrap().id.clone())
        .collect()
}

#[test]
fn the_classifier_recovers_the_labels_of_its_corpus() {
    let (catalog, corpus, gold) = corpus();
    for kind in [Kind::Complement, Kind::Multinomial] {
        let p = Params { kind, ..params() };
        let m = train(&catalog, &corpus, |_| true, &p, Options::default()).unwrap();
        let mut f = Features::default();
        for (i, &g) in gold.iter().enumerate() {
            corpus.features(i, &mut f);
            let c = m.classify_with(&f, 0.0);
            assert_eq!(
                c.leaf().map(|x| x.0),
                Some(g),
                "{kind:?}, document {}",
                i + 1
            );
        }
    }
}

#[test]
fn held_back_documents_and_new_text_get_their_category() {
    let (catalog, corpus, _) = corpus();
    let (m, report) =
        train_and_evaluate(&catalog, &corpus, &params(), Options::default(), 5, &ALPHAS).unwrap();
    assert_eq!((report.trained_on, report.held_back), (24, 6));
    assert!(report.accuracy_top >= 0.8, "{report:?}");
    assert!(report.temperature > 0.0);
    let cases = [
        (
            "The goalkeeper could not stop the penalty and the match ended in a draw",
            "football",
        ),
        ("Шайба, овертайм и вратарь: хоккейный матч", "hockey"),
        ("Bake the dough in the oven with butter and sugar", "baking"),
        ("Разработчики выпустили новую версию программы", "software"),
    ];
    for (text, want) in cases {
        let c = classify(&m, text);
        assert_eq!(
            path_ids(&m, &c.path).last().map(String::as_str),
            Some(want),
            "{text}: {c:?}"
        );
    }
}

#[test]
fn the_path_goes_from_the_top_and_is_cut_to_a_depth() {
    let m = model();
    let c = classify(&m, "The new smartphone camera and battery");
    assert_eq!(path_ids(&m, &c.path), ["tech", "phones"]);
    assert!(
        c.path[0].1 >= c.path[1].1,
        "a subtree's posterior is at least its child's"
    );
    assert_eq!(path_ids(&m, c.truncated(1)), ["tech"]);
    // Why: the words that speak for the category.
    let mut f = Features::default();
    m.tokenizer().page(
        None,
        [("The new smartphone camera and battery", 1.0)],
        &mut f,
    );
    let why = m.evidence(&f, c.path[1].0, 3);
    assert!(why.iter().any(|(w, _)| w == "camera"), "{why:?}");
    assert!(why.iter().all(|(w, _)| w != "new"), "{why:?}");
    assert!(why.windows(2).all(|p| p[0].1 >= p[1].1));
    assert_eq!(path_ids(&m, c.truncated(5)), ["tech", "phones"]);
    assert!(c.truncated(0).is_empty());
    let text = c.describe(m.catalog(), 1);
    assert!(
        text.starts_with("Technology (") && !text.contains('>'),
        "{text}"
    );
    assert!(c.describe(m.catalog(), 9).contains(") > Smartphones ("));
    // A threshold no posterior reaches stops at the top.
    let mut f = Features::default();
    m.tokenizer()
        .page(None, [("smartphone camera", 1.0)], &mut f);
    assert!(m.classify_with(&f, 1.5).path.is_empty());
}

#[test]
fn a_model_file_reads_back_the_same() {
    let m = model();
    let bytes = m.to_bytes();
    let back = Model::from_bytes(&bytes).unwrap();
    assert_eq!(
        back.checksum(),
        u32::from_le_bytes(bytes[20..24].try_into().unwrap())
    );
    let mut again = back.clone();
    again.checksum = 0;
    assert_eq!(again, m);
    let text = "Красное вино и виноград";
    assert_eq!(classify(&back, text), classify(&m, text));
}

#[test]
fn a_damaged_model_file_is_refused_with_a_clear_error() {
    let bytes = model().to_bytes();
    let err = |b: &[u8]| Model::from_bytes(b).unwrap_err().to_string();
    assert!(err(b"").contains("not a focuser model"));
    assert!(err(b"PK\x03\x04 a zip file").contains("not a focuser model"));
    assert!(err(&bytes[..10]).contains("truncated"));
    let cut = err(&bytes[..bytes.len() - 1]);
    assert!(
        cut.contains("truncated") && cut.contains(&format!("{} bytes expected", bytes.len())),
        "{cut}"
    );
    let mut flipped = bytes.clone();
    let mid = bytes.len() / 2;
    flipped[mid] ^= 0x40;
    assert!(err(&flipped).contains("checksum"), "{}", err(&flipped));
    let mut version = bytes.clone();
    version[8] = 2;
    assert!(err(&version).contains("format 2"), "{}", err(&version));
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(err(&longer).contains("after the model's end"));
}

#[test]
fn a_body_damaged_under_a_good_checksum_is_refused_without_a_panic() {
    let bytes = model().to_bytes();
    let mut refused = 0;
    // Every 31st byte of the body changed in turn, the checksum made right again: whatever it
    // says, reading must answer without a panic, and a reader that takes it still classifies.
    for at in (24..bytes.len()).step_by(31) {
        for delta in [1u8, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[at] = b[at].wrapping_add(delta);
            let crc = crc_fast::crc32_iscsi(&b[24..]);
            b[20..24].copy_from_slice(&crc.to_le_bytes());
            match Model::from_bytes(&b) {
                Ok(m) => {
                    classify(&m, "wine and bread");
                }
                Err(e) => {
                    assert!(e.to_string().starts_with("model file damaged"), "{e}");
                    refused += 1;
                }
            }
        }
    }
    assert!(refused > 0);
}

#[test]
fn bad_input_never_panics_and_no_words_is_no_category() {
    let m = model();
    assert!(classify(&m, "").path.is_empty());
    assert!(classify(&m, "\u{0}\u{1}\u{fffd}").path.is_empty());
    let binary: Vec<u8> = (0..50_000u32).map(|i| (i * 7919 % 256) as u8).collect();
    classify(&m, &String::from_utf8_lossy(&binary));
    let huge = "wine bread ".repeat(50_000);
    assert_eq!(path_ids(&m, &classify(&m, &huge).path)[0], "food");
    // Words the model never saw are no evidence.
    assert!(classify(&m, "zzzz qqqq").path.is_empty());
}

#[test]
fn catalogs_are_read_from_the_iab_taxonomy_and_from_simple_files() {
    let iab = Catalog::parse(IAB).unwrap();
    assert_eq!(iab.len(), 704);
    let roots = iab.nodes().iter().filter(|n| n.parent.is_none()).count();
    assert_eq!(roots, 37);
    let max_depth = (0..iab.len() as u32).map(|i| iab.depth(i)).max();
    assert_eq!(max_depth, Some(4));
    let parks = iab.by_id("151").unwrap();
    assert_eq!(
        iab.path_names(parks),
        "Attractions > Amusement and Theme Parks"
    );
    assert_eq!(
        iab.resolve("Attractions > Amusement and Theme Parks"),
        Some(parks)
    );

    let simple =
        Catalog::parse("b\ta\tChild\n\n# comment\na\t\tTop\r\nc\tb\tGrandchild/with slash\n")
            .unwrap();
    let c = simple.by_id("c").unwrap();
    assert_eq!(simple.path_names(c), "Top > Child > Grandchild/with slash");
    assert_eq!(simple.depth(c), 3);

    let err = |t: &str| Catalog::parse(t).unwrap_err().to_string();
    assert_eq!(
        err("a\t\tA\nb\tz\tB\n"),
        "catalog line 2: parent \"z\" of \"b\" is not in the catalog"
    );
    assert_eq!(
        err("a\t\tA\na\t\tB\n"),
        "catalog line 2: id \"a\" appears twice"
    );
    assert!(err("a\tb\tA\nb\ta\tB\n").contains("its own ancestor"));
    assert!(err("a only\n").contains("catalog line 1"));
}

#[test]
fn corpus_lines_and_labels() {
    let l = parse_line("earn | acq\tprofit rose\r\n", 3).unwrap();
    assert_eq!(l.labels, ["earn", "acq"]);
    assert_eq!(l.text, "profit rose");
    assert_eq!(
        parse_line("no tab here", 7).unwrap_err().to_string(),
        "corpus line 7: expected a label, a tab and the text"
    );
    assert!(parse_line(" | \ttext", 1).is_err());
    let mut c = Catalog::new();
    let a = c.add_path(["comp", "sys", "mac"]).unwrap();
    let b = c.add_path(["comp", "graphics"]).unwrap();
    assert_eq!(c.len(), 4);
    assert_eq!(c.path_names(a), "comp > sys > mac");
    assert_eq!(c.node(b).unwrap().parent, c.by_id("comp"));
    assert_eq!(c.add_path(["x", ""]), None);
}

#[test]
fn training_without_documents_is_an_error() {
    let catalog = Catalog::parse(CATALOG).unwrap();
    let e = train(
        &catalog,
        &Corpus::new(),
        |_| true,
        &params(),
        Options::default(),
    );
    assert!(e.unwrap_err().to_string().contains("no labelled document"));
}
