//! What `yacobot analyze` shows of a page's binding (`--dict KIND=FILE`): the tragic flag, and
//! per binding type the phrases the collector kept with their relevance and the page's
//! categories cut to the type's depth — what the worker would ship for the page with those
//! dictionaries (docs/bindings.md).

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, Context};
use focuser_bind::{Dictionary, Kind, PageBinding};
use focuser_multidoc::tokenize::Tokenizer;
use serde::Serialize;

#[derive(Serialize)]
pub struct BindingJson<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    dict: String,
    categories: Vec<BoundCategory<'a>>,
    phrases: Vec<BoundPhraseJson<'a>>,
}

#[derive(Serialize)]
struct BoundCategory<'a> {
    id: &'a str,
    posterior: f64,
}

#[derive(Serialize)]
struct BoundPhraseJson<'a> {
    text: &'a str,
    relevance: f64,
    advertisers: u32,
}

fn unit(thousandths: u16) -> f64 {
    f64::from(thousandths) / 1000.0
}

/// The dictionaries of `--dict KIND=FILE` arguments, in binding-type order; a bad file or a
/// kind given twice is an error that names it.
pub fn load_dicts(args: &[String]) -> anyhow::Result<Vec<Dictionary>> {
    let mut tokenizer = Tokenizer::default();
    let mut dicts: Vec<Dictionary> = Vec::new();
    for a in args {
        let (kind, file) = a
            .split_once('=')
            .ok_or_else(|| anyhow!("--dict {a:?}: KIND=FILE expected"))?;
        let kind = Kind::from_name(kind)
            .ok_or_else(|| anyhow!("--dict {a:?}: kind {kind:?}: direct, market or media"))?;
        if dicts.iter().any(|d| d.kind() == kind) {
            return Err(anyhow!(
                "--dict {a:?}: a {} dictionary is given twice",
                kind.name()
            ));
        }
        let bytes = std::fs::read(Path::new(file)).with_context(|| format!("reading {file}"))?;
        let dict = Dictionary::parse(file, &bytes, Some(kind), None, &mut tokenizer)
            .map_err(|e| anyhow!("{e}"))?;
        dicts.push(dict);
    }
    dicts.sort_by_key(Dictionary::kind);
    Ok(dicts)
}

/// The binding as `analyze --format json` has it (`bindings`).
pub fn json(b: &PageBinding) -> Vec<BindingJson<'_>> {
    b.bindings
        .iter()
        .map(|t| BindingJson {
            kind: t.kind.name(),
            dict: format!("{:016x}", t.dict_version),
            categories: t
                .categories
                .iter()
                .map(|(id, p)| BoundCategory {
                    id,
                    posterior: unit(*p),
                })
                .collect(),
            phrases: t
                .phrases
                .iter()
                .map(|p| BoundPhraseJson {
                    text: &p.text,
                    relevance: unit(p.relevance),
                    advertisers: p.advertisers,
                })
                .collect(),
        })
        .collect()
}

/// The binding in the text report: the tragic flag, then per type its categories and one
/// line a phrase.
pub fn text(out: &mut impl Write, b: &PageBinding) -> std::io::Result<()> {
    writeln!(out, "tragic      {}", u8::from(b.tragic))?;
    for t in &b.bindings {
        let cats: Vec<String> = t
            .categories
            .iter()
            .map(|(id, p)| format!("{id} ({:.3})", unit(*p)))
            .collect();
        writeln!(
            out,
            "binding     {}  dictionary {:016x}  categories: {}",
            t.kind.name(),
            t.dict_version,
            if cats.is_empty() {
                "none".into()
            } else {
                cats.join(" > ")
            }
        )?;
        if t.phrases.is_empty() {
            writeln!(out, "  (no phrases)")?;
        }
        for p in &t.phrases {
            writeln!(
                out,
                "  {:.3}  {:>4}  {}",
                unit(p.relevance),
                p.advertisers,
                p.text
            )?;
        }
    }
    Ok(())
}
