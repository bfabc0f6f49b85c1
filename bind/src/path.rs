//! The path binder's logic ("Path Binder"): a stub for each site section — host and URL path
//! prefix, down to a configured depth — made of its pages' bindings, so that the ad server has
//! something for a page of the section it has no binding for yet. The rules (docs/bindings.md):
//!
//! 1. a page belongs to its host's root section and to each directory prefix of its path, down to
//!    `depth` directories (`example.com/`, `example.com/news/`, `example.com/news/world/`);
//! 2. a section with fewer than `min_urls` bound pages gets no stub (an existing one is
//!    withdrawn);
//! 3. per binding type, a phrase (by its text) or a category (by its id) is kept when at least
//!    `min_share` of the section's bound pages have it, the most frequent first (ties: the
//!    larger sum of relevances, then the text), at most `max_phrases` and `max_categories`;
//!    its value in the stub is that share;
//! 4. when at least `tragic_share` of the pages are tragic the stub is tragic: no phrases, as for
//!    a tragic page; tragic pages' phrases never count (they have none), but the pages do.
//!
//! [`changes`] compares the stubs built with the stored ones: what to ship, what to withdraw.

use std::collections::BTreeMap;

use md5::{Digest, Md5};
use rustc_hash::FxHashMap;

use crate::adserver::{Item, Stub};
use crate::binding::{md5_hex, thousandths, Binding, BoundPhrase, PageBinding};
use crate::dict::Kind;

/// The path binder's rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// Directories below the host's root a section may go down to (0: the root only).
    pub depth: usize,
    /// `PathBinder.MinUrls`: fewer bound pages and the section has no stub.
    pub min_urls: usize,
    /// A phrase or category in fewer of the pages is left out.
    pub min_share: f32,
    pub max_phrases: usize,
    pub max_categories: usize,
    /// This share of tragic pages or more makes the stub tragic.
    pub tragic_share: f32,
}

impl Default for Rules {
    fn default() -> Self {
        Self {
            depth: 2,
            min_urls: 10,
            min_share: 0.2,
            max_phrases: 20,
            max_categories: 5,
            tragic_share: 0.5,
        }
    }
}

/// A section's id, its stub's key: the first 8 bytes of the MD5 of its name, big-endian.
pub fn section_id(section: &str) -> u64 {
    let d = Md5::digest(section.as_bytes());
    d.iter().take(8).fold(0u64, |x, &b| (x << 8) | u64::from(b))
}

/// The sections `url` belongs to, from the host's root down to `depth` directories: `host/`,
/// `host/dir/`, ... (the host lower-cased, its port kept, user info dropped; the last path
/// segment is a directory only when the path ends with `/`). None for what is no
/// `scheme://host...` URL.
pub fn sections(url: &str, depth: usize) -> Vec<String> {
    let Some((_, rest)) = url.split_once("://") else {
        return Vec::new();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, rest) = rest.split_at(end);
    let host = authority
        .rsplit('@')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if host.is_empty() {
        return Vec::new();
    }
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let mut section = format!("{host}/");
    let mut out = vec![section.clone()];
    // The segments before the last `/`: the directories.
    let dirs = path.rsplit_once('/').map_or("", |(d, _)| d);
    for dir in dirs.split('/').filter(|d| !d.is_empty()).take(depth) {
        section.push_str(dir);
        section.push('/');
        out.push(section.clone());
    }
    out
}

/// The stubs of the sections of `pages` (a site's bound pages) that have enough of them, by
/// section name.
pub fn stubs<'a>(pages: impl IntoIterator<Item = &'a PageBinding>, rules: &Rules) -> Vec<Stub> {
    let mut by_section: BTreeMap<String, Vec<&PageBinding>> = BTreeMap::new();
    for page in pages {
        for s in sections(&page.url, rules.depth) {
            by_section.entry(s).or_default().push(page);
        }
    }
    by_section
        .into_iter()
        .filter(|(_, pages)| pages.len() >= rules.min_urls.max(1))
        .map(|(section, pages)| stub(section, &pages, rules))
        .collect()
}

/// One section's stub from its pages.
fn stub(section: String, pages: &[&PageBinding], rules: &Rules) -> Stub {
    let n = pages.len();
    let tragic_pages = pages.iter().filter(|p| p.tragic).count();
    let tragic = tragic_pages as f32 >= rules.tragic_share * n as f32;
    let bindings = Kind::ALL
        .into_iter()
        .filter_map(|kind| {
            let of_kind: Vec<&Binding> = pages.iter().filter_map(|p| p.binding(kind)).collect();
            let b = aggregate(kind, &of_kind, n, tragic, rules);
            (!b.phrases.is_empty() || !b.categories.is_empty()).then_some(b)
        })
        .collect();
    Stub {
        key: section_id(&section),
        section,
        urls: n as u32,
        tragic,
        bindings,
    }
}

