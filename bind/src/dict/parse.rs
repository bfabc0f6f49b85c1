//! A dictionary file, line by line: the header, the columns of its kind, each phrase's words
//! (the tokenizer's stems), refused whole at the first bad line with the file and the line.

use focuser_multidoc::classify::Catalog;
use focuser_multidoc::tokenize::Tokenizer;
use md5::{Digest, Md5};
use rustc_hash::FxHashMap;

use super::{Category, DictError, Dictionary, Kind};
use crate::index::{Builder, Built};

/// Longest line read, in bytes: longer ones are refused before being decoded.
pub const MAX_LINE_BYTES: usize = 4096;
/// Longest phrase, in bytes (white space collapsed): it must fit the ad-server item's field.
pub const MAX_PHRASE_BYTES: usize = 255;
/// Most words a phrase may have once normalised.
pub const MAX_PHRASE_WORDS: usize = 8;
/// Longest category id, in bytes.
const MAX_CATEGORY_BYTES: usize = 64;

const MAGIC: &str = "#focuser-dictionary";
const FORMAT: u32 = 1;

/// One line's content, before compiling.
struct Row {
    line: u32,
    text: String,
    advertisers: u32,
    category: u32,
}

pub(super) fn parse(
    file: &str,
    bytes: &[u8],
    expected: Option<Kind>,
    catalog: Option<&Catalog>,
    tokenizer: &mut Tokenizer,
) -> Result<Dictionary, DictError> {
    let bad = |line: usize, reason: String| DictError {
        file: file.to_owned(),
        line,
        reason,
    };
    if bytes.len() > u32::MAX as usize {
        return Err(bad(
            0,
            format!("{} bytes, at most {}", bytes.len(), u32::MAX),
        ));
    }
    let mut lines = bytes.split(|&b| b == b'\n').enumerate();
    let header = lines.next().map_or(&[][..], |(_, l)| l);
    let kind = header_kind(strip_cr(header)).map_err(|r| bad(1, r))?;
    if let Some(e) = expected.filter(|&e| e != kind) {
        return Err(bad(
            1,
            format!("a {} dictionary, {} expected", kind.name(), e.name()),
        ));
    }
    let mut rows: Vec<Row> = Vec::new();
    let mut builder = Builder::new();
    let mut categories: Vec<Category> = Vec::new();
    let mut category_of: FxHashMap<String, u32> = FxHashMap::default();
    let mut stems: Vec<String> = Vec::new();
    let last = bytes.split(|&b| b == b'\n').count();
    for (i, raw) in lines {
        let n = i + 1;
        if n == last && raw.is_empty() {
            break; // the file's final newline
        }
        if raw.len() > MAX_LINE_BYTES {
            return Err(bad(
                n,
                format!("a line of {} bytes, at most {MAX_LINE_BYTES}", raw.len()),
            ));
        }
        let line = std::str::from_utf8(strip_cr(raw)).map_err(|e| {
            bad(
                n,
                format!("not UTF-8 (byte {} of the line)", e.valid_up_to() + 1),
            )
        })?;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let (phrase, advertisers, category) = columns(kind, &cols).map_err(|r| bad(n, r))?;
        let text = phrase_text(phrase).map_err(|r| bad(n, r))?;
        phrase_stems(tokenizer, &text, &mut stems).map_err(|r| bad(n, r))?;
        let category = match category {
            None => u32::MAX,
            Some(id) => {
                if let Some(&c) = category_of.get(id) {
                    c
                } else {
                    let c = category_of_id(id, catalog).map_err(|r| bad(n, r))?;
                    let at = categories.len() as u32;
                    categories.push(c);
                    category_of.insert(id.to_owned(), at);
                    at
                }
            }
        };
        builder.add(stems.iter().map(String::as_str));
        rows.push(Row {
            line: n as u32,
            text,
            advertisers,
            category,
        });
    }
    compile(file, kind, builder.build(), rows, categories)
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The kind a header line declares: `#focuser-dictionary 1 kind=direct`.
fn header_kind(line: &[u8]) -> Result<Kind, String> {
    let expected = format!("the first line must be `{MAGIC} {FORMAT} kind=direct|market|media`");
    let line = std::str::from_utf8(line).map_err(|_| expected.clone())?;
    let mut words = line.split(' ').filter(|w| !w.is_empty());
    if words.next() != Some(MAGIC) {
        return Err(format!("not a dictionary file: {expected}"));
    }
    let version = words.next().unwrap_or("");
    if version != FORMAT.to_string() {
        return Err(format!(
            "dictionary format {version:?}, this program reads format {FORMAT}"
        ));
    }
    let kind = words.next().and_then(|w| w.strip_prefix("kind="));
    let Some(kind) = kind.and_then(Kind::from_name) else {
        return Err(expected);
    };
    if let Some(extra) = words.next() {
        return Err(format!("unexpected {extra:?} in the header"));
    }
    Ok(kind)
}

/// The phrase, advertisers and category of a line's columns, as its kind has them.
fn columns<'a>(kind: Kind, cols: &[&'a str]) -> Result<(&'a str, u32, Option<&'a str>), String> {
    match (kind, cols) {
        (Kind::Direct, [p, a]) => Ok((p, advertisers(a)?, None)),
        (Kind::Direct, [p, a, c]) => Ok((p, advertisers(a)?, Some(c.trim()))),
        (Kind::Direct, _) => Err(format!(
            "{} columns, a direct phrase is `phrase \\t advertisers [\\t category]`",
            cols.len()
        )),
        (_, [p, c]) => Ok((p, 0, Some(c.trim()))),
        (_, _) => Err(format!(
            "{} columns, a {} phrase is `phrase \\t category`",
            cols.len(),
            kind.name()
        )),
    }
}

