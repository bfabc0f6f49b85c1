//! `yacobot train CORPUS… [--catalog FILE] [--holdout PCT] -o MODEL`: a classifier model from a
//! labelled corpus, its accuracy on a held-back part, and the model file written atomically.
//!
//! A CORPUS is a file of `labels \t text` lines (docs/classifier.md: a label is a catalog id or
//! a path of names joined by ` > `, several joined by `|`), or a folder of label folders with
//! one file per document (`Sports/Soccer/0001.txt`: the folder path is the label path). A
//! document file ending in `.html`, `.htm` or `.xhtml` is read as a page (its blocks weighted
//! as pages are); any other as text in its detected charset.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use focuser_formats::fsutil;
use focuser_multidoc::classify::{
    parse_line, train_and_evaluate, Catalog, Corpus, Model, Params, Report, ALPHAS, PATH_SEPARATOR,
};
use focuser_multidoc::decode::{decode, DEFAULT_MAX_BYTES};
use focuser_multidoc::tokenize::{Features, Options, Tokenizer};

use super::{files_under, Done};

// `train`'s arguments (its help is the command's).
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Labelled documents: files of `labels \t text` lines, or folders of label folders
    /// holding one file per document
    #[arg(value_name = "CORPUS", required = true)]
    corpus: Vec<PathBuf>,
    /// The catalog the labels name (`id \t parent \t name` lines, or the IAB TSV) [default:
    /// one made of the corpus's label paths]
    #[arg(long, value_name = "FILE")]
    catalog: Option<PathBuf>,
    /// Percent of the documents held back to measure the accuracy (every (100/PCT)th)
    #[arg(long, value_name = "PCT", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=50))]
    holdout: u32,
    /// The model file to write
    #[arg(short = 'o', long = "output", value_name = "MODEL")]
    output: PathBuf,
}

/// The corpus as it is read.
struct Reading {
    catalog: Catalog,
    /// Labels must name nodes of a catalog given; without one, label paths make it.
    given: bool,
    corpus: Corpus,
    tokenizer: Tokenizer,
    features: Features,
    /// Documents per label (a document with two labels counts for both).
    per_label: BTreeMap<u32, usize>,
    skipped: usize,
}

impl Reading {
    fn skip(&mut self, at: &str, why: &dyn std::fmt::Display) {
        self.skipped += 1;
        eprintln!("yacobot train: {at}: {why}");
    }

    fn labels(&mut self, labels: &[&str]) -> Result<Vec<u32>, String> {
        labels
            .iter()
            .map(|&l| {
                let node = if self.given {
                    self.catalog.resolve(l)
                } else {
                    self.catalog.add_path(l.split(PATH_SEPARATOR))
                };
                node.ok_or_else(|| match self.given {
                    true => {
                        format!("label {l:?} is neither an id nor a path of names of the catalog")
                    }
                    false => format!("label {l:?}: an empty name in its path"),
                })
            })
            .collect()
    }

    fn add(&mut self, labels: &[u32]) {
        self.corpus.add(labels, &self.features);
        for &l in labels {
            *self.per_label.entry(l).or_default() += 1;
        }
    }

    /// A file of `labels \t text` lines; blank lines are passed over.
    fn lines(&mut self, file: &Path) -> anyhow::Result<()> {
        let bytes = std::fs::read(file).with_context(|| format!("{}", file.display()))?;
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            let at = format!("{} line {}", file.display(), i + 1);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let Ok(line) = std::str::from_utf8(line) else {
                self.skip(&at, &"not UTF-8");
                continue;
            };
            let parsed = parse_line(line, i + 1).map_err(|e| e.to_string());
            let labelled = parsed.and_then(|l| Ok((self.labels(&l.labels)?, l.text)));
            match labelled {
                Ok((labels, text)) => {
                    self.tokenizer.page(None, [(text, 1.0)], &mut self.features);
                    self.add(&labels);
                }
                Err(why) => self.skip(&at, &why),
            }
        }
        Ok(())
    }

    /// A folder of label folders, one file per document.
    fn folder(&mut self, root: &Path) -> anyhow::Result<()> {
        for file in files_under(root)? {
            let at = file.display().to_string();
            let names: Vec<String> = file
                .strip_prefix(root)
                .ok()
                .and_then(Path::parent)
                .map(|p| {
                    p.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            if names.is_empty() {
                self.skip(&at, &"a document must be in a label folder");
                continue;
            }
            let label = names.join(PATH_SEPARATOR);
            match self.labels(&[&label]) {
                Ok(labels) => match self.document(&file) {
                    Ok(()) => self.add(&labels),
                    Err(e) => self.skip(&at, &format!("{e:#}")),
                },
                Err(why) => self.skip(&at, &why),
            }
        }
        Ok(())
    }

    /// One document file's features: a page's weighted blocks, or a text's words.
    fn document(&mut self, file: &Path) -> anyhow::Result<()> {
        if std::fs::metadata(file)?.len() > DEFAULT_MAX_BYTES as u64 {
            bail!("larger than {DEFAULT_MAX_BYTES} bytes");
        }
        let body = std::fs::read(file)?;
        let html = file
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["html", "htm", "xhtml"].contains(&e.to_ascii_lowercase().as_str()));
        if html {
            let page = focuser_multidoc::understand(
                &body,
                None,
                None,
                DEFAULT_MAX_BYTES,
                None,
                &mut self.tokenizer,
                None,
            )?;
            self.features = page.features;
        } else {
            let text = decode(&body, None, DEFAULT_MAX_BYTES)?.text;
            self.tokenizer
                .page(None, [(&*text, 1.0)], &mut self.features);
        }
        Ok(())
    }
}

