//! Probes (docs/design.md#yacobot-qargfilter, "Probes"), without I/O: which URLs to ask the
//! scheduler to fetch so that an argument with too little evidence gets pairs — a page of the
//! path that carries it, with it dropped.

use focuser_formats::urls;
use rustc_hash::FxHashSet;

use super::estimate::{Page, PathEvidence, MAX_NAME};

/// A probe to queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    /// The argument it drops.
    pub name: String,
    pub url: String,
    pub id: u64,
}

/// How many probes a path may get.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Pairs an argument needs for a score: one with fewer is probed.
    pub min_pairs: u32,
    /// Probes per argument in all (those queued before count), and per path and pass.
    pub per_arg: u32,
}

/// The probes worth queueing on one path, given its `pages`, the ids of every URL of it read
/// (`known`), the estimate's `evidence`, and how many probes each argument had (`queued`).
/// Arguments with fewer than `min_pairs` pairs that at least two analysed pages carry are
/// probed, the most carried first (an argument seen once saves nothing when learned); a probe
/// is a carrier page with the argument dropped, unless that URL is a page of the path already.
pub fn choose(
    pages: &[Page<'_>],
    known: &FxHashSet<u64>,
    evidence: &PathEvidence,
    queued: impl Fn(&str) -> u32,
    b: Bounds,
) -> Vec<Want> {
    let mut names: Vec<(&str, u32)> = evidence
        .args
        .iter()
        .filter(|(n, e)| e.pairs < b.min_pairs && e.pages >= 2 && n.len() <= MAX_NAME)
        .map(|(n, e)| (n.as_str(), e.pages))
        .collect();
    names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out: Vec<Want> = Vec::new();
    let mut chosen: FxHashSet<u64> = FxHashSet::default();
    for (name, _) in names {
        let room = b.per_arg.saturating_sub(queued(name));
        let mut taken = 0;
        for p in pages.iter().filter(|p| p.main.is_some()) {
            if taken >= room || out.len() >= b.per_arg as usize {
                break;
            }
            let probe = urls::without_args(p.url, |arg| urls::arg_name(arg) == name);
            if probe.len() == p.url.len() {
                continue;
            }
            let id = urls::url_id(&probe);
            if known.contains(&id) || !chosen.insert(id) {
                continue;
            }
            out.push(Want {
                name: name.to_string(),
                url: probe.into_owned(),
                id,
            });
            taken += 1;
        }
        if out.len() >= b.per_arg as usize {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::estimate::{evidence, MainPrint};
    use super::*;

    #[test]
    fn arguments_with_too_little_evidence_are_probed_within_bounds() {
        // sid on five analysed pages that differ in id too: no pair. ref on one page only.
        let mut list: Vec<String> = (0..5)
            .map(|i| format!("http://a.ru/p?id={i}&sid=s{i}"))
            .collect();
        list.push("http://a.ru/p?id=9&ref=x".into());
        list.push("http://a.ru/p?id=1".into()); // the probe of sid on id=1 exists already
        let pages: Vec<Page<'_>> = list
            .iter()
            .map(|u| Page {
                url: u,
                main: Some(MainPrint {
                    md5: 1,
                    simhash: None,
                }),
            })
            .collect();
        let ev = evidence(&pages);
        let known: FxHashSet<u64> = list.iter().map(|u| urls::url_id(u)).collect();
        let b = Bounds {
            min_pairs: 10,
            per_arg: 3,
        };
        let got = choose(&pages, &known, &ev, |_| 0, b);
        let urls: Vec<&str> = got.iter().map(|w| w.url.as_str()).collect();
        // id is carried by all seven but is not probed first? It is: 7 pages against sid's 5.
        assert_eq!(got.len(), 3, "{urls:?}");
        assert!(got.iter().all(|w| w.name == "id"), "{urls:?}");
        assert!(got.iter().all(|w| w.id == urls::url_id(&w.url)));

        // Without id's room (its probes queued already), sid gets the path's share, less the
        // page that exists.
        let got = choose(&pages, &known, &ev, |n| if n == "id" { 3 } else { 0 }, b);
        let urls: Vec<&str> = got.iter().map(|w| w.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://a.ru/p?id=0",
                "http://a.ru/p?id=2",
                "http://a.ru/p?id=3"
            ]
        );
        assert!(got.iter().all(|w| w.name == "sid"));

        // Enough pairs already, or everything queued: nothing.
        let none = choose(&pages, &known, &ev, |_| 3, b);
        assert!(none.is_empty());
        let b1 = Bounds {
            min_pairs: 0,
            per_arg: 3,
        };
        assert!(choose(&pages, &known, &ev, |_| 0, b1).is_empty());
    }
}
