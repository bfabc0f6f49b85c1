//! The `multidoc_page` row of each page of a batch: analysed, a duplicate sharing its group's
//! analysis, or refused; and what each adds to the figures.

use focuser_multidoc::classify::{Catalog, Categories, Model};
use focuser_multidoc::decode::DecodeError;
use focuser_multidoc::simhash::simhash;
use focuser_multidoc::{Analysis, Lang, Page};
use focuser_schema::models::{NewMultidocPage, PageOutcome};
use md5::{Digest, Md5};

use super::dups::Source;
use super::stats::Tally;
use super::take::PageIn;
use super::weigh::Env;

/// A page's main text as the groups see it: its MD5 and its fingerprint (`None`: no word).
pub struct Text {
    pub md5: String,
    pub simhash: Option<u64>,
}

impl Text {
    pub fn of(main_text: &str) -> Text {
        Text {
            md5: hex_md5(main_text.as_bytes()),
            simhash: simhash(main_text),
        }
    }
}

/// The row of a page that could not be analysed.
pub fn refused(p: &PageIn, e: &DecodeError, env: &Env, tally: &mut Tally) -> NewMultidocPage {
    let (outcome, kind) = match e {
        DecodeError::Empty => (PageOutcome::Empty, "empty"),
        DecodeError::Binary { .. } => (PageOutcome::Binary, "binary"),
        DecodeError::TooLarge { .. } => (PageOutcome::TooLarge, "too_large"),
    };
    log::debug!("multidoc: {}: not analysed: {e}", p.url);
    *tally.errors.entry(kind).or_insert(0) += 1;
    NewMultidocPage {
        id: p.id,
        outcome,
        lang: None,
        categories: None,
        category_names: None,
        main_md5: None,
        main_simhash: None,
        dup_group: None,
        template_share: None,
        model_checksum: None,
        analysed_at: env.now,
        counted_at: None,
        archive_file: p.place.file_id,
        archive_item: p.place.item_idx,
    }
}

/// The row of a page analysed, in group `group`.
pub fn analysed(
    p: &PageIn,
    page: &Page,
    model: Option<&Model>,
    (counted, text, group): (bool, Text, Option<u64>),
    env: &Env,
    tally: &mut Tally,
) -> NewMultidocPage {
    let a = &page.analysis;
    let lang = page.lang.code();
    tally.analysed += 1;
    *tally.langs.entry(lang).or_insert(0) += 1;
    tally.template_share += f64::from(a.template_share);
    let (categories, names) = match (&page.categories, model) {
        (Some(c), Some(m)) => {
            let (text, names) = category_text(c, m.catalog());
            match &names {
                Some(n) => *tally.categories.entry(n.clone()).or_insert(0) += 1,
                None => tally.uncategorised += 1,
            }
            (Some(text), names)
        }
        _ => (None, None),
    };
    NewMultidocPage {
        id: p.id,
        outcome: PageOutcome::Analysed,
        lang: Some(lang),
        categories,
        category_names: names,
        main_md5: Some(text.md5),
        main_simhash: text.simhash,
        dup_group: group,
        template_share: Some(a.template_share),
        model_checksum: model.map(Model::checksum),
        analysed_at: env.now,
        counted_at: counted.then_some(env.now),
        archive_file: p.place.file_id,
        archive_item: p.place.item_idx,
    }
}

/// The row of a duplicate in `group`: its own text, weighing and archive place; its
/// representative's categories (`source`); its language its own text's (as cheap as a look).
/// It is not counted into the evidence.
pub fn duplicate(
    p: &PageIn,
    a: &Analysis,
    (text, group): (Text, u64),
    source: &Source,
    env: &Env,
    tally: &mut Tally,
) -> NewMultidocPage {
    let lang = Lang::of(&a.main_text).code();
    tally.analysed += 1;
    *tally.langs.entry(lang).or_insert(0) += 1;
    tally.template_share += f64::from(a.template_share);
    if source.categories.is_some() {
        match &source.category_names {
            Some(n) => *tally.categories.entry(n.clone()).or_insert(0) += 1,
            None => tally.uncategorised += 1,
        }
    }
    NewMultidocPage {
        id: p.id,
        outcome: PageOutcome::Analysed,
        lang: Some(lang),
        categories: source.categories.clone(),
        category_names: source.category_names.clone(),
        main_md5: Some(text.md5),
        main_simhash: text.simhash,
        dup_group: Some(group),
        template_share: Some(a.template_share),
        model_checksum: source.model_checksum,
        analysed_at: env.now,
        counted_at: None,
        archive_file: p.place.file_id,
        archive_item: p.place.item_idx,
    }
}

/// The stored form of a category path (docs/formats.md "Page analysis tables"): each node
/// from the root as `id:posterior` (three decimals), joined by `,`, a `%`, `,` or `:` in an id
/// percent-encoded; and the deepest node's path names (`None` when the path is empty).
pub fn category_text(c: &Categories, catalog: &Catalog) -> (String, Option<String>) {
    let text: Vec<String> = c
        .path
        .iter()
        .map(|&(n, p)| {
            let id = catalog.node(n).map_or("?", |x| x.id.as_str());
            format!("{}:{p:.3}", escape(id))
        })
        .collect();
    let names = c.leaf().map(|(n, _)| catalog.path_names(n));
    (text.join(","), names)
}

fn escape(id: &str) -> String {
    id.replace('%', "%25")
        .replace(',', "%2C")
        .replace(':', "%3A")
}

fn hex_md5(bytes: &[u8]) -> String {
    Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
