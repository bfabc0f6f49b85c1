//! Merging (docs/design.md#yacobot-qargfilter, "Merging"), without I/O: which URLs of a path
//! carry an argument the path's rules call insignificant, and the canonical URL each merges
//! into — the URL without those arguments, as the loader would store it, under its own id.

use std::collections::BTreeMap;

use focuser_formats::urls;
use focuser_schema::models::{Merge, PathPage};
use rustc_hash::FxHashSet;

/// A canonical URL and the variants to merge into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub id: u64,
    pub url: String,
    pub domain: String,
    pub path_hash: u64,
    pub variants: Vec<u64>,
}

impl Planned {
    pub fn merge(&self) -> Merge<'_> {
        Merge {
            id: self.id,
            url: &self.url,
            domain: &self.domain,
            path_hash: self.path_hash,
            variants: self.variants.clone(),
        }
    }
}

/// The merges of `pages` (of one path or several), given each path's insignificant argument
/// names; URLs marked for withdrawal already are left alone. Ordered by canonical id.
pub fn plan<'a>(
    pages: &[PathPage],
    insignificant: impl Fn(u64) -> Option<&'a FxHashSet<String>>,
) -> Vec<Planned> {
    let mut by_canonical: BTreeMap<u64, Planned> = BTreeMap::new();
    for p in pages {
        if p.withdraw.is_some() {
            continue;
        }
        let Some(names) = insignificant(p.path_hash).filter(|n| !n.is_empty()) else {
            continue;
        };
        let canonical = urls::without_args(&p.url, |arg| names.contains(urls::arg_name(arg)));
        // Dropping an argument always shortens the URL (as the loader knows).
        if canonical.len() == p.url.len() {
            continue;
        }
        let id = urls::url_id(&canonical);
        by_canonical
            .entry(id)
            .or_insert_with(|| Planned {
                id,
                url: canonical.into_owned(),
                domain: p.domain.clone(),
                path_hash: p.path_hash,
                variants: Vec::new(),
            })
            .variants
            .push(p.id);
    }
    by_canonical.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url: &str) -> PathPage {
        PathPage {
            id: urls::url_id(url),
            url: url.to_string(),
            domain: "a.ru".into(),
            path_hash: urls::path_hash(url),
            claim_expires: None,
            withdraw: None,
            main_md5: None,
            main_simhash: None,
        }
    }

    #[test]
    fn variants_merge_into_the_url_the_loader_would_store() {
        let mut pages: Vec<PathPage> = [
            "http://a.ru/p?id=1&sid=x",
            "http://a.ru/p?id=1&sid=y&utm_source=z",
            "http://a.ru/p?id=1",
            "http://a.ru/p?sid=q",
            "http://a.ru/p?id=2",
            "http://a.ru/p?id=3&sid=w",
        ]
        .iter()
        .map(|u| page(u))
        .collect();
        pages[5].withdraw = Some(focuser_schema::models::WithdrawReason::Merged);
        let rules: FxHashSet<String> = ["sid", "utm_source"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let path = urls::path_hash("http://a.ru/p");
        let plan = plan(&pages, |p| (p == path).then_some(&rules));
        let mut got: Vec<(String, Vec<u64>)> = plan
            .iter()
            .map(|m| (m.url.clone(), m.variants.clone()))
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("http://a.ru/p".to_string(), vec![pages[3].id]),
                (
                    "http://a.ru/p?id=1".to_string(),
                    vec![pages[0].id, pages[1].id]
                ),
            ]
        );
        for m in &plan {
            assert_eq!(m.id, urls::url_id(&m.url));
            assert_eq!(m.merge().variants, m.variants);
        }
        // No rules, or none insignificant: nothing to merge.
        assert!(super::plan(&pages, |_| None).is_empty());
        let none = FxHashSet::default();
        assert!(super::plan(&pages, |_| Some(&none)).is_empty());
    }
}
