//! How `yacobot analyze` shows a page: a text report for people, or one JSON object per line
//! (the schema is docs/operations.md's, "Page analysis tools"; keep both stable).

use std::io::Write;

use focuser_multidoc::classify::Model;
use focuser_multidoc::decode::CharsetFrom;
use focuser_multidoc::segment::{FALLBACK_SHARE, MAIN_THRESHOLD};
use focuser_multidoc::tokenize::Bag;
use focuser_multidoc::Page;
use serde::Serialize;

use focuser_bind::PageBinding;

use super::{bound, round};

/// Characters of a block's text the text report shows (JSON has it whole).
const SHOWN_CHARS: usize = 100;

/// A page and what to show of it.
pub struct Shown<'a> {
    /// The file or URL as given.
    pub source: &'a str,
    /// The URL its URL words came from.
    pub url: Option<&'a str>,
    pub page: &'a Page,
    /// The model and its file, when there is one.
    pub model: Option<(&'a str, &'a Model)>,
    /// Top words shown (0: all).
    pub words: usize,
    /// The page's binding with the dictionaries given (none given: only the tragic flag).
    pub binding: &'a PageBinding,
}

#[derive(Serialize)]
struct PageJson<'a> {
    source: &'a str,
    url: Option<&'a str>,
    encoding: &'a str,
    charset_from: &'static str,
    title: Option<&'a str>,
    lang: &'a str,
    blocks: Vec<BlockJson<'a>>,
    main_text: &'a str,
    template_share: f64,
    words: Vec<WordJson>,
    url_words: Vec<WordJson>,
    /// None: no model; empty: no category passed the model's threshold.
    categories: Option<Vec<CategoryJson<'a>>>,
    evidence: Vec<WordJson>,
    model: Option<ModelJson<'a>>,
    tragic: u8,
    bindings: Vec<bound::BindingJson<'a>>,
}

#[derive(Serialize)]
struct BlockJson<'a> {
    text: &'a str,
    weight: f64,
    page_weight: f64,
    main: bool,
    path: &'a str,
    heading: u8,
    link_density: f64,
}

#[derive(Serialize)]
struct WordJson {
    word: String,
    weight: f64,
}

#[derive(Serialize)]
struct CategoryJson<'a> {
    id: &'a str,
    name: &'a str,
    posterior: f64,
}

#[derive(Serialize)]
struct ModelJson<'a> {
    file: &'a str,
    checksum: String,
}

/// Where the charset was found, as the output names it.
fn charset_from(from: CharsetFrom) -> &'static str {
    match from {
        CharsetFrom::Bom => "bom",
        CharsetFrom::Header => "header",
        CharsetFrom::Meta => "meta",
        CharsetFrom::Detector => "detector",
    }
}

/// The weight from which a block is main content: `segment::main_text`'s rule (the
/// threshold, or half the best weight when no block reaches it).
fn main_cut(weights: &[f32]) -> f32 {
    let best = weights.iter().copied().fold(0.0f32, f32::max);
    if best >= MAIN_THRESHOLD {
        MAIN_THRESHOLD
    } else {
        best * FALLBACK_SHARE
    }
}

fn top(bag: &Bag, n: usize) -> Vec<WordJson> {
    let n = if n == 0 { bag.len() } else { n };
    bag.top(n)
        .into_iter()
        .map(|(w, x)| WordJson {
            word: w.to_owned(),
            weight: round(x),
        })
        .collect()
}

/// The words that weighed most for the deepest category (none without one).
fn evidence(s: &Shown<'_>) -> Vec<WordJson> {
    let (Some((_, m)), Some(leaf)) = (s.model, s.page.categories.as_ref().and_then(|c| c.leaf()))
    else {
        return Vec::new();
    };
    let n = if s.words == 0 { usize::MAX } else { s.words };
    m.evidence(&s.page.features, leaf.0, n)
        .into_iter()
        .map(|(word, x)| WordJson {
            word,
            weight: round(x),
        })
        .collect()
}

