//! The ad-server item format (docs/formats.md, "Ad-server items"): what the bindings archive
//! holds and a reader ships to the ad-server receivers. One item is one JSON object on one line,
//! without white space, fields in a fixed order, so that its text is canonical (a binding's MD5
//! is the MD5 of its item). Three items:
//!
//! - `binding`: a page's bindings (per type: phrases with relevance, categories) and its tragic
//!   flag, keyed by the URL's doc id;
//! - `stub`: a site section's stub (the path binder), keyed by the section's id;
//! - `query_args`: a host's insignificant query arguments, keyed by the host's id.
//!
//! [`Item::parse`] reads an item back with every rule checked: a malformed item is refused
//! with the reason, never a panic.

use serde::{Deserialize, Serialize};

use crate::binding::{Binding, BoundPhrase, PageBinding};
use crate::dict::Kind;

/// The format's version, the `v` of every item.
pub const VERSION: u32 = 1;

/// An item longer than this is refused unread.
pub const MAX_ITEM_BYTES: usize = 1 << 20;

/// A relevance, share or posterior: thousandths, at most this.
pub const MAX_THOUSANDTHS: u16 = 1000;

/// A site section's stub, as shipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stub {
    /// The section's id ([`crate::path::section_id`]).
    pub key: u64,
    /// Host and path prefix: `example.com/news/`.
    pub section: String,
    /// The section's bound URLs the stub was made from.
    pub urls: u32,
    /// Most of those pages were tragic: no phrases.
    pub tragic: bool,
    /// Per type, the most frequent phrases and categories; a phrase's or category's value is
    /// the share (thousandths) of the section's bound pages that have it.
    pub bindings: Vec<Binding>,
}

/// A host's insignificant query arguments (`path_arg_name` rows with `significant = 0`): the
/// ad server drops them from a page's URL before looking its binding up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryArgs {
    /// The host's id.
    pub key: u64,
    pub host: String,
    /// Sorted, each once.
    pub args: Vec<String>,
}

/// One ad-server item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Binding(PageBinding),
    Stub(Stub),
    QueryArgs(QueryArgs),
}

/// A malformed item: why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad ad-server item: {0}")]
pub struct ItemError(pub String);

