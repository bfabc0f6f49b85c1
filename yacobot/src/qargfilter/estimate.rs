//! The estimator (docs/design.md#yacobot-qargfilter), without I/O: from the pages of one path
//! (their query arguments and main-text fingerprints), for each argument name, the pairs of
//! analysed pages that differ only in that argument (its value changed, or present against
//! absent) and how many of those show the same (or a near-duplicate) main text; and from those
//! counts a score, the
//! probability that the argument does not change the page.
//!
//! Pairs are found without comparing every page with every other: for argument `a`, the pages
//! that carry it are grouped by the rest of their arguments (a hash of them, sorted), and the
//! page of that group without `a`, if any, is found by the hash of all its arguments. Within a
//! group the pages are sorted by their value of `a` and each is paired with the next: a group of
//! `k` distinct values gives `k − 1` pairs. The work is linear in the arguments of the pages
//! read (at most [`MAX_ARGS`] each), whatever the number of variants.

use std::collections::BTreeMap;

use focuser_formats::urls;
use rustc_hash::FxHashMap;
use xxhash_rust::xxh3::Xxh3;

/// Arguments of a page at most: a page with more is left out of the estimate (counted).
pub const MAX_ARGS: usize = 64;
/// `query_args.name` holds this many bytes: a longer name is not scored.
pub const MAX_NAME: usize = 255;
/// The prior of the Beta posterior: Jeffreys', Beta(½, ½).
pub const PRIOR: f64 = 0.5;

/// A page's main-text fingerprints, as MultiDoc stores them (`multidoc_page.main_md5` and
/// `main_simhash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MainPrint {
    pub md5: u128,
    /// The near-duplicate fingerprint; `None`: not computed (a page analysed before it was).
    pub simhash: Option<u64>,
}

/// The MD5 of nothing: a page whose main text is empty (all of it template, say) tells nothing.
pub const EMPTY_MAIN: &str = "d41d8cd98f00b204e9800998ecf8427e";
const EMPTY_MD5: u128 = 0xd41d8cd98f00b204e9800998ecf8427e;

impl MainPrint {
    /// From the hex MD5 and the SimHash; `None` if the MD5 is not 32 hex digits, or is that of
    /// an empty text.
    pub fn new(md5: &str, simhash: Option<u64>) -> Option<MainPrint> {
        if md5.len() != 32 {
            return None;
        }
        u128::from_str_radix(md5, 16)
            .ok()
            .filter(|m| *m != EMPTY_MD5)
            .map(|md5| MainPrint { md5, simhash })
    }
}

/// Whether two pages show the same main text, the one comparison the estimate makes: the same
/// text (MD5), or near-duplicates by MultiDoc's SimHash (at most
/// `focuser_multidoc::simhash::NEAR_BITS` bits apart: docs/multidoc.md "simhash"), so that a
/// count or a date that changes in the text itself does not make an argument look significant.
pub fn same_main(a: &MainPrint, b: &MainPrint) -> bool {
    a.md5 == b.md5
        || matches!((a.simhash, b.simhash), (Some(x), Some(y)) if focuser_multidoc::simhash::near(x, y))
}

/// One page of a path as the estimate reads it.
#[derive(Debug, Clone)]
pub struct Page<'a> {
    pub url: &'a str,
    /// `None`: not analysed (no evidence from it).
    pub main: Option<MainPrint>,
}

/// The evidence about one argument of a path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgEvidence {
    /// Analysed pages that carry it.
    pub pages: u32,
    /// Pairs of analysed pages that differ only in it.
    pub pairs: u32,
    /// Of those, pairs whose main texts are the same.
    pub equal_pairs: u32,
}

/// What the estimate found on a path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathEvidence {
    /// By argument name (names longer than [`MAX_NAME`] are not kept).
    pub args: BTreeMap<String, ArgEvidence>,
    /// Analysed pages left out: more than [`MAX_ARGS`] arguments.
    pub too_many_args: u32,
    /// Argument names longer than [`MAX_NAME`] (not scored).
    pub long_names: u32,
}

/// The score of an argument with `pairs` pairs of which `equal` showed the same main text:
/// the mean of the Beta posterior with the [`PRIOR`], which is the probability that the next
/// pair will show the same main text.
pub fn score(pairs: u32, equal: u32) -> f64 {
    (f64::from(equal.min(pairs)) + PRIOR) / (f64::from(pairs) + 2.0 * PRIOR)
}

