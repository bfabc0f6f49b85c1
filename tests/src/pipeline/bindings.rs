//! Bindings in the pipeline (`Plan::bindings`, with page analysis): the sample dictionaries
//! (`bind/dicts/`) loaded on every node with `yacobot dict load`, every yacobot run with
//! `Bindings.Enable = 1`, and a third reader per node (`reader-bind-ybN`) shipping the node's
//! bindings store to the ad-server receiver (`adserver1`, a `reader --recv`); the path
//! binder's stubs go there too (`stubs`).
//!
//! The check reads both ends, as the ad server would (`adserver::judge`): every binding a
//! node's database holds (`binding_page`) arrived at the ad-server receiver, its last item
//! being exactly the stored one (same MD5), and no change arrived twice (two items in a row
//! for a page with the same content); every item the bindings stores hold arrived once.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use focuser_bind::adserver::Item;
use focuser_formats::segment::Status;
use focuser_formats::urls;

use super::adserver::{self, Held, Noun};
use super::daemons::{self, Kind};
use super::plan::Plan;
use super::{db, stubs};
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

pub use super::adserver::{delivered, Delivered};

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
    /// What the path binder's stubs stores delivered.
    pub stubs: stubs::Summary,
    pub problems: Vec<String>,
}

impl Summary {
    pub fn phrase_total(&self) -> usize {
        self.phrases.values().sum()
    }
}

/// Reads both ends and checks them, the bindings and the stubs (module doc); `written`: the
/// nodes' stores are whole (retention off), nothing may arrive that they do not hold.
pub fn check(plan: &Plan, written: bool) -> Result<Summary, Error> {
    let items = adserver::delivered(plan)?;
    let mut bindings = Held {
        whole: written,
        ..Held::default()
    };
    for n in 1..=plan.nodes {
        let rows = db::bindings(&plan.node_dbs[n - 1])?;
        bindings.stored_per_node.push(rows.len());
        (bindings.stored).extend(rows.into_iter().map(|(id, md5)| (urls::doc_id(id), md5)));
        (bindings.items).extend(adserver::store_items(&daemons::bindings_store(plan, n))?);
    }
    let stubs = stubs::held(plan, written)?;
    let (stub_items, binding_items) = adserver::split(&items, &stubs::docs(&stubs));
    let mut s = Summary::default();
    judge(&mut s, &bindings, &binding_items);
    s.stubs = stubs::judge(&mut s.problems, &stubs, &stub_items);
    Ok(s)
}

/// The check and the figures of the bindings, from what the nodes hold and the items of the
/// bindings stores the ad server got.
pub fn judge(s: &mut Summary, held: &Held, items: &[Delivered]) {
    let noun = Noun {
        one: "binding",
        many: "bindings",
    };
    let a = adserver::judge(noun, held, items, &mut s.problems);
    (s.stored, s.updates, s.deletes) = (held.stored_per_node.clone(), a.updates, a.deletes);
    for it in a.last.values().filter(|it| it.status == Status::Update) {
        if let Ok(Item::Binding(b)) = Item::parse(&it.content) {
            s.bindings += 1;
            s.tragic += usize::from(b.tragic);
            for t in &b.bindings {
                *s.phrases.entry(t.kind.name().to_string()).or_default() += t.phrases.len();
            }
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
        stubs::summary_line(&s.stubs, per_node),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_plan;
    use super::*;
    use focuser_bind::binding::md5_hex;
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
        let held = Held {
            stored_per_node: vec![2],
            stored,
            items: items
                .iter()
                .map(|i| (i.doc.clone(), i.file_id, i.item_idx))
                .collect(),
            whole: true,
        };
        let mut s = Summary::default();
        judge(&mut s, &held, &items);
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!((s.updates, s.deletes, s.bindings, s.tragic), (3, 1, 2, 1));
        assert_eq!(s.phrases, [("direct".to_string(), 1)].into());

        // a's change delivered twice, b's stored binding not the last delivered, d never
        // delivered, and an item no node wrote.
        let mut bad = items.clone();
        bad.push(item(a, Status::Update, &a2, 2));
        bad.push(item(b, Status::Update, &binding(b, 0, ""), 9));
        let mut held = held;
        held.stored.insert("000000000000000d".into(), "x".into());
        let mut s = Summary::default();
        judge(&mut s, &held, &bad);
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
        let held = Held {
            stored_per_node: vec![1, 1],
            ..Held::default()
        };
        judge(&mut s, &held, &items[..2]);
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
        assert_eq!(
            lines[4],
            "stubs              0 stubs, 0 query_args (0 UPDATE, 0 DELETE items at adserver1); path_stub rows []"
        );
        let off = Plan {
            bindings: false,
            ..plan
        };
        assert!(summary(&off, None, |v| format!("{v:?}"))[0].contains("(--no-bindings)"));
    }
}