/// Runs `yacobot train …`; prints what it read and measured, and writes the model.
pub fn run(args: &TrainArgs) -> anyhow::Result<Done> {
    let (catalog, given) = match &args.catalog {
        Some(f) => {
            let text = std::fs::read_to_string(f).with_context(|| format!("{}", f.display()))?;
            let c = Catalog::parse(&text).with_context(|| format!("{}", f.display()))?;
            (c, true)
        }
        None => (Catalog::new(), false),
    };
    let options = Options::default();
    let mut r = Reading {
        catalog,
        given,
        corpus: Corpus::new(),
        tokenizer: Tokenizer::new(options),
        features: Features::default(),
        per_label: BTreeMap::new(),
        skipped: 0,
    };
    for c in &args.corpus {
        if c.is_dir() {
            r.folder(c)?;
        } else {
            r.lines(c)?;
        }
    }
    if r.corpus.is_empty() {
        bail!("no document to train on ({} skipped)", r.skipped);
    }
    let every = ((100.0 / f64::from(args.holdout)).round() as usize).max(2);
    let (model, report) = train_and_evaluate(
        &r.catalog,
        &r.corpus,
        &Params::default(),
        options,
        every,
        &ALPHAS,
    )?;
    let bytes = model.to_bytes();
    fsutil::write_atomically(&args.output, |w| w.write_all(&bytes))
        .with_context(|| format!("writing {}", args.output.display()))?;
    // Read back: the checksum is the model's version as pages record it.
    let written = Model::from_bytes(&bytes)?;
    let mut out = std::io::stdout().lock();
    print(&mut out, args, &r, &report, &written, bytes.len(), every)?;
    Ok(Done { bad: r.skipped })
}

/// `2nd`, `3rd`, `10th`, `21st`.
fn nth(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn print(
    out: &mut impl Write,
    args: &TrainArgs,
    r: &Reading,
    report: &Report,
    model: &Model,
    bytes: usize,
    every: usize,
) -> std::io::Result<()> {
    let sources = args.corpus.len();
    writeln!(
        out,
        "corpus      {} documents from {sources} source{} ({} skipped), {} categories",
        r.corpus.len(),
        if sources == 1 { "" } else { "s" },
        r.skipped,
        r.per_label.len()
    )?;
    let mut labels: Vec<(&u32, &usize)> = r.per_label.iter().collect();
    labels.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (&node, n) in labels {
        writeln!(out, "  {n:>8}  {}", r.catalog.path_names(node))?;
    }
    match &args.catalog {
        Some(f) => writeln!(
            out,
            "catalog     {} nodes ({})",
            r.catalog.len(),
            f.display()
        )?,
        None => writeln!(
            out,
            "catalog     {} nodes made from the labels",
            r.catalog.len()
        )?,
    }
    if report.held_back == 0 {
        writeln!(
            out,
            "accuracy    not measured: no document held back (every {} of {})",
            nth(every),
            r.corpus.len()
        )?;
    } else {
        writeln!(
            out,
            "accuracy    {:.3} on {} held-back documents (every {}); top level {:.3}",
            report.accuracy,
            report.held_back,
            nth(every),
            report.accuracy_top
        )?;
    }
    let tried: Vec<String> = report
        .tried
        .iter()
        .map(|(a, acc)| format!("{a}: {acc:.3}"))
        .collect();
    writeln!(
        out,
        "smoothing   {} (tried {}); temperature {:.2}",
        report.alpha,
        tried.join(", "),
        report.temperature
    )?;
    writeln!(
        out,
        "model       {}: {bytes} bytes, {} features, checksum {:08x}; trained on all {} documents",
        args.output.display(),
        model.feature_count(),
        model.checksum(),
        r.corpus.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_read_right() {
        let got: Vec<String> = [2, 3, 4, 10, 11, 12, 13, 21, 22, 100].map(nth).to_vec();
        assert_eq!(
            got,
            ["2nd", "3rd", "4th", "10th", "11th", "12th", "13th", "21st", "22nd", "100th"]
        );
    }
}
