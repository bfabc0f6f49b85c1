//! Bindings in the pipeline (`Plan::bindings`, with page analysis): the sample dictionaries
//! (`bind/dicts/`) loaded on every node with `yacobot dict load`, every yacobot run with
//! `Bindings.Enable = 1`, and a third reader per node (`reader-bind-ybN`) shipping the node's
//! bindings store to the ad-server receiver (`adserver1`, a `reader --recv`).
//!
//! The check reads both ends, as the ad server would: every binding a node's database holds
//! (`binding_page`) arrived at the ad-server receiver, its last item being exactly the stored
//! one (same MD5), and no change arrived twice (two items in a row for a page with the same
//! content); with the stores whole, every item of every bindings store arrived once.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use focuser_bind::adserver::Item;
use focuser_bind::binding::md5_hex;
use focuser_formats::segment::{Cursor, Position, Status};
use focuser_formats::urls;

use super::daemons::{self, Kind};
use super::db;
use super::plan::Plan;
use crate::Error;

/// The binding types and their sample dictionaries, in the order they are loaded.
pub fn dictionaries(plan: &Plan) -> Vec<(&'static str, PathBuf)> {
    ["direct", "market", "media"]
        .into_iter()
        .map(|k| (k, plan.repo.join("bind/dicts").join(format!("{k}.tsv"))))
        .collect()
}

/// `yacobot -c CONFIG dict load KIND FILE` of each sample dictionary on every node, as an
/// operator loads them; returns what the first node's loads printed.
pub fn load_dictionaries(plan: &Plan) -> Result<Vec<String>, Error> {
    let mut said = Vec::new();
    for i in daemons::instances(plan) {
        if i.kind != Kind::Yacobot {
            continue;
        }
        for (kind, file) in dictionaries(plan) {
            let mut cmd = Command::new(&i.binary);
            cmd.arg("-c")
                .arg(&i.config)
                .args(["dict", "load", kind])
                .arg(&file);
            let out = crate::output_within(&mut cmd, Duration::from_secs(120));
            let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !out.status.success() {
                return Err(format!(
                    "{}: yacobot dict load {kind} {} failed ({}): {text}{}",
                    i.name,
                    file.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                )
                .into());
            }
            if i.number == 1 {
                said.push(text);
            }
        }
    }
    Ok(said)
}

/// One item the ad-server receiver holds.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub doc: String,
    pub status: Status,
    pub content: Vec<u8>,
    pub file_id: u64,
    pub item_idx: u32,
}

/// Every item of the ad-server receiver's store, in the order it stored them.
pub fn delivered(plan: &Plan) -> Result<Vec<Delivered>, Error> {
    let mut out = Vec::new();
    let mut c = Cursor::new(&daemons::adserver_received(plan), Position::START, None);
    while let Some(s) = c.next()? {
        out.push(Delivered {
            doc: String::from_utf8_lossy(&s.item.doc_id).into_owned(),
            status: s.item.status,
            content: s.item.content,
            file_id: s.item.origin.file_id,
            item_idx: s.item.origin.item_idx,
        });
    }
    Ok(out)
}

/// What the ad server got, from the last item of each page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Per node: bindings its database holds.
    pub stored: Vec<usize>,
    /// Items received: UPDATE, DELETE.
    pub updates: usize,
    pub deletes: usize,
    /// Pages whose last item is a binding, and of them the tragic ones.
    pub bindings: usize,
    pub tragic: usize,
    /// Phrases of those bindings, per binding type (`direct`, `market`, `media`).
    pub phrases: BTreeMap<String, usize>,
    pub problems: Vec<String>,
}

impl Summary {
    pub fn phrase_total(&self) -> usize {
        self.phrases.values().sum()
    }
}

/// Reads both ends and checks them (module doc); `written`: the nodes' bindings stores are
/// whole (retention off), compare them item by item too.
pub fn check(plan: &Plan, written: bool) -> Result<Summary, Error> {
    let mut stored: BTreeMap<String, String> = BTreeMap::new();
    let mut s = Summary::default();
    for n in 1..=plan.nodes {
        let rows = db::bindings(&plan.node_dbs[n - 1])?;
        s.stored.push(rows.len());
        stored.extend(rows.into_iter().map(|(id, md5)| (urls::doc_id(id), md5)));
    }
    let items = delivered(plan)?;
    let mut wrote = Vec::new();
    if written {
        for n in 1..=plan.nodes {
            wrote.extend(store_items(plan, n)?);
        }
    }
    judge(&mut s, &stored, &items, written.then_some(&wrote[..]));
    Ok(s)
}

/// A node's bindings store: (doc id, file id, item index) of each item.
fn store_items(plan: &Plan, node: usize) -> Result<Vec<(String, u64, u32)>, Error> {
    let mut out = Vec::new();
    let mut c = Cursor::new(&daemons::bindings_store(plan, node), Position::START, None);
    while let Some(s) = c.next()? {
        let doc = String::from_utf8_lossy(&s.item.doc_id).into_owned();
        out.push((doc, s.file_id, s.item_idx));
    }
    Ok(out)
}

