//! Two masters with their own directories and one database, fed overlapping reflogs with
//! overlapping new domains at the same time: every domain gets one row, and both route it
//! to the same node.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{line, nodes, partner_domains, Site, T0};
use focuser_tests::TestDb;

#[test]
fn two_masters_agree_on_every_domain() {
    let db = TestDb::new();
    nodes(
        &db,
        &[("yb1", true), ("yb2", true), ("yb3", true), ("yb4", true)],
    );
    let sites: Vec<Site> = ["m1", "m2"]
        .iter()
        .map(|name| {
            let s = Site::new(db.url(), "");
            let text = std::fs::read_to_string(&s.config)
                .unwrap()
                .replace("name = m1", &format!("name = {name}"));
            std::fs::write(&s.config, text).unwrap();
            s
        })
        .collect();
    // m1 sees domains 0..600, m2 sees 300..900; each in five files.
    let mut inputs: Vec<Vec<std::path::PathBuf>> = Vec::new();
    for (i, site) in sites.iter().enumerate() {
        let mut files = Vec::new();
        for f in 0..5 {
            let lines: Vec<String> = (0..600)
                .map(|d| d + i * 300)
                .filter(|d| d % 5 == f)
                .flat_map(|d| {
                    (0..3).map(move |p| {
                        line(T0 + p, &format!("http://site{d}.example/page{p}"), 1, "")
                    })
                })
                .collect();
            let p = site.root().join(format!("r{f}.log"));
            std::fs::write(&p, format!("header\n{}", lines.concat())).unwrap();
            files.push(p);
        }
        inputs.push(files);
    }
    let children: Vec<_> = sites
        .iter()
        .zip(&inputs)
        .map(|(site, files)| site.command(&["replay"]).args(files).output())
        .collect();
    for out in children {
        let out = out.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let pd = partner_domains(&db);
    assert_eq!(pd.len(), 900, "one row per domain");
    let mut routed: BTreeMap<String, u32> = BTreeMap::new();
    for site in &sites {
        for (node, r) in site.forwarded() {
            assert_eq!(
                pd[&r.domain], node,
                "{} routed as partner_domain says",
                r.domain
            );
            if let Some(other) = routed.insert(r.domain.clone(), node) {
                assert_eq!(
                    other, node,
                    "the two masters route {} differently",
                    r.domain
                );
            }
        }
    }
    let shared = (300..600)
        .filter(|d| routed.contains_key(&format!("site{d}.example")))
        .count();
    assert_eq!(shared, 300);
    let per_node: BTreeMap<u32, usize> = pd.values().fold(BTreeMap::new(), |mut m, n| {
        *m.entry(*n).or_insert(0) += 1;
        m
    });
    assert_eq!(
        per_node.len(),
        4,
        "the least-loaded rule spreads domains: {per_node:?}"
    );
}
