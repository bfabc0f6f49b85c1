//! The dictionaries in force, as the worker holds them: read from SQL and compiled into a
//! `focuser_bind` index once per version, looked at again at every batch (one cheap query),
//! so that a dictionary an operator loads is used from the next batch on. A dictionary is
//! stored as its phrases; the worker writes them back as a dictionary file and parses that
//! with the same parser `yacobot dict load` used: one reading of dictionaries, not two.

use std::fmt::Write as _;

use focuser_bind::{Dictionary, Kind};
use focuser_daemon::db::Database;
use focuser_multidoc::tokenize::Tokenizer;
use focuser_schema::models::{BindingDict, BindingDictPhrase};

/// A dictionary in force: its row and the compiled dictionary.
pub struct Loaded {
    pub row: BindingDict,
    pub dict: Dictionary,
}

/// The dictionaries in force, one per kind at most, in [`Kind`]'s order.
#[derive(Default)]
pub struct Dicts {
    loaded: Vec<Loaded>,
}

impl Dicts {
    pub fn all(&self) -> &[Loaded] {
        &self.loaded
    }

    /// Reads the dictionaries in force and compiles any new one. Returns the versions newly
    /// in use (to log). A stored dictionary that no longer parses (it cannot happen unless
    /// the tokenizer changed) is logged and the one of its kind in use stays.
    pub fn refresh(
        &mut self,
        db: &Database,
        tokenizer: &mut Tokenizer,
    ) -> anyhow::Result<Vec<String>> {
        let rows = db.run("reading the dictionaries in force", BindingDict::current)?;
        let mut news = Vec::new();
        for row in rows {
            if self.loaded.iter().any(|l| l.row.id == row.id) {
                continue;
            }
            let Some(kind) = Kind::from_code(row.kind) else {
                log::warn!(
                    "bindings: dictionary {} has kind {}: passed over",
                    row.id,
                    row.kind
                );
                continue;
            };
            let id = row.id;
            let phrases = db.run("reading a dictionary's phrases", |c| {
                BindingDict::phrases(c, id)
            })?;
            let text = file_text(kind, &phrases);
            let name = format!("{} (dictionary {id})", row.file_name);
            match Dictionary::parse(&name, text.as_bytes(), Some(kind), None, tokenizer) {
                Ok(dict) => {
                    if dict.version_hex() != row.version {
                        log::warn!(
                            "bindings: dictionary {id} ({}) reads as version {}, loaded as {}: the tokenizer changed since it was loaded",
                            kind.name(),
                            dict.version_hex(),
                            row.version
                        );
                    }
                    news.push(format!(
                        "{} {} ({} phrases, loaded {})",
                        kind.name(),
                        row.version,
                        dict.len(),
                        row.loaded_at.format("%Y-%m-%d %H:%M:%S")
                    ));
                    self.loaded.retain(|l| l.dict.kind() != kind);
                    self.loaded.push(Loaded { row, dict });
                    self.loaded.sort_by_key(|l| l.dict.kind());
                }
                Err(e) => log::error!("bindings: {e}; the {} dictionary in use stays", kind.name()),
            }
        }
        Ok(news)
    }
}

/// A stored dictionary written back as a dictionary file (docs/formats.md "Dictionary files").
pub fn file_text(kind: Kind, phrases: &[BindingDictPhrase]) -> String {
    let mut out = format!("#focuser-dictionary 1 kind={}\n", kind.name());
    for p in phrases {
        let _ = match (kind, &p.category) {
            (Kind::Direct, None) => writeln!(out, "{}\t{}", p.phrase, p.advertisers),
            (Kind::Direct, Some(c)) => writeln!(out, "{}\t{}\t{c}", p.phrase, p.advertisers),
            (_, c) => writeln!(out, "{}\t{}", p.phrase, c.as_deref().unwrap_or("")),
        };
    }
    out
}

/// A parsed dictionary's phrases as rows (their `dict_id` is set when stored).
pub fn phrase_rows(dict: &Dictionary) -> Vec<BindingDictPhrase> {
    (0..dict.len() as u32)
        .filter_map(|id| {
            let p = dict.phrase(id)?;
            Some(BindingDictPhrase {
                dict_id: 0,
                line: p.line,
                phrase: p.text.to_owned(),
                stems: dict.stems(id).collect::<Vec<_>>().join(" "),
                advertisers: p.advertisers,
                category: p.category.map(|c| c.id.clone()),
            })
        })
        .collect()
}