/// What a thing is found in: pages, the sum of its values, and (phrases) its advertisers.
#[derive(Default)]
struct Tally {
    pages: usize,
    sum: u32,
    advertisers: u32,
}

fn aggregate(kind: Kind, bindings: &[&Binding], n: usize, tragic: bool, rules: &Rules) -> Binding {
    let mut phrases: FxHashMap<&str, Tally> = FxHashMap::default();
    let mut categories: FxHashMap<&str, Tally> = FxHashMap::default();
    let mut versions: FxHashMap<u64, usize> = FxHashMap::default();
    for b in bindings {
        *versions.entry(b.dict_version).or_default() += 1;
        for p in &b.phrases {
            let t = phrases.entry(&p.text).or_default();
            t.pages += 1;
            t.sum += u32::from(p.relevance);
            t.advertisers = t.advertisers.max(p.advertisers);
        }
        for (id, p) in &b.categories {
            let t = categories.entry(id).or_default();
            t.pages += 1;
            t.sum += u32::from(*p);
        }
    }
    let phrases = if tragic {
        Vec::new()
    } else {
        frequent(phrases, n, rules.min_share, rules.max_phrases)
            .into_iter()
            .map(|(text, share, t)| BoundPhrase {
                text: text.to_owned(),
                relevance: share,
                advertisers: t.advertisers,
            })
            .collect()
    };
    let categories = frequent(categories, n, rules.min_share, rules.max_categories)
        .into_iter()
        .map(|(id, share, _)| (id.to_owned(), share))
        .collect();
    // The version most of the pages were bound with (the larger one on a tie).
    let dict_version = versions
        .into_iter()
        .max_by_key(|&(v, c)| (c, v))
        .map_or(0, |(v, _)| v);
    Binding {
        kind,
        dict_version,
        categories,
        phrases,
    }
}

/// The things in at least `min_share` of `n` pages, most frequent first, with their share.
fn frequent(
    tally: FxHashMap<&str, Tally>,
    n: usize,
    min_share: f32,
    max: usize,
) -> Vec<(&str, u16, Tally)> {
    let n = n.max(1);
    let mut kept: Vec<(&str, Tally)> = tally
        .into_iter()
        .filter(|(_, t)| t.pages as f32 >= min_share * n as f32)
        .collect();
    kept.sort_by(|a, b| {
        (b.1.pages, b.1.sum)
            .cmp(&(a.1.pages, a.1.sum))
            .then_with(|| a.0.cmp(b.0))
    });
    kept.truncate(max);
    kept.into_iter()
        .map(|(x, t)| (x, thousandths(t.pages as f32 / n as f32), t))
        .collect()
}

impl Stub {
    /// Lower-case hex MD5 of its item.
    pub fn md5(&self) -> String {
        md5_hex(Item::Stub(self.clone()).render().as_bytes())
    }
}

/// What the path binder does with a stub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// New or changed: store and ship it.
    Ship(Stub),
    /// The section lost its stub (too few pages now): delete it, ship a `DELETE`.
    Withdraw(u64),
}

/// The changes from the stored stubs (`key`, MD5) of a site to the ones just built: unchanged
/// stubs are not shipped again. Withdrawals first, then by section.
pub fn changes(stored: &[(u64, String)], built: Vec<Stub>) -> Vec<Change> {
    let (withdrawn, shipped) = diff(stored, built, |s| s.key, Stub::md5);
    let mut out: Vec<Change> = withdrawn.into_iter().map(Change::Withdraw).collect();
    out.extend(shipped.into_iter().map(Change::Ship));
    out
}

/// The same comparison for any keyed things with an MD5 (the path binder's stubs and query
/// arguments items): the stored keys no longer built (sorted, each once), and the things built
/// that are new or changed, in their order.
pub fn diff<T>(
    stored: &[(u64, String)],
    built: Vec<T>,
    key: impl Fn(&T) -> u64,
    md5: impl Fn(&T) -> String,
) -> (Vec<u64>, Vec<T>) {
    let stored_md5: FxHashMap<u64, &str> = stored.iter().map(|(k, m)| (*k, m.as_str())).collect();
    let built_keys: rustc_hash::FxHashSet<u64> = built.iter().map(&key).collect();
    let mut withdrawn: Vec<u64> = stored
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| !built_keys.contains(k))
        .collect();
    withdrawn.sort_unstable();
    withdrawn.dedup();
    let shipped = built
        .into_iter()
        .filter(|s| stored_md5.get(&key(s)) != Some(&md5(s).as_str()))
        .collect();
    (withdrawn, shipped)
}

#[cfg(test)]
mod tests;
