//! The operator's binding commands: `yacobot dict load KIND FILE` and `dict list` (the ad
//! dictionaries in SQL), `yacobot bindings URL` (a page's stored binding, and where its phrases
//! matched in its archived copy: [`super::places`]). They only read the archive and touch the
//! database: a running worker uses a dictionary loaded from its next batch on.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use clap::Subcommand;
use diesel::mysql::MysqlConnection;
use focuser_bind::adserver::Item;
use focuser_bind::binding::md5_hex;
use focuser_bind::{Dictionary, Kind};
use focuser_daemon::{clock, Config};
use focuser_formats::urls;
use focuser_multidoc::tokenize::Tokenizer;
use focuser_schema::models::{BindingDict, BindingPage, NewBindingDict};

use super::dicts::phrase_rows;
use super::places::{places, Places};
use crate::YacobotConfig;

#[derive(Debug, Subcommand)]
pub enum DictCmd {
    /// Load a dictionary file (docs/formats.md "Dictionary files"); it is in force for its
    /// kind at once. A bad file is refused with its line, and the dictionary in force stays
    Load {
        /// direct, market or media
        kind: String,
        file: PathBuf,
    },
    /// Every dictionary loaded, newest first, and which are in force
    List,
}

/// Runs a `dict` command; returns what to print.
pub fn dict(conn: &mut MysqlConnection, cmd: &DictCmd) -> anyhow::Result<String> {
    match cmd {
        DictCmd::Load { kind, file } => load(conn, kind, file),
        DictCmd::List => list(conn),
    }
}

fn load(conn: &mut MysqlConnection, kind: &str, file: &Path) -> anyhow::Result<String> {
    let kind = Kind::from_name(kind)
        .ok_or_else(|| anyhow!("kind {kind:?}: direct, market or media expected"))?;
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let name = file.display().to_string();
    let dict = Dictionary::parse(&name, &bytes, Some(kind), None, &mut Tokenizer::default())
        .map_err(|e| anyhow!("{e}; nothing loaded, the dictionary in force stays"))?;
    let version = dict.version_hex();
    let current = BindingDict::current(conn)?;
    if let Some(c) = current
        .iter()
        .find(|c| c.kind == kind.code() && c.version == version)
    {
        return Ok(format!(
            "{name}: the {} dictionary in force (id {}, loaded {}) has this version {version} already: nothing loaded\n",
            kind.name(),
            c.id,
            c.loaded_at.format("%Y-%m-%d %H:%M:%S")
        ));
    }
    let file_name = file
        .file_name()
        .map_or_else(|| name.clone(), |f| f.to_string_lossy().into_owned());
    let file_name: String = file_name.chars().take(255).collect();
    let checksum = md5_hex(&bytes);
    let mut rows = phrase_rows(&dict);
    let row = BindingDict::load(
        conn,
        &NewBindingDict {
            kind: kind.code(),
            version: &version,
            loaded_at: clock::db_now(),
            file_name: &file_name,
            phrases: rows.len() as u32,
            checksum: &checksum,
        },
        &mut rows,
    )?;
    Ok(format!(
        "{name}: {} dictionary {} loaded as dictionary {} ({} phrases); in force from the worker's next batch\n",
        kind.name(),
        row.version,
        row.id,
        row.phrases
    ))
}

fn list(conn: &mut MysqlConnection) -> anyhow::Result<String> {
    let all = BindingDict::all(conn)?;
    if all.is_empty() {
        return Ok("no dictionary loaded\n".into());
    }
    let current: Vec<u32> = BindingDict::current(conn)?.iter().map(|d| d.id).collect();
    let mut out = String::from("id\tkind\tversion\tloaded_at\tphrases\tfile\tin force\n");
    for d in all {
        let kind = Kind::from_code(d.kind).map_or("?", Kind::name);
        let _ = writeln!(
            out,
            "{}\t{kind}\t{}\t{}\t{}\t{}\t{}",
            d.id,
            d.version,
            d.loaded_at.format("%Y-%m-%d %H:%M:%S"),
            d.phrases,
            d.file_name,
            if current.contains(&d.id) { "yes" } else { "no" }
        );
    }
    Ok(out)
}

/// `yacobot bindings URL`: the page's stored binding, and under each phrase where it matched
/// (docs/operations.md "yacobot: bindings").
pub fn show(
    config: &Config<YacobotConfig>,
    conn: &mut MysqlConnection,
    url: &str,
) -> anyhow::Result<String> {
    let n = urls::normalize(url, usize::MAX / 8).map_err(|e| anyhow!("URL {url:?}: {e}"))?;
    let Some(row) = BindingPage::find(conn, n.id)? else {
        return Err(anyhow!("{} (doc id {:016x}): no binding", n.url, n.id));
    };
    let item = Item::parse(row.item.as_bytes())
        .map_err(|e| anyhow!("{}: the stored binding is unreadable: {e}", n.url))?;
    let Item::Binding(b) = item else {
        return Err(anyhow!("{}: the stored item is not a binding", n.url));
    };
    let th = |x: u16| f64::from(x) / 1000.0;
    let mut out = String::new();
    let _ = writeln!(out, "url\t{}", b.url);
    let _ = writeln!(out, "doc\t{:016x}", b.doc);
    let _ = writeln!(
        out,
        "bound_at\t{}",
        row.bound_at.format("%Y-%m-%d %H:%M:%S")
    );
    let _ = writeln!(out, "md5\t{}", row.md5);
    let _ = writeln!(out, "tragic\t{}", u8::from(b.tragic));
    let (places, note) = match places(config, conn, &b)? {
        Places::Found { places, note } => (places, note),
        Places::Unknown(why) => (HashMap::new(), Some(why)),
    };
    let _ = writeln!(
        out,
        "where\t{}",
        note.as_deref()
            .unwrap_or("as its archived copy is bound now: the same binding")
    );
    for t in &b.bindings {
        let cats: Vec<String> = t
            .categories
            .iter()
            .map(|(id, p)| format!("{id} ({:.3})", th(*p)))
            .collect();
        let _ = writeln!(
            out,
            "{}\tdictionary {:016x}\tcategories: {}",
            t.kind.name(),
            t.dict_version,
            if cats.is_empty() {
                "-".into()
            } else {
                cats.join(" > ")
            }
        );
        if t.phrases.is_empty() {
            let _ = writeln!(out, "  (no phrases)");
        }
        for p in &t.phrases {
            let _ = writeln!(
                out,
                "  {:.3}\t{}\t{}",
                th(p.relevance),
                p.advertisers,
                p.text
            );
            for at in places.get(&(t.kind, p.text.clone())).into_iter().flatten() {
                let _ = writeln!(
                    out,
                    "    block {}\tweight {:.3}\t{}\t{}\t{}",
                    at.block,
                    at.weight,
                    if at.template { "template" } else { "own" },
                    at.path,
                    at.snippet
                );
            }
        }
    }
    Ok(out)
}