/// One JSON object on one line.
pub fn json(out: &mut impl Write, s: &Shown<'_>) -> std::io::Result<()> {
    let a = &s.page.analysis;
    let cut = main_cut(&a.weights);
    let blocks = a
        .blocks
        .iter()
        .zip(&a.weights)
        .map(|(b, &w)| BlockJson {
            text: &b.text,
            weight: round(w),
            page_weight: round(b.weight),
            main: w >= cut && w > 0.0,
            path: &b.path,
            heading: b.heading,
            link_density: round(b.link_density()),
        })
        .collect();
    let categories = s.model.map(|(_, m)| {
        let path = s.page.categories.as_ref().map_or(&[][..], |c| &c.path[..]);
        path.iter()
            .filter_map(|&(n, p)| {
                let node = m.catalog().node(n)?;
                Some(CategoryJson {
                    id: &node.id,
                    name: &node.name,
                    posterior: round(p),
                })
            })
            .collect()
    });
    let j = PageJson {
        source: s.source,
        url: s.url,
        encoding: a.encoding,
        charset_from: charset_from(a.charset_from),
        title: a.title.as_deref(),
        lang: s.page.lang.code(),
        blocks,
        main_text: &a.main_text,
        template_share: round(a.template_share),
        words: top(&s.page.features.words, s.words),
        url_words: top(&s.page.features.url, s.words),
        categories,
        evidence: evidence(s),
        model: s.model.map(|(file, m)| ModelJson {
            file,
            checksum: format!("{:08x}", m.checksum()),
        }),
        tragic: u8::from(s.binding.tragic),
        bindings: bound::json(s.binding),
    };
    serde_json::to_writer(&mut *out, &j)?;
    writeln!(out)
}

/// A block's text on one line, cut for the table.
fn shown_text(text: &str) -> String {
    let one_line = text.replace('\n', " ⏎ ");
    match one_line.char_indices().nth(SHOWN_CHARS) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

fn word_list(words: &[WordJson]) -> String {
    if words.is_empty() {
        return "(none)".into();
    }
    let parts: Vec<String> = words
        .iter()
        .map(|w| format!("{} {:.2}", w.word, w.weight))
        .collect();
    parts.join(", ")
}

/// The report for people.
pub fn text(out: &mut impl Write, s: &Shown<'_>) -> std::io::Result<()> {
    let a = &s.page.analysis;
    writeln!(out, "== {}", s.source)?;
    if let Some(u) = s.url {
        writeln!(out, "url         {u}")?;
    }
    writeln!(
        out,
        "encoding    {} (from the {})",
        a.encoding,
        charset_from(a.charset_from)
    )?;
    writeln!(
        out,
        "title       {}",
        a.title.as_deref().unwrap_or("(none)")
    )?;
    writeln!(out, "language    {}", s.page.lang.code())?;
    let cut = main_cut(&a.weights);
    let main = a.weights.iter().filter(|&&w| w >= cut && w > 0.0).count();
    writeln!(
        out,
        "blocks      {} ({main} main content, {} characters of main text); template share {:.2}",
        a.blocks.len(),
        a.main_text.chars().count(),
        a.template_share
    )?;
    writeln!(out, "     #  weight  page  main  path  text")?;
    for (b, &w) in a.blocks.iter().zip(&a.weights) {
        let mark = if w >= cut && w > 0.0 { "*" } else { " " };
        writeln!(
            out,
            "  {:>4}  {w:.3}  {:.3}  {mark}     {}  {}",
            b.position,
            b.weight,
            b.path,
            shown_text(&b.text)
        )?;
    }
    writeln!(
        out,
        "words       {}",
        word_list(&top(&s.page.features.words, s.words))
    )?;
    writeln!(
        out,
        "url words   {}",
        word_list(&top(&s.page.features.url, s.words))
    )?;
    categories_text(out, s)?;
    bound::text(out, s.binding)?;
    writeln!(out)
}

fn categories_text(out: &mut impl Write, s: &Shown<'_>) -> std::io::Result<()> {
    let Some((file, m)) = s.model else {
        return writeln!(
            out,
            "categories  none: no model (give --model M, or -c with a config whose MultiDoc.Model is set)"
        );
    };
    let path = s.page.categories.clone().unwrap_or_default();
    let Some((leaf, _)) = path.leaf() else {
        let best = m
            .posteriors(&s.page.features)
            .into_iter()
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let best = match best {
            Some((n, p)) if !s.page.features.words.is_empty() => {
                format!(
                    "; the most probable, {} ({p:.2})",
                    m.catalog().path_names(n)
                )
            }
            _ => "; the page has no word the model knows".into(),
        };
        return writeln!(
            out,
            "categories  none passed the threshold {:.2}{best}  [model {file}]",
            m.params().threshold
        );
    };
    writeln!(
        out,
        "categories  {}  [model {file}, {:08x}]",
        path.describe(m.catalog(), usize::MAX),
        m.checksum()
    )?;
    let name = m.catalog().node(leaf).map_or("?", |n| n.name.as_str());
    writeln!(out, "why         {name}: {}", word_list(&evidence(s)))
}
