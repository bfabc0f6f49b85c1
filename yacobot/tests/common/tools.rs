//! What the page analysis tools' tests share: a small catalog and a generated corpus whose
//! labels a model must recover, the binary run to its end, its output read.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use focuser_tests::output_within;
use serde_json::Value;

pub const CATALOG: &str = "tech\t\tTechnology\nsoftware\ttech\tSoftware\nscience\t\tScience\n\
    space\tscience\tSpace\nfood\t\tFood\nsport\t\tSport\n";

/// Each category's words: the generated documents are made of them.
const VOCABULARY: [(&str, &str); 4] = [
    (
        "Technology > Software",
        "code coverage test javascript function browser script developer library compiler \
         source program tool debug release framework bug module",
    ),
    (
        "Science > Space",
        "rocket launch nasa orbit spacecraft mission moon mars satellite astronaut vehicle \
         engine congress agency booster lunar committee exploration",
    ),
    (
        "Food",
        "flour butter sugar oven bake recipe dough salt cheese soup kitchen pepper garlic \
         onion cream bread",
    ),
    (
        "Sport",
        "match goal team player league coach season score striker penalty stadium referee \
         cup champion",
    ),
];

/// Document `k` of a category: twelve of its words, in an order of its own.
pub fn document(words: &str, k: usize) -> String {
    let w: Vec<&str> = words.split_whitespace().collect();
    let picked: Vec<&str> = (0..12).map(|i| w[(k * 3 + i * 5) % w.len()]).collect();
    format!(
        "The {} and the {}.",
        picked[..6].join(" "),
        picked[6..].join(" ")
    )
}

/// 20 documents per category, interleaved (the held-back part has some of each).
pub fn documents() -> Vec<(&'static str, String)> {
    (0..20)
        .flat_map(|k| VOCABULARY.iter().map(move |&(l, w)| (l, document(w, k))))
        .collect()
}

pub fn yacobot() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_yacobot"));
    c.env_remove("DATABASE_URL");
    c
}

pub fn run(args: &[&str]) -> Output {
    output_within(yacobot().args(args), Duration::from_secs(60))
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn fixture(name: &str) -> String {
    format!(
        "{}/../multidoc/tests/fixtures/pages/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A catalog, a corpus file and a model trained from them in `dir`.
pub struct Trained {
    pub catalog: PathBuf,
    pub corpus: PathBuf,
    pub model: PathBuf,
    pub out: Output,
}

pub fn train(dir: &Path) -> Trained {
    let catalog = dir.join("catalog.tsv");
    std::fs::write(&catalog, CATALOG).unwrap();
    let corpus = dir.join("corpus.tsv");
    let lines: String = documents()
        .iter()
        .map(|(l, d)| format!("{l}\t{d}\n"))
        .collect();
    std::fs::write(&corpus, lines).unwrap();
    let model = dir.join("test.model");
    let out = run(&[
        "train",
        corpus.to_str().unwrap(),
        "--catalog",
        catalog.to_str().unwrap(),
        "-o",
        model.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    Trained {
        catalog,
        corpus,
        model,
        out,
    }
}

/// `accuracy    0.875 on 8 held-back documents …` → (0.875, 8).
pub fn accuracy(stdout: &str) -> (f64, usize) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("accuracy "))
        .unwrap_or_else(|| panic!("no accuracy line in {stdout}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&w[2..4], ["on", w[3]], "{line}");
    (w[1].parse().unwrap(), w[3].parse().unwrap())
}

pub fn json_lines(stdout: &[u8]) -> Vec<Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The names of a JSON page's category path.
pub fn category_names(page: &Value) -> Vec<String> {
    page["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}
