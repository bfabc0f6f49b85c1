//! The path binder in the pipeline (`Plan::bindings`): every yacobot runs it
//! (`PathBinder.Enable`), and a fourth reader per node (`reader-stubs-ybN`) ships the node's
//! stubs store (`PathBinder.Dir`) to the ad-server receiver, beside the bindings. The check
//! is the bindings' (`adserver::judge`): every stub and `query_args` item a node's database
//! holds (`path_stub`) arrived last and unchanged, no change twice, every item the stubs
//! stores hold once.

use std::collections::BTreeSet;

use focuser_bind::adserver::Item;
use focuser_formats::segment::Status;
use focuser_formats::urls;

use super::adserver::{self, Delivered, Held, Noun};
use super::daemons;
use super::db;
use super::plan::Plan;
use crate::Error;

/// What the ad server got of the stubs stores, from the last item of each key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Per node: stubs and query_args items its database holds.
    pub stored: Vec<usize>,
    /// Items received: UPDATE, DELETE.
    pub updates: usize,
    pub deletes: usize,
    /// Sections whose last item is a stub; hosts whose last item is a `query_args`.
    pub stubs: usize,
    pub query_args: usize,
}

/// What the nodes hold: `path_stub` rows and the stubs stores' items.
pub fn held(plan: &Plan, whole: bool) -> Result<Held, Error> {
    let mut h = Held {
        whole,
        ..Held::default()
    };
    for n in 1..=plan.nodes {
        let rows = db::stubs(&plan.node_dbs[n - 1])?;
        h.stored_per_node.push(rows.len());
        (h.stored).extend(rows.into_iter().map(|(id, md5)| (urls::doc_id(id), md5)));
        (h.items).extend(adserver::store_items(&daemons::stubs_store(plan, n))?);
    }
    Ok(h)
}

/// The keys that are stubs' as far as the nodes know.
pub fn docs(h: &Held) -> BTreeSet<&str> {
    let stored = h.stored.keys().map(String::as_str);
    stored.chain(h.items.iter().map(|i| i.0.as_str())).collect()
}

/// The check and the figures of the stubs; problems go to `problems`.
pub fn judge(problems: &mut Vec<String>, held: &Held, items: &[Delivered]) -> Summary {
    let noun = Noun {
        one: "stub",
        many: "stubs",
    };
    let a = adserver::judge(noun, held, items, problems);
    let mut s = Summary {
        stored: held.stored_per_node.clone(),
        updates: a.updates,
        deletes: a.deletes,
        ..Summary::default()
    };
    for it in a.last.values().filter(|it| it.status == Status::Update) {
        match Item::parse(&it.content) {
            Ok(Item::Stub(_)) => s.stubs += 1,
            Ok(Item::QueryArgs(_)) => s.query_args += 1,
            _ => {}
        }
    }
    s
}

/// The summary's stubs line.
pub fn summary_line(s: &Summary, per_node: impl Fn(&[usize]) -> String) -> String {
    format!(
        "stubs              {} stubs, {} query_args ({} UPDATE, {} DELETE items at {}); path_stub rows {}",
        s.stubs,
        s.query_args,
        s.updates,
        s.deletes,
        daemons::ADSERVER,
        per_node(&s.stored)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use focuser_bind::binding::md5_hex;

    const STUB: &str = r#"{"item":"stub","v":1,"key":"000000000000feed","section":"example.com/phones/","urls":12,"tragic":0,"types":[{"type":"market","dict":"0000000000000001","categories":[{"id":"1","p":1000}],"phrases":[{"text":"phone case","rel":500,"adv":0}]}]}"#;
    const ARGS: &str = r#"{"item":"query_args","v":1,"key":"000000000000002a","host":"example.com","args":["sid","utm_source"]}"#;
    const BINDING: &str = r#"{"item":"binding","v":1,"doc":"000000000000000a","url":"http://a.example/a","tragic":0,"types":[]}"#;

    fn item(doc: &str, status: Status, content: &str, file_id: u64, idx: u32) -> Delivered {
        Delivered {
            doc: doc.into(),
            status,
            content: content.as_bytes().to_vec(),
            file_id,
            item_idx: idx,
        }
    }

    /// The ad server's items split by the store they came from, then the stubs checked:
    /// stored stubs arrive last and once, a withdrawal counts as a DELETE.
    #[test]
    fn stubs_are_told_from_bindings_and_checked_once() {
        let (stub, args, gone, page) = (
            "000000000000feed",
            "000000000000002a",
            "000000000000beef",
            "000000000000000a",
        );
        let items = vec![
            item(page, Status::Update, BINDING, 1, 0),
            item(stub, Status::Update, STUB, 1, 0),
            item(args, Status::Update, ARGS, 1, 1),
            item(gone, Status::Delete, "", 1, 2),
        ];
        let held = Held {
            stored_per_node: vec![2, 0],
            stored: [
                (stub.to_string(), md5_hex(STUB.as_bytes())),
                (args.to_string(), md5_hex(ARGS.as_bytes())),
            ]
            .into(),
            items: [(stub, 0), (args, 1), (gone, 2)]
                .map(|(d, i)| (d.to_string(), 1, i))
                .to_vec(),
            whole: true,
        };
        let (stubs, bindings) = adserver::split(&items, &docs(&held));
        assert_eq!(bindings.len(), 1, "{bindings:?}");
        assert_eq!(stubs.len(), 3, "{stubs:?}");
        let mut problems = Vec::new();
        let s = judge(&mut problems, &held, &stubs);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!((s.stubs, s.query_args, s.updates, s.deletes), (1, 1, 2, 1));
        assert_eq!(
            summary_line(&s, |v| format!("{v:?}")),
            "stubs              1 stubs, 1 query_args (2 UPDATE, 1 DELETE items at adserver1); path_stub rows [2, 0]"
        );

        // The stub's item delivered twice, the withdrawal lost, an unknown stub.
        let mut bad = stubs.clone();
        bad.remove(2);
        bad.push(item(stub, Status::Update, STUB, 1, 0));
        bad.push(item("0000000000000bad", Status::Update, STUB, 2, 0));
        let mut problems = Vec::new();
        judge(&mut problems, &held, &bad);
        let p = problems.join("\n");
        assert!(
            p.contains("stub changes delivered twice (1 cases): 000000000000feed"),
            "{p}"
        );
        assert!(
            p.contains("stubs no node holds (1 cases): 0000000000000bad"),
            "{p}"
        );
        assert!(
            p.contains("item 1:0 (000000000000feed) arrived 2 times"),
            "{p}"
        );
        assert!(
            p.contains("item 1:2 (000000000000beef) arrived 0 times"),
            "{p}"
        );
        assert!(
            p.contains("item 2:0 (0000000000000bad) x1: no node wrote it"),
            "{p}"
        );
        // The last stub at the ad server is not the one the node holds.
        let mut stale = held.clone();
        stale.stored.insert(stub.into(), "x".into());
        let mut problems = Vec::new();
        judge(&mut problems, &stale, &stubs);
        assert!(
            problems
                .join("\n")
                .contains("stubs stale at the ad server (1 cases)"),
            "{problems:?}"
        );
    }
}
