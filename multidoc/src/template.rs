//! The templater's logic, without storage: a 64-bit fingerprint per block, a domain's
//! evidence (pages seen, and on how many of them each fingerprint was seen), and the weight a
//! block gets from its page-only weight and that evidence. A block seen on most of a domain's
//! pages is template (menu, footer, "related" box) and loses its weight; a block seen on this
//! page only keeps it. The domain is trusted only once it has shown enough pages
//! ([`TRUST_PAGES`], measured by `bench-multidoc`, see docs/multidoc.md).
//!
//! [`DomainEvidence`] is plain data: yacobot's worker loads a domain's rows from its table
//! ([`DomainEvidence::from_rows`]), weighs a page, adds it, and stores the changed rows
//! ([`DomainEvidence::rows`]). It is bounded by [`DomainEvidence::cap`] fingerprints.

use std::collections::HashMap;

use xxhash_rust::xxh3::Xxh3;

/// Pages a domain must have shown before its evidence counts fully (less: in proportion).
pub const TRUST_PAGES: u32 = 6;
/// The share of a domain's other pages a block must be on to count as wholly template.
pub const TEMPLATE_SHARE: f32 = 0.3;
/// Fingerprints kept per domain by default.
pub const DEFAULT_CAP: usize = 20_000;

/// A block's fingerprint: XXH3-64 of its normalised text (lower case, digits as `0`, only
/// letters and digits, one space between words) and its tag path, so that "Comments (12)"
/// and "Comments (13)" in the same place are one block.
pub fn fingerprint(text: &str, path: &str) -> u64 {
    let mut h = Xxh3::new();
    let mut buf = [0u8; 4];
    let mut space = false;
    let mut any = false;
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            if space && any {
                h.update(b" ");
            }
            space = false;
            any = true;
            let c = if c.is_numeric() { '0' } else { c };
            h.update(c.encode_utf8(&mut buf).as_bytes());
        } else {
            space = true;
        }
    }
    h.update(b"\0");
    h.update(path.as_bytes());
    h.digest()
}

/// What a domain's pages have shown about one fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Pages it was on.
    pub pages: u32,
    /// The domain's page count when it was last seen (for ageing and eviction).
    pub last_seen: u32,
}

/// One row of a domain's evidence, as the worker stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub fingerprint: u64,
    pub seen: Seen,
}

/// A domain's evidence, bounded.
#[derive(Debug, Clone)]
pub struct DomainEvidence {
    pages: u32,
    seen: HashMap<u64, Seen>,
    cap: usize,
}

impl Default for DomainEvidence {
    fn default() -> Self {
        Self::new(DEFAULT_CAP)
    }
}

impl DomainEvidence {
    /// No pages yet; at most `cap` fingerprints kept.
    pub fn new(cap: usize) -> Self {
        DomainEvidence {
            pages: 0,
            seen: HashMap::new(),
            cap: cap.max(1),
        }
    }

    /// The evidence as stored: pages sampled and the rows.
    pub fn from_rows(pages: u32, rows: impl IntoIterator<Item = Row>, cap: usize) -> Self {
        let mut e = Self::new(cap);
        e.pages = pages;
        e.seen = rows.into_iter().map(|r| (r.fingerprint, r.seen)).collect();
        e.evict();
        e
    }

    pub fn rows(&self) -> impl Iterator<Item = Row> + '_ {
        self.seen
            .iter()
            .map(|(&fingerprint, &seen)| Row { fingerprint, seen })
    }

    pub fn pages(&self) -> u32 {
        self.pages
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// On how many pages a fingerprint was seen.
    pub fn seen_on(&self, fingerprint: u64) -> u32 {
        self.seen.get(&fingerprint).map_or(0, |s| s.pages)
    }

    /// Adds a page's fingerprints (a block repeated within the page counts once).
    pub fn add_page(&mut self, fingerprints: impl IntoIterator<Item = u64>) {
        self.pages = self.pages.saturating_add(1);
        let mut page: Vec<u64> = fingerprints.into_iter().collect();
        page.sort_unstable();
        page.dedup();
        for fp in page {
            let s = self.seen.entry(fp).or_insert(Seen {
                pages: 0,
                last_seen: 0,
            });
            s.pages = s.pages.saturating_add(1);
            s.last_seen = self.pages;
        }
        self.evict();
    }

    /// Over the cap, the fingerprints seen on fewest pages, and of those the least recently,
    /// go first, down to 90 % of the cap (so that eviction is not paid on every page).
    fn evict(&mut self) {
        if self.seen.len() <= self.cap {
            return;
        }
        let keep = self.cap - self.cap / 10;
        let mut all: Vec<(u32, u32, u64)> = self
            .seen
            .iter()
            .map(|(&fp, s)| (s.pages, s.last_seen, fp))
            .collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        for &(_, _, fp) in &all[keep..] {
            self.seen.remove(&fp);
        }
    }

    /// How much the evidence is trusted (0–1): in proportion to the other pages seen, up to
    /// [`TRUST_PAGES`].
    pub fn trust(&self, includes_page: bool) -> f32 {
        let others = self.pages.saturating_sub(u32::from(includes_page));
        (others as f32 / TRUST_PAGES as f32).min(1.0)
    }

    /// How template a block is (0–1): the share of the domain's other pages it was seen on,
    /// over [`TEMPLATE_SHARE`]. `includes_page` says whether this page was already added.
    pub fn template(&self, fingerprint: u64, includes_page: bool) -> f32 {
        let own = u32::from(includes_page);
        let others = self.pages.saturating_sub(own);
        if others == 0 {
            return 0.0;
        }
        let on = self.seen_on(fingerprint).saturating_sub(own);
        (on as f32 / others as f32 / TEMPLATE_SHARE).min(1.0)
    }

    /// A block's weight with the domain's evidence: the page-only weight, less the trusted
    /// share of template.
    pub fn weight(&self, page_weight: f32, fingerprint: u64, includes_page: bool) -> f32 {
        let t = self.trust(includes_page) * self.template(fingerprint, includes_page);
        page_weight * (1.0 - t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_ignore_case_digits_and_punctuation_but_not_place() {
        let a = fingerprint("Comments (12)", "div>p");
        assert_eq!(a, fingerprint("  comments: 13 ", "div>p"));
        assert_ne!(a, fingerprint("Comments (12)", "div>li"));
        assert_ne!(a, fingerprint("Comment s (12)", "div>p"));
    }

    #[test]
    fn the_cap_keeps_the_most_frequent() {
        let mut e = DomainEvidence::new(10);
        for page in 0..20u64 {
            e.add_page([1, 2, 100 + page]);
        }
        assert!(e.len() <= 10);
        assert_eq!((e.seen_on(1), e.seen_on(2), e.pages()), (20, 20, 20));
        assert_eq!(e.seen_on(119), 1, "the latest unique one stays");
        let back = DomainEvidence::from_rows(e.pages(), e.rows(), 5);
        assert_eq!((back.len() <= 5, back.seen_on(1)), (true, 20));
    }
}