fn bad<T>(reason: impl Into<String>) -> Result<T, ItemError> {
    Err(ItemError(reason.into()))
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WirePhrase {
    text: String,
    rel: u16,
    adv: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireCategory {
    id: String,
    p: u16,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireType {
    #[serde(rename = "type")]
    kind: String,
    dict: String,
    categories: Vec<WireCategory>,
    phrases: Vec<WirePhrase>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireBinding {
    item: String,
    v: u32,
    doc: String,
    url: String,
    tragic: u8,
    types: Vec<WireType>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireStub {
    item: String,
    v: u32,
    key: String,
    section: String,
    urls: u32,
    tragic: u8,
    types: Vec<WireType>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireQueryArgs {
    item: String,
    v: u32,
    key: String,
    host: String,
    args: Vec<String>,
}

fn hex16(x: u64) -> String {
    format!("{x:016x}")
}

fn parse_hex16(what: &str, s: &str) -> Result<u64, ItemError> {
    let ok = s.len() == 16
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    match u64::from_str_radix(s, 16) {
        Ok(x) if ok => Ok(x),
        _ => bad(format!("{what} {s:?}: 16 lower-case hex digits expected")),
    }
}

fn wire_types(bindings: &[Binding]) -> Vec<WireType> {
    bindings
        .iter()
        .map(|b| WireType {
            kind: b.kind.name().to_owned(),
            dict: hex16(b.dict_version),
            categories: b
                .categories
                .iter()
                .map(|(id, p)| WireCategory {
                    id: id.clone(),
                    p: *p,
                })
                .collect(),
            phrases: b
                .phrases
                .iter()
                .map(|p| WirePhrase {
                    text: p.text.clone(),
                    rel: p.relevance,
                    adv: p.advertisers,
                })
                .collect(),
        })
        .collect()
}

/// The types of an item, checked: known, each once, in order; values in range; a tragic item
/// has no phrases.
fn types(wire: Vec<WireType>, tragic: bool) -> Result<Vec<Binding>, ItemError> {
    let mut out: Vec<Binding> = Vec::with_capacity(wire.len());
    for t in wire {
        let Some(kind) = Kind::from_name(&t.kind) else {
            return bad(format!("unknown type {:?}", t.kind));
        };
        if out.last().is_some_and(|b| b.kind >= kind) {
            return bad(format!("type {:?} repeated or out of order", t.kind));
        }
        if tragic && !t.phrases.is_empty() {
            return bad(format!("a tragic item with {} phrases", t.kind));
        }
        let mut categories = Vec::with_capacity(t.categories.len());
        for c in t.categories {
            if c.id.is_empty() || c.p > MAX_THOUSANDTHS {
                return bad(format!("category {:?} {}: an id and 0..=1000", c.id, c.p));
            }
            categories.push((c.id, c.p));
        }
        let mut phrases = Vec::with_capacity(t.phrases.len());
        for p in t.phrases {
            if p.text.trim().is_empty() || p.rel > MAX_THOUSANDTHS {
                return bad(format!(
                    "phrase {:?} {}: a text and 0..=1000",
                    p.text, p.rel
                ));
            }
            phrases.push(BoundPhrase {
                text: p.text,
                relevance: p.rel,
                advertisers: p.adv,
            });
        }
        out.push(Binding {
            kind,
            dict_version: parse_hex16("dict", &t.dict)?,
            categories,
            phrases,
        });
    }
    Ok(out)
}

fn flag(what: &str, x: u8) -> Result<bool, ItemError> {
    match x {
        0 | 1 => Ok(x == 1),
        _ => bad(format!("{what} {x}: 0 or 1 expected")),
    }
}

fn check_version(v: u32) -> Result<(), ItemError> {
    if v == VERSION {
        Ok(())
    } else {
        bad(format!("version {v}, {VERSION} expected"))
    }
}

fn json<T: Serialize>(value: &T) -> String {
    // Serialising these structs (strings and integers) cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

fn from<T: for<'de> Deserialize<'de>>(v: serde_json::Value) -> Result<T, ItemError> {
    serde_json::from_value(v).map_err(|e| ItemError(e.to_string()))
}

impl Item {
    /// The item's key as its archive record is keyed: a doc id, a section id, a host id.
    pub fn key(&self) -> u64 {
        match self {
            Item::Binding(b) => b.doc,
            Item::Stub(s) => s.key,
            Item::QueryArgs(q) => q.key,
        }
    }

    /// The canonical line, without its newline.
    pub fn render(&self) -> String {
        match self {
            Item::Binding(b) => json(&WireBinding {
                item: "binding".into(),
                v: VERSION,
                doc: hex16(b.doc),
                url: b.url.clone(),
                tragic: u8::from(b.tragic),
                types: wire_types(&b.bindings),
            }),
            Item::Stub(s) => json(&WireStub {
                item: "stub".into(),
                v: VERSION,
                key: hex16(s.key),
                section: s.section.clone(),
                urls: s.urls,
                tragic: u8::from(s.tragic),
                types: wire_types(&s.bindings),
            }),
            Item::QueryArgs(q) => json(&WireQueryArgs {
                item: "query_args".into(),
                v: VERSION,
                key: hex16(q.key),
                host: q.host.clone(),
                args: q.args.clone(),
            }),
        }
    }

    /// Reads one item (a trailing newline allowed), every rule checked.
    pub fn parse(line: &[u8]) -> Result<Item, ItemError> {
        if line.len() > MAX_ITEM_BYTES {
            return bad(format!("{} bytes, at most {MAX_ITEM_BYTES}", line.len()));
        }
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let value: serde_json::Value =
            serde_json::from_slice(line).map_err(|e| ItemError(format!("not JSON: {e}")))?;
        let Some(item) = value.get("item").and_then(|i| i.as_str()) else {
            return bad("no \"item\" name");
        };
        match item {
            "binding" => {
                let w: WireBinding = from(value)?;
                check_version(w.v)?;
                let tragic = flag("tragic", w.tragic)?;
                if w.url.is_empty() {
                    return bad("an empty url");
                }
                Ok(Item::Binding(PageBinding {
                    doc: parse_hex16("doc", &w.doc)?,
                    url: w.url,
                    tragic,
                    bindings: types(w.types, tragic)?,
                }))
            }
            "stub" => {
                let w: WireStub = from(value)?;
                check_version(w.v)?;
                let tragic = flag("tragic", w.tragic)?;
                if w.section.is_empty() {
                    return bad("an empty section");
                }
                Ok(Item::Stub(Stub {
                    key: parse_hex16("key", &w.key)?,
                    section: w.section,
                    urls: w.urls,
                    tragic,
                    bindings: types(w.types, tragic)?,
                }))
            }
            "query_args" => {
                let w: WireQueryArgs = from(value)?;
                check_version(w.v)?;
                if w.host.is_empty() || w.args.iter().any(String::is_empty) {
                    return bad("an empty host or argument");
                }
                if w.args.windows(2).any(|p| p[0] >= p[1]) {
                    return bad("arguments not sorted or repeated");
                }
                Ok(Item::QueryArgs(QueryArgs {
                    key: parse_hex16("key", &w.key)?,
                    host: w.host,
                    args: w.args,
                }))
            }
            other => bad(format!("unknown item {other:?}")),
        }
    }
}

impl QueryArgs {
    /// A host's insignificant arguments, sorted and each once.
    pub fn new(key: u64, host: &str, args: impl IntoIterator<Item = String>) -> QueryArgs {
        let mut args: Vec<String> = args.into_iter().filter(|a| !a.is_empty()).collect();
        args.sort();
        args.dedup();
        QueryArgs {
            key,
            host: host.to_owned(),
            args,
        }
    }
}

#[cfg(test)]
mod tests;