/// The check and the figures, from what each side holds: `stored` doc id → MD5 (the nodes'
/// databases), `items` (the receiver), `wrote` (the nodes' stores, when whole).
pub fn judge(
    s: &mut Summary,
    stored: &BTreeMap<String, String>,
    items: &[Delivered],
    wrote: Option<&[(String, u64, u32)]>,
) {
    let mut last: BTreeMap<&str, &Delivered> = BTreeMap::new();
    let (mut twice, mut bad) = (Vec::new(), Vec::new());
    for it in items {
        match it.status {
            Status::Update => s.updates += 1,
            Status::Delete => s.deletes += 1,
        }
        if let Some(prev) = last.insert(&it.doc, it) {
            if prev.status == it.status && prev.content == it.content {
                twice.push(format!("{} arrived twice in a row unchanged", it.doc));
            }
        }
        if it.status == Status::Update {
            if let Err(e) = Item::parse(&it.content) {
                bad.push(format!("{}: {e}", it.doc));
            }
        }
    }
    let (mut lost, mut stale, mut stray) = (Vec::new(), Vec::new(), Vec::new());
    for (doc, md5) in stored {
        match last.get(doc.as_str()) {
            None => lost.push(format!("{doc} never reached the ad server")),
            Some(it) if it.status == Status::Delete => stale.push(format!(
                "{doc}: its last item is a DELETE, the node holds a binding"
            )),
            Some(it) if &md5_hex(&it.content) != md5 => stale.push(format!(
                "{doc}: its last item is not the binding the node holds"
            )),
            Some(_) => {}
        }
    }
    for (doc, it) in &last {
        if it.status == Status::Update && !stored.contains_key(*doc) {
            stray.push(format!("{doc}: a binding no node holds"));
        }
        if it.status == Status::Delete {
            continue;
        }
        if let Ok(Item::Binding(b)) = Item::parse(&it.content) {
            s.bindings += 1;
            s.tragic += usize::from(b.tragic);
            for t in &b.bindings {
                *s.phrases.entry(t.kind.name().to_string()).or_default() += t.phrases.len();
            }
        }
    }
    let mut once = Vec::new();
    if let Some(wrote) = wrote {
        let mut seen: BTreeMap<(&str, u64, u32), usize> = BTreeMap::new();
        for it in items {
            *seen.entry((&it.doc, it.file_id, it.item_idx)).or_default() += 1;
        }
        for (doc, file, idx) in wrote {
            match seen.remove(&(doc.as_str(), *file, *idx)).unwrap_or(0) {
                1 => {}
                n => once.push(format!("item {file}:{idx} ({doc}) arrived {n} times")),
            }
        }
        for ((doc, file, idx), n) in seen {
            once.push(format!("item {file}:{idx} ({doc}) x{n}: no node wrote it"));
        }
    }
    for (what, list) in [
        ("bindings lost", lost),
        ("bindings stale at the ad server", stale),
        ("binding changes delivered twice", twice),
        ("malformed ad-server items", bad),
        ("bindings no node holds", stray),
        ("bindings store items not delivered exactly once", once),
    ] {
        if !list.is_empty() {
            let shown: Vec<&str> = list.iter().take(5).map(String::as_str).collect();
            s.problems.push(format!(
                "{what} ({} cases): {}",
                list.len(),
                shown.join("; ")
            ));
        }
    }
}

