//! domains_from_db and route (docs/design.md#master-cycle, steps 5–6): every forwarded URL gets its
//! domain's node; domains without an enabled node get the least-loaded one.

use std::collections::{BTreeMap, HashMap};

use rustc_hash::FxHashMap;

/// The domain map as read at the start of a cycle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainMap {
    /// Enabled nodes, by id.
    pub nodes: Vec<u32>,
    /// Every partner_domain row: domain → node (enabled or not).
    pub rows: FxHashMap<String, u32>,
}

impl DomainMap {
    /// The node a domain is routed to now: its row's node, if that node is enabled.
    pub fn routed(&self, domain: &str) -> Option<u32> {
        self.rows
            .get(domain)
            .copied()
            .filter(|n| self.nodes.binary_search(n).is_ok())
    }
}

/// One new assignment: `previous` is the disabled or vanished node the domain was mapped to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub domain: String,
    pub node: u32,
    pub previous: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no enabled yacobot node to route {0} domains to")]
pub struct NoNodes(pub usize);

/// Per domain of this cycle: URLs forwarded, and URLs in the new current_log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DomainCounts {
    pub forwarded: u64,
    pub in_log: u64,
}

/// The least-loaded assignment (docs/design.md#master-cycle, step 6): domains with forwarded URLs
/// and no enabled node, by decreasing forwarded count (ties: name, bytewise), each to the enabled
/// node with the smallest load (ties: smaller id). A node's load starts as the URLs of the new
/// current_log whose domain was routed to it at the start of the cycle, and grows by the forwarded
/// count of each domain given to it.
pub fn plan(
    map: &DomainMap,
    counts: &HashMap<&str, DomainCounts>,
) -> Result<Vec<Assignment>, NoNodes> {
    plan_routed(map, counts.iter().map(|(&d, c)| (d, *c, map.routed(d))))
}

/// [`plan`] over each domain's counts and its node now ([`DomainMap::routed`]), worked out
/// already by the caller.
pub fn plan_routed<'a>(
    map: &DomainMap,
    domains: impl Iterator<Item = (&'a str, DomainCounts, Option<u32>)>,
) -> Result<Vec<Assignment>, NoNodes> {
    let mut load: BTreeMap<u32, u64> = map.nodes.iter().map(|&n| (n, 0)).collect();
    let mut unrouted: Vec<(&str, u64)> = Vec::new();
    for (domain, c, routed) in domains {
        match routed {
            Some(node) => *load.entry(node).or_insert(0) += c.in_log,
            None if c.forwarded > 0 => unrouted.push((domain, c.forwarded)),
            None => {}
        }
    }
    if unrouted.is_empty() {
        return Ok(Vec::new());
    }
    if map.nodes.is_empty() {
        return Err(NoNodes(unrouted.len()));
    }
    unrouted.sort_unstable_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| a.0.as_bytes().cmp(b.0.as_bytes()))
    });
    let mut out = Vec::with_capacity(unrouted.len());
    for (domain, forwarded) in unrouted {
        let (&node, _) = load
            .iter()
            .min_by_key(|(&id, &l)| (l, id))
            .ok_or(NoNodes(1))?;
        *load.entry(node).or_insert(0) += forwarded;
        out.push(Assignment {
            domain: domain.to_string(),
            node,
            previous: map.rows.get(domain).copied(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(list: &[(&'static str, u64, u64)]) -> HashMap<&'static str, DomainCounts> {
        list.iter()
            .map(|&(d, f, l)| {
                (
                    d,
                    DomainCounts {
                        forwarded: f,
                        in_log: l,
                    },
                )
            })
            .collect()
    }

    /// Worked by hand: nodes 1, 2 and 3 (3 disabled). a.ru is on 1 with 10 URLs in the new
    /// current_log, b.ru on 2 with 4, old.ru on disabled 3. Unrouted, by forwarded count then
    /// name: c.ru 5, old.ru 3, d.ru 3, e.ru 1, f.ru 1.
    ///   loads 1:10 2:4 → c.ru to 2 (2:9) → d.ru to 2 (9 < 10; 2:12) → old.ru to 1 (10 < 12;
    ///   1:13) → e.ru to 2 (12 < 13; 2:13) → f.ru to 1 (13 = 13, smaller id; 1:14).
    #[test]
    fn the_least_loaded_node_in_spec_order() {
        let map = DomainMap {
            nodes: vec![1, 2],
            rows: [("a.ru", 1), ("b.ru", 2), ("old.ru", 3)]
                .iter()
                .map(|&(d, n)| (d.to_string(), n))
                .collect(),
        };
        let c = counts(&[
            ("a.ru", 2, 10),
            ("b.ru", 1, 4),
            ("c.ru", 5, 5),
            ("old.ru", 3, 3),
            ("d.ru", 3, 3),
            ("e.ru", 1, 1),
            ("f.ru", 1, 1),
            ("quiet.ru", 0, 7),
        ]);
        let p = plan(&map, &c).unwrap();
        let got: Vec<(&str, u32, Option<u32>)> = p
            .iter()
            .map(|a| (a.domain.as_str(), a.node, a.previous))
            .collect();
        assert_eq!(
            got,
            [
                ("c.ru", 2, None),
                ("d.ru", 2, None),
                ("old.ru", 1, Some(3)),
                ("e.ru", 2, None),
                ("f.ru", 1, None)
            ]
        );
    }

    #[test]
    fn no_enabled_node_fails_and_nothing_to_route_is_fine() {
        let map = DomainMap {
            nodes: vec![],
            rows: FxHashMap::default(),
        };
        assert_eq!(plan(&map, &counts(&[("x.ru", 1, 1)])), Err(NoNodes(1)));
        assert_eq!(plan(&map, &counts(&[("x.ru", 0, 1)])), Ok(vec![]));
        let bytewise = DomainMap {
            nodes: vec![7],
            rows: FxHashMap::default(),
        };
        let p = plan(
            &bytewise,
            &counts(&[("b.ru", 1, 1), ("B.ru", 1, 1), ("a.ru", 1, 1)]),
        )
        .unwrap();
        assert_eq!(
            p.iter().map(|a| a.domain.as_str()).collect::<Vec<_>>(),
            ["B.ru", "a.ru", "b.ru"]
        );
    }
}
