//! The ad-server receiver's side of a run (`Plan::bindings`): what it holds, split by the
//! store it came from (the nodes' bindings stores, their stubs stores), and the check one
//! store kind gets, as the ad server would read it: every item a node's database holds
//! arrived, its last item being exactly the stored one (same MD5); no change arrived twice
//! (two items in a row for a key with the same content); every item the nodes' stores hold
//! arrived once, and with the stores whole, nothing arrived that no store holds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use focuser_bind::adserver::Item;
use focuser_bind::binding::md5_hex;
use focuser_formats::segment::{Cursor, Position, Status};

use super::daemons;
use super::plan::Plan;
use crate::Error;

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

/// The items the ad server got from the stubs stores (`true`) and the bindings stores: a
/// key is a stub's when one of its items is a stub or `query_args` item, or a stubs store
/// holds it (a withdrawal whose stub the receiver no longer shows).
pub fn split<'a>(
    items: &'a [Delivered],
    stub_docs: &BTreeSet<&str>,
) -> (Vec<Delivered>, Vec<Delivered>) {
    let stubby: BTreeSet<&'a str> = items
        .iter()
        .filter(|it| {
            it.status == Status::Update
                && matches!(
                    Item::parse(&it.content),
                    Ok(Item::Stub(_) | Item::QueryArgs(_))
                )
        })
        .map(|it| it.doc.as_str())
        .collect();
    items
        .iter()
        .cloned()
        .partition(|it| stubby.contains(it.doc.as_str()) || stub_docs.contains(it.doc.as_str()))
}

/// What the nodes hold of one store kind.
#[derive(Debug, Clone, Default)]
pub struct Held {
    /// Per node: rows of its database.
    pub stored_per_node: Vec<usize>,
    /// Key (16 hex digits) → MD5 of the item last shipped, from the nodes' databases.
    pub stored: BTreeMap<String, String>,
    /// The items the nodes' stores still hold: (key, file id, item index).
    pub items: Vec<(String, u64, u32)>,
    /// Nothing was deleted from the stores (retention off).
    pub whole: bool,
}

/// The items of a node's store: (key, file id, item index). A segment the reader deletes
/// while this reads (retention on) fails the read: it is read again.
pub fn store_items(store: &Path) -> Result<Vec<(String, u64, u32)>, Error> {
    let mut tries = 0;
    loop {
        let mut out = Vec::new();
        let mut c = Cursor::new(store, Position::START, None);
        let read = loop {
            match c.next() {
                Ok(Some(s)) => {
                    let doc = String::from_utf8_lossy(&s.item.doc_id).into_owned();
                    out.push((doc, s.file_id, s.item_idx));
                }
                Ok(None) => break Ok(out),
                Err(e) => break Err(e),
            }
        };
        match read {
            Ok(out) => return Ok(out),
            Err(e) if tries >= 3 => return Err(format!("{}: {e}", store.display()).into()),
            Err(_) => tries += 1,
        }
    }
}

/// The names of one kind's items in the check's sentences: `binding`, `bindings`.
#[derive(Debug, Clone, Copy)]
pub struct Noun {
    pub one: &'static str,
    pub many: &'static str,
}

/// What arrived of one kind: the last item of each key, and the UPDATE and DELETE items.
pub struct Arrived<'a> {
    pub last: BTreeMap<&'a str, &'a Delivered>,
    pub updates: usize,
    pub deletes: usize,
}

/// The check of one store kind (module doc); its problems go to `problems`.
pub fn judge<'a>(
    noun: Noun,
    held: &Held,
    items: &'a [Delivered],
    problems: &mut Vec<String>,
) -> Arrived<'a> {
    let Noun { one, many } = noun;
    let mut a = Arrived {
        last: BTreeMap::new(),
        updates: 0,
        deletes: 0,
    };
    let (mut twice, mut bad) = (Vec::new(), Vec::new());
    for it in items {
        match it.status {
            Status::Update => a.updates += 1,
            Status::Delete => a.deletes += 1,
            // Never shipped: the wire refuses it.
            Status::Keep => {}
        }
        if let Some(prev) = a.last.insert(&it.doc, it) {
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
    for (doc, md5) in &held.stored {
        match a.last.get(doc.as_str()) {
            None => lost.push(format!("{doc} never reached the ad server")),
            Some(it) if it.status == Status::Delete => stale.push(format!(
                "{doc}: its last item is a DELETE, the node holds a {one}"
            )),
            Some(it) if &md5_hex(&it.content) != md5 => stale.push(format!(
                "{doc}: its last item is not the {one} the node holds"
            )),
            Some(_) => {}
        }
    }
    for (doc, it) in &a.last {
        if it.status == Status::Update && !held.stored.contains_key(*doc) {
            stray.push(format!("{doc}: a {one} no node holds"));
        }
    }
    let once = exactly_once(held, items);
    for (what, list) in [
        (format!("{many} lost"), lost),
        (format!("{many} stale at the ad server"), stale),
        (format!("{one} changes delivered twice"), twice),
        ("malformed ad-server items".to_string(), bad),
        (format!("{many} no node holds"), stray),
        (
            format!("{many} store items not delivered exactly once"),
            once,
        ),
    ] {
        if !list.is_empty() {
            let shown: Vec<&str> = list.iter().take(5).map(String::as_str).collect();
            problems.push(format!(
                "{what} ({} cases): {}",
                list.len(),
                shown.join("; ")
            ));
        }
    }
    a
}

/// Every item the stores hold arrived once; with the stores whole, every item that arrived
/// is one of theirs.
fn exactly_once(held: &Held, items: &[Delivered]) -> Vec<String> {
    let mut seen: BTreeMap<(&str, u64, u32), usize> = BTreeMap::new();
    for it in items {
        *seen.entry((&it.doc, it.file_id, it.item_idx)).or_default() += 1;
    }
    let mut once = Vec::new();
    for (doc, file, idx) in &held.items {
        match seen.remove(&(doc.as_str(), *file, *idx)).unwrap_or(0) {
            1 => {}
            n => once.push(format!("item {file}:{idx} ({doc}) arrived {n} times")),
        }
    }
    if held.whole {
        for ((doc, file, idx), n) in seen {
            once.push(format!("item {file}:{idx} ({doc}) x{n}: no node wrote it"));
        }
    }
    once
}