/// The score to write, if the evidence is enough (`min_pairs` pairs at least).
pub fn decide(e: &ArgEvidence, min_pairs: u32) -> Option<f64> {
    (e.pairs >= min_pairs.max(1)).then(|| score(e.pairs, e.equal_pairs))
}

/// A page's arguments, sorted, as `(name, value)`; `None`: more than [`MAX_ARGS`].
fn args_of(url: &str) -> Option<Vec<(&str, &str)>> {
    let (_, query) = urls::split_query(url);
    let mut args = Vec::new();
    for arg in urls::query_args(query.unwrap_or("")) {
        if args.len() == MAX_ARGS {
            return None;
        }
        args.push(arg.split_once('=').unwrap_or((arg, "")));
    }
    args.sort_unstable();
    Some(args)
}

/// A hash of `args` less those named `without` (128 bits: a collision would make a false pair).
fn key(args: &[(&str, &str)], without: Option<&str>) -> u128 {
    let mut h = Xxh3::new();
    for (n, v) in args {
        if Some(*n) != without {
            // A normalised URL has no raw NUL: the separators cannot be forged.
            h.update(n.as_bytes());
            h.update(b"\0=");
            h.update(v.as_bytes());
            h.update(b"\0&");
        }
    }
    h.digest128()
}

/// The value of `name` in `args` (several values joined by NUL, in order).
fn value_of(args: &[(&str, &str)], name: &str) -> String {
    let values: Vec<&str> = args
        .iter()
        .filter(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .collect();
    values.join("\0")
}

/// The evidence of every argument of one path's `pages`.
pub fn evidence(pages: &[Page<'_>]) -> PathEvidence {
    let mut out = PathEvidence::default();
    // The analysed pages, their arguments, and by the hash of all of them.
    let mut read: Vec<(Vec<(&str, &str)>, MainPrint)> = Vec::new();
    for p in pages {
        let Some(main) = p.main else { continue };
        match args_of(p.url) {
            Some(args) => read.push((args, main)),
            None => out.too_many_args += 1,
        }
    }
    let mut whole: FxHashMap<u128, usize> = FxHashMap::default();
    // Pages with the same arguments in another order are one: the first counts.
    for (i, (args, _)) in read.iter().enumerate() {
        whole.entry(key(args, None)).or_insert(i);
    }
    // Each name's carriers.
    let mut carriers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (args, _)) in read.iter().enumerate() {
        let mut last = None;
        for (n, _) in args {
            if last != Some(*n) {
                carriers.entry(n).or_default().push(i);
                last = Some(*n);
            }
        }
    }
    for (name, pages) in carriers {
        if name.len() > MAX_NAME {
            out.long_names += 1;
            continue;
        }
        let e = pairs_of(name, &pages, &read, &whole);
        out.args.insert(name.to_string(), e);
    }
    out
}

/// The pairs of argument `name`, carried by the pages `carriers` of `read`.
fn pairs_of(
    name: &str,
    carriers: &[usize],
    read: &[(Vec<(&str, &str)>, MainPrint)],
    whole: &FxHashMap<u128, usize>,
) -> ArgEvidence {
    // By the rest of their arguments: (value, page), the page without it first.
    let mut groups: FxHashMap<u128, Vec<(Option<String>, usize)>> = FxHashMap::default();
    for &i in carriers {
        let args = &read[i].0;
        let rest = key(args, Some(name));
        groups
            .entry(rest)
            .or_default()
            .push((Some(value_of(args, name)), i));
    }
    let mut e = ArgEvidence {
        pages: carriers.len() as u32,
        ..ArgEvidence::default()
    };
    for (rest, mut members) in groups {
        if let Some(&absent) = whole.get(&rest) {
            members.push((None, absent));
        }
        members.sort_unstable();
        members.dedup_by(|b, a| a.0 == b.0);
        for w in members.windows(2) {
            e.pairs += 1;
            if same_main(&read[w[0].1].1, &read[w[1].1].1) {
                e.equal_pairs += 1;
            }
        }
    }
    e
}

#[cfg(test)]
mod tests;