/// The summary's lines about bindings (`per_node` lays out one figure per node).
pub fn summary(
    plan: &Plan,
    s: Option<&Summary>,
    per_node: impl Fn(&[usize]) -> String,
) -> Vec<String> {
    let Some(s) = s.filter(|_| plan.bindings) else {
        let why = if plan.multidoc {
            "--no-bindings"
        } else {
            "--no-multidoc"
        };
        return vec![format!(
            "bindings           none: binding is off in this run ({why})"
        )];
    };
    let types: Vec<String> = s.phrases.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let per = if s.bindings == 0 {
        0.0
    } else {
        s.phrase_total() as f64 / s.bindings as f64
    };
    vec![
        format!("bindings stored    {}", per_node(&s.stored)),
        format!(
            "to the ad server   {} bindings ({} UPDATE, {} DELETE items at {})",
            s.bindings,
            s.updates,
            s.deletes,
            daemons::ADSERVER
        ),
        format!(
            "phrases delivered  {} ({}); {per:.1} per binding",
            s.phrase_total(),
            if types.is_empty() {
                "none".into()
            } else {
                types.join(", ")
            }
        ),
        format!(
            "tragic pages       {} of {} bindings (their phrases withheld)",
            s.tragic, s.bindings
        ),
        "stubs              none: no path binder in this build".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_plan;
    use super::*;
    use focuser_schema::models::BindingDict;

    /// The committed sample dictionaries load with `yacobot dict load` on every node of a
    /// run, each in force with all its phrases.
    #[test]
    fn the_sample_dictionaries_load_on_every_node() {
        let dir = tempfile::tempdir().unwrap();
        let dbs = [crate::TestDb::new(), crate::TestDb::new()];
        let plan = Plan {
            multidoc: true,
            bindings: true,
            node_dbs: dbs.iter().map(|d| d.url().to_string()).collect(),
            ..test_plan(dir.path())
        };
        daemons::write_all(&plan).unwrap();
        let said = load_dictionaries(&plan).unwrap();
        assert_eq!(said.len(), 3, "{said:?}");
        for (line, (kind, _)) in said.iter().zip(dictionaries(&plan)) {
            assert!(line.contains(&format!("{kind} dictionary")), "{line}");
        }
        for d in &dbs {
            let current = BindingDict::current(&mut d.conn()).unwrap();
            let mut got: Vec<(u8, String, u32)> = current
                .iter()
                .map(|c| (c.kind, c.file_name.clone(), c.phrases))
                .collect();
            got.sort();
            assert_eq!(
                got,
                [
                    (1, "direct.tsv".to_string(), 600),
                    (2, "market.tsv".to_string(), 211),
                    (3, "media.tsv".to_string(), 695)
                ]
            );
        }
    }

    fn item(doc: &str, status: Status, content: &str, idx: u32) -> Delivered {
        Delivered {
            doc: doc.into(),
            status,
            content: content.as_bytes().to_vec(),
            file_id: 1,
            item_idx: idx,
        }
    }

    fn binding(doc: &str, tragic: u8, phrases: &str) -> String {
        format!(
            r#"{{"item":"binding","v":1,"doc":"{doc}","url":"http://a.example/{doc}","tragic":{tragic},"types":[{{"type":"direct","dict":"0123456789abcdef","categories":[],"phrases":[{phrases}]}}]}}"#
        )
    }

    #[test]
    fn the_check_wants_every_stored_binding_delivered_once_and_last() {
        let (a, b, c) = ("000000000000000a", "000000000000000b", "000000000000000c");
        let phrase = r#"{"text":"phone case","rel":700,"adv":3}"#;
        let a1 = binding(a, 0, "");
        let a2 = binding(a, 0, phrase);
        let b1 = binding(b, 1, "");
        let items = vec![
            item(a, Status::Update, &a1, 0),
            item(b, Status::Update, &b1, 1),
            item(a, Status::Update, &a2, 2),
            item(c, Status::Delete, "", 3),
        ];
        let stored: BTreeMap<String, String> = [
            (a.to_string(), md5_hex(a2.as_bytes())),
            (b.to_string(), md5_hex(b1.as_bytes())),
        ]
        .into();
        let wrote: Vec<(String, u64, u32)> = items
            .iter()
            .map(|i| (i.doc.clone(), i.file_id, i.item_idx))
            .collect();
        let mut s = Summary::default();
        judge(&mut s, &stored, &items, Some(&wrote));
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!((s.updates, s.deletes, s.bindings, s.tragic), (3, 1, 2, 1));
        assert_eq!(s.phrases, [("direct".to_string(), 1)].into());

        // a's change delivered twice, b's stored binding not the last delivered, d never
        // delivered, and an item no node wrote.
        let mut bad = items.clone();
        bad.push(item(a, Status::Update, &a2, 2));
        bad.push(item(b, Status::Update, &binding(b, 0, ""), 9));
        let mut stored = stored;
        stored.insert("000000000000000d".into(), "x".into());
        let mut s = Summary::default();
        judge(&mut s, &stored, &bad, Some(&wrote));
        let p = s.problems.join("\n");
        assert_eq!(s.problems.len(), 4, "{p}");
        assert!(
            p.contains("bindings lost (1 cases): 000000000000000d never"),
            "{p}"
        );
        assert!(
            p.contains("stale at the ad server (1 cases): 000000000000000b"),
            "{p}"
        );
        assert!(
            p.contains("delivered twice (1 cases): 000000000000000a"),
            "{p}"
        );
        assert!(
            p.contains("item 1:2 (000000000000000a) arrived 2 times"),
            "{p}"
        );
        assert!(
            p.contains("item 1:9 (000000000000000b) x1: no node wrote it"),
            "{p}"
        );

        let plan = Plan {
            multidoc: true,
            bindings: true,
            ..test_plan(tempfile::tempdir().unwrap().path())
        };
        let mut s = Summary::default();
        judge(&mut s, &BTreeMap::new(), &items[..2], None);
        s.stored = vec![1, 1];
        let lines = summary(&plan, Some(&s), |v| format!("{v:?}"));
        assert_eq!(lines[0], "bindings stored    [1, 1]");
        assert_eq!(
            lines[1],
            "to the ad server   2 bindings (2 UPDATE, 0 DELETE items at adserver1)"
        );
        assert_eq!(lines[2], "phrases delivered  0 (direct 0); 0.0 per binding");
        assert_eq!(
            lines[3],
            "tragic pages       1 of 2 bindings (their phrases withheld)"
        );
        let off = Plan {
            bindings: false,
            ..plan
        };
        assert!(summary(&off, None, |v| format!("{v:?}"))[0].contains("(--no-bindings)"));
    }
}