fn advertisers(col: &str) -> Result<u32, String> {
    let col = col.trim();
    if col.is_empty() || !col.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "advertisers {col:?}: not a non-negative whole number"
        ));
    }
    col.parse()
        .map_err(|_| format!("advertisers {col}: more than {}", u32::MAX))
}

/// The phrase as it will be delivered: trimmed, white space collapsed, no control characters.
fn phrase_text(col: &str) -> Result<String, String> {
    if let Some(c) = col.chars().find(|c| c.is_control()) {
        return Err(format!("a control character ({:?}) in the phrase", c));
    }
    let text = col.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err("an empty phrase".into());
    }
    if text.len() > MAX_PHRASE_BYTES {
        return Err(format!(
            "a phrase of {} bytes, at most {MAX_PHRASE_BYTES}",
            text.len()
        ));
    }
    Ok(text)
}

/// The phrase's stems into `out`, or why it cannot be a phrase.
fn phrase_stems(t: &mut Tokenizer, text: &str, out: &mut Vec<String>) -> Result<(), String> {
    out.clear();
    let mut link = false;
    t.stems(text, |w| {
        link |= w.link;
        out.push(w.text.to_owned());
    });
    if link {
        return Err("a link or an e-mail address is not a phrase".into());
    }
    if out.is_empty() {
        return Err(format!(
            "{text:?} has no words once normalised (only stop words or punctuation)"
        ));
    }
    if out.len() > MAX_PHRASE_WORDS {
        return Err(format!(
            "{} words once normalised, at most {MAX_PHRASE_WORDS}",
            out.len()
        ));
    }
    Ok(())
}

/// A category id, with its ancestors from the catalog.
fn category_of_id(id: &str, catalog: Option<&Catalog>) -> Result<Category, String> {
    if id.is_empty() || id.len() > MAX_CATEGORY_BYTES || id.contains(char::is_whitespace) {
        return Err(format!(
            "category {id:?}: an id of 1 to {MAX_CATEGORY_BYTES} bytes without spaces expected"
        ));
    }
    let chain = match catalog {
        None => vec![id.to_owned()],
        Some(c) => {
            let Some(i) = c.by_id(id) else {
                return Err(format!("category {id:?} is not in the catalog"));
            };
            c.path(i)
                .into_iter()
                .filter_map(|n| c.node(n).map(|x| x.id.clone()))
                .collect()
        }
    };
    Ok(Category {
        id: id.to_owned(),
        chain,
    })
}

/// The rows in the index's order, duplicates refused, rarity and version computed.
fn compile(
    file: &str,
    kind: Kind,
    built: Built,
    rows: Vec<Row>,
    categories: Vec<Category>,
) -> Result<Dictionary, DictError> {
    let Built { index, order, df } = built;
    let n = rows.len();
    for p in 1..n as u32 {
        if index.phrase(p - 1) == index.phrase(p) {
            let (a, b) = (
                &rows[order[p as usize - 1] as usize],
                &rows[order[p as usize] as usize],
            );
            let (first, second) = if a.line < b.line { (a, b) } else { (b, a) };
            return Err(DictError {
                file: file.to_owned(),
                line: second.line as usize,
                reason: format!(
                    "{:?} has the same words as line {} ({:?})",
                    second.text, first.line, first.text
                ),
            });
        }
    }
    let ln_n = (n.max(2) as f32).ln();
    let mut d = Dictionary {
        kind,
        name: file.to_owned(),
        version: 0,
        index,
        text: String::new(),
        text_at: Vec::with_capacity(n + 1),
        advertisers: Vec::with_capacity(n),
        category: Vec::with_capacity(n),
        categories,
        rarity: Vec::with_capacity(n),
        line: Vec::with_capacity(n),
    };
    let mut rows: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
    let mut md5 = Md5::new();
    md5.update(kind.name().as_bytes());
    md5.update(b"\n");
    d.text_at.push(0);
    for (p, &o) in order.iter().enumerate() {
        let Some(row) = rows.get_mut(o as usize).and_then(Option::take) else {
            continue;
        };
        let ids = d.index.phrase(p as u32);
        let rarest = ids
            .iter()
            .map(|&s| df.get(s as usize).copied().unwrap_or(1).max(1))
            .min()
            .unwrap_or(1);
        let rarity = if n < 2 {
            1.0
        } else {
            ((n as f32 / rarest as f32).ln() / ln_n).clamp(0.0, 1.0)
        };
        for (k, &s) in ids.iter().enumerate() {
            if k > 0 {
                md5.update(b" ");
            }
            md5.update(d.index.stem(s).as_bytes());
        }
        let category = d
            .categories
            .get(row.category as usize)
            .map_or("", |c| &c.id);
        md5.update(format!("\t{}\t{}\t{}\n", row.advertisers, category, row.text).as_bytes());
        d.text.push_str(&row.text);
        d.text_at.push(d.text.len() as u32);
        d.advertisers.push(row.advertisers);
        d.category.push(row.category);
        d.rarity.push(rarity);
        d.line.push(row.line);
    }
    d.text.shrink_to_fit();
    let digest = md5.finalize();
    let mut v = [0u8; 8];
    v.copy_from_slice(&digest[..8]);
    d.version = u64::from_be_bytes(v);
    Ok(d)
}
