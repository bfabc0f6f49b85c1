//! The templater on the multi-page sites: each site's pages analysed with the evidence of all
//! of them (as `yacobot analyze --site DIR` does), against page-only; and how many pages the
//! evidence needs before it helps (the trust rule's [`TRUST_PAGES`]).

use std::collections::BTreeMap;

use focuser_multidoc::decode::DEFAULT_MAX_BYTES;
use focuser_multidoc::segment::{main_text, MAIN_THRESHOLD};
use focuser_multidoc::template::{DomainEvidence, TRUST_PAGES};
use focuser_multidoc::{analyze, Analysis, Evidence};

use crate::data::Page;
use crate::metrics::word_prf;

/// One site's figures.
pub struct Site {
    pub name: String,
    pub pages: usize,
    pub page_only: f64,
    pub with_site: f64,
    /// Share of the blocks' bytes judged template (mean over pages).
    pub template_share: f64,
}

/// The analyses of a site's pages, page-only.
fn analyses<'a>(pages: &[&'a Page]) -> Vec<(&'a Page, Analysis)> {
    pages
        .iter()
        .filter_map(|p| Some((*p, analyze(&p.html, None, DEFAULT_MAX_BYTES, None).ok()?)))
        .collect()
}

fn by_site<'a>(pages: &[&'a Page]) -> BTreeMap<&'a str, Vec<&'a Page>> {
    let mut sites: BTreeMap<&str, Vec<&Page>> = BTreeMap::new();
    for p in pages {
        sites.entry(p.site.as_str()).or_default().push(p);
    }
    sites
}

pub fn per_site(pages: &[&Page]) -> Vec<Site> {
    let mut out = Vec::new();
    for (name, pages) in by_site(pages) {
        let done = analyses(&pages);
        let mut evidence = DomainEvidence::default();
        for (_, a) in &done {
            evidence.add_page(a.fingerprints.iter().copied());
        }
        let (mut page_only, mut with_site, mut share) = (0.0, 0.0, 0.0);
        for (p, a) in &done {
            page_only += word_prf(&a.main_text, &p.gold).2;
            let e = Evidence {
                domain: &evidence,
                includes_page: true,
            };
            let Ok(b) = analyze(&p.html, None, DEFAULT_MAX_BYTES, Some(e)) else {
                continue;
            };
            with_site += word_prf(&b.main_text, &p.gold).2;
            share += f64::from(b.template_share);
        }
        let n = done.len().max(1) as f64;
        out.push(Site {
            name: name.to_owned(),
            pages: done.len(),
            page_only: page_only / n,
            with_site: with_site / n,
            template_share: share / n,
        });
    }
    out
}

/// Mean F1 over the pages of sites with more than `max(ns)` pages, when each page is weighed
/// with full trust in the evidence of `n` other pages of its site, for each `n` of `ns`.
pub fn trust_curve(pages: &[&Page], ns: &[usize]) -> Vec<(usize, f64, usize)> {
    let need = ns.iter().copied().max().unwrap_or(0) + 1;
    let sites: Vec<Vec<(&Page, Analysis)>> = by_site(pages)
        .into_values()
        .filter(|v| v.len() >= need)
        .map(|v| analyses(&v))
        .collect();
    ns.iter()
        .map(|&n| {
            let (mut f1, mut count) = (0.0, 0);
            for site in &sites {
                for (i, (p, a)) in site.iter().enumerate() {
                    let mut e = DomainEvidence::default();
                    for (_, other) in site.iter().cycle().skip(i + 1).take(n) {
                        e.add_page(other.fingerprints.iter().copied());
                    }
                    let weights = a.blocks.iter().zip(&a.fingerprints).map(|(b, &fp)| {
                        b.weight * (1.0 - e.template(fp, false) * f32::from(u8::from(n > 0)))
                    });
                    let text = main_text(a.blocks.iter().zip(weights), MAIN_THRESHOLD);
                    f1 += word_prf(&text, &p.gold).2;
                    count += 1;
                }
            }
            (n, f1 / count.max(1) as f64, count)
        })
        .collect()
}

/// The trust rule in use, for the printout.
pub fn trust_pages() -> u32 {
    TRUST_PAGES
}
