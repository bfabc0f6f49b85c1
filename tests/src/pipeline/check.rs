//! What must hold once a pipeline has settled, checked from the outside: each forwarded URL
//! went to the node that owns its domain and was crawled there as the sample web says; each
//! document reached the receiver its doc id hashes to, once. Every failed check is a
//! sentence in [`Report::problems`]; an empty list is a pass.

use std::collections::{BTreeMap, BTreeSet};

use focuser_formats::segment::Status;
use focuser_formats::urls;
use focuser_schema::models::{DataStatus, FetchState};

use super::observe::{self, Received};
use super::plan::Plan;
use super::sample::{self, Expect, Reflog};
use super::{bindings, daemons, db, multidoc, pages};
use crate::Error;

/// Stop listing problems of one kind after this many (the count says the rest).
const SHOWN: usize = 5;

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub problems: Vec<String>,
    /// Per node: URLs forwarded (queue records applied), pages fetched, gone, failed.
    pub forwarded: Vec<usize>,
    pub fetched: Vec<usize>,
    pub gone: Vec<usize>,
    pub failed: Vec<usize>,
    /// Per node, with the resources worker on: feed items in `vr_data`.
    pub feed_items: Vec<usize>,
    /// Per node, with page analysis on: its multidoc worker's figures, if it has any.
    pub analysis: Vec<Option<multidoc::Figures>>,
    /// Per node, with page analysis on: the labels of the articles its fetched pages show.
    pub labels: Vec<BTreeMap<String, usize>>,
    /// Per receiver: (UPDATE, DELETE) items held.
    pub received: BTreeMap<usize, (u64, u64)>,
    /// Documents that arrived more than once (allowed only where a crawler was killed).
    pub repeated_docs: usize,
    /// With bindings on: what the ad-server receiver got.
    pub bindings: Option<bindings::Summary>,
}

impl Report {
    fn problem(&mut self, kind: &str, list: &[String]) {
        if list.is_empty() {
            return;
        }
        let more = list.len().saturating_sub(SHOWN);
        let shown = list[..list.len().min(SHOWN)].join("; ");
        self.problems.push(if more > 0 {
            format!("{kind} ({} cases): {shown}; and {more} more", list.len())
        } else {
            format!("{kind}: {shown}")
        });
    }
}

/// What the check may accept.
#[derive(Debug, Clone, Default)]
pub struct Allow {
    /// Nodes whose crawler was killed: a page it archived but had not booked is fetched and
    /// archived again after its claim lapses (docs/operations.md), so its document may
    /// arrive twice, as two distinct items.
    pub repeats_from: BTreeSet<usize>,
}

/// Checks a settled pipeline. `reflogs` are the reflogs dropped so far (their URLs are what
/// the master must have forwarded); `written` compares the receivers with the nodes' stores
/// item by item, which needs retention off (`Plan::retention_check` long).
pub fn check(
    plan: &Plan,
    reflogs: &[Reflog],
    allow: &Allow,
    written: bool,
) -> Result<Report, Error> {
    let mut r = Report::default();
    let owners = db::domain_owners(&plan.master_db)?;
    let mut expected: BTreeMap<u64, (String, Expect)> = BTreeMap::new();
    let mut page_of: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    for reflog in reflogs {
        for (id, u) in &reflog.urls {
            expected.insert(*id, (u.url.domain.clone(), u.expect));
            page_of.insert(*id, (u.host, u.path));
        }
    }
    // Per node, the sample pages it fetched (host, path number): what their labels are.
    let mut fetched_pages: Vec<Vec<(usize, usize)>> = vec![Vec::new(); plan.nodes];

    // Master → nodes: every reflog URL forwarded once, to its domain's owner.
    let mut node_of: BTreeMap<u64, usize> = BTreeMap::new();
    let (mut misrouted, mut twice) = (Vec::new(), Vec::new());
    for n in 1..=plan.nodes {
        let records = observe::applied(plan, n)?;
        r.forwarded.push(records.len());
        for rec in records {
            if owners.get(&rec.domain).copied() != Some(n as u32) {
                misrouted.push(format!(
                    "{} went to node {n}, its domain's owner is {:?}",
                    rec.url,
                    owners.get(&rec.domain)
                ));
            }
            if let Some(first) = node_of.insert(rec.id, n) {
                twice.push(format!(
                    "{} forwarded to node {first} and node {n}",
                    rec.url
                ));
            }
        }
    }
    r.problem(
        "URLs routed to a node that does not own their domain",
        &misrouted,
    );
    r.problem("URLs forwarded twice", &twice);
    let missing: Vec<String> = expected
        .keys()
        .filter(|id| !node_of.contains_key(id))
        .map(|id| urls::doc_id(*id))
        .collect();
    r.problem("reflog URLs never forwarded", &missing);
    let unexpected: Vec<String> = node_of
        .keys()
        .filter(|id| !expected.contains_key(id))
        .map(|id| urls::doc_id(*id))
        .collect();
    r.problem("URLs forwarded that no reflog holds", &unexpected);

    // Each node crawled its own URLs, and only those, as the sample web answers them.
    let mut outcome: BTreeMap<u64, FetchState> = BTreeMap::new();
    let (mut wrong_node, mut wrong_outcome) = (Vec::new(), Vec::new());
    for n in 1..=plan.nodes {
        let (mut fetched, mut gone, mut failed) = (0, 0, 0);
        for (id, domain, state, error) in db::urls(&plan.node_dbs[n - 1])? {
            match state {
                FetchState::Fetched => {
                    fetched += 1;
                    fetched_pages[n - 1].extend(page_of.get(&id));
                }
                FetchState::Failed => failed += 1,
                FetchState::Gone => gone += 1,
                _ => {}
            }
            if node_of.get(&id) != Some(&n) {
                wrong_node.push(format!(
                    "{} ({domain}) is in node {n}'s frontier",
                    urls::doc_id(id)
                ));
            }
            outcome.insert(id, state);
            let want = expected.get(&id).map(|(_, e)| *e);
            let ok = match (want, state) {
                (Some(Expect::Page), FetchState::Fetched)
                | (Some(Expect::Gone), FetchState::Gone) => true,
                (Some(Expect::Disallowed), FetchState::Failed) => error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("disallowed")),
                (None, _) => true, // reported above
                _ => false,
            };
            if !ok {
                wrong_outcome.push(format!(
                    "{} on node {n}: fetch_state {} ({}), expected {want:?}",
                    urls::doc_id(id),
                    state.code(),
                    error.unwrap_or_default()
                ));
            }
        }
        r.fetched.push(fetched);
        r.gone.push(gone);
        r.failed.push(failed);
    }
    r.problem(
        "URLs in the frontier of a node they were not sent to",
        &wrong_node,
    );
    r.problem(
        "URLs whose crawl outcome is not what the sample web answers",
        &wrong_outcome,
    );
    let never: Vec<String> = node_of
        .keys()
        .filter(|id| !outcome.contains_key(id))
        .map(|id| urls::doc_id(*id))
        .collect();
    r.problem("forwarded URLs missing from their node's frontier", &never);

    // Feed items: each one the resources worker wrote is a document too.
    let mut feed: BTreeMap<String, (usize, Status)> = BTreeMap::new();
    if plan.feeds_on {
        for n in 1..=plan.nodes {
            let docs = db::feed_docs(&plan.node_dbs[n - 1])?;
            r.feed_items.push(docs.len());
            for (doc, data_status) in docs {
                let status = if data_status == DataStatus::Live {
                    Status::Update
                } else {
                    Status::Delete
                };
                feed.insert(doc, (n, status));
            }
        }
    }

    // Page analysis: every page each node fetched went through its multidoc worker.
    if plan.multidoc {
        for i in daemons::instances(plan) {
            if i.kind == daemons::Kind::Yacobot {
                let status = observe::status_json(&i).ok();
                r.analysis
                    .push(status.as_ref().and_then(multidoc::Figures::of));
            }
        }
        let articles = pages::Articles::load(plan)?;
        r.labels = fetched_pages
            .iter()
            .map(|p| {
                articles
                    .labels(p.iter().copied())
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect()
            })
            .collect();
        let problems = multidoc::check(plan, &r.analysis, &r.fetched, &r.labels);
        r.problem("pages not analysed as they should be", &problems);
    }

    // Nodes → receivers: each document at the receiver its doc id hashes to, once.
    let items = observe::received(plan)?;
    r.received = observe::received_counts(&items);
    check_documents(plan, &mut r, &items, &outcome, &node_of, &feed, allow);
    if written {
        check_items(plan, &mut r, &items)?;
    }
    if plan.bindings {
        let b = bindings::check(plan, written)?;
        r.problems.extend(b.problems.iter().cloned());
        r.bindings = Some(b);
    }
    Ok(r)
}

fn check_documents(
    plan: &Plan,
    r: &mut Report,
    items: &[Received],
    outcome: &BTreeMap<u64, FetchState>,
    node_of: &BTreeMap<u64, usize>,
    feed: &BTreeMap<String, (usize, Status)>,
    allow: &Allow,
) {
    let mut by_doc: BTreeMap<&str, Vec<&Received>> = BTreeMap::new();
    for it in items {
        by_doc.entry(it.doc_id.as_str()).or_default().push(it);
    }
    let (mut lost, mut elsewhere, mut repeated, mut status, mut stray) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // (doc id, node, the status it must arrive with): pages, gone pages, feed items.
    let mut wanted: Vec<(String, usize, Status)> = Vec::new();
    for (id, state) in outcome {
        let doc = urls::doc_id(*id);
        let node = node_of.get(id).copied().unwrap_or(0);
        match state {
            FetchState::Fetched => wanted.push((doc, node, Status::Update)),
            FetchState::Gone => wanted.push((doc, node, Status::Delete)),
            _ if by_doc.contains_key(doc.as_str()) => {
                stray.push(format!("{doc} (fetch_state {}) has items", state.code()))
            }
            _ => {}
        }
    }
    wanted.extend(feed.iter().map(|(doc, (n, s))| (doc.clone(), *n, *s)));
    for (doc, node, want) in wanted {
        let got = by_doc.remove(doc.as_str()).unwrap_or_default();
        let home = observe::receiver_of(plan, &doc);
        if got.is_empty() {
            lost.push(format!("{doc} never reached receiver {home}"));
            continue;
        }
        for g in &got {
            if g.receiver != home {
                elsewhere.push(format!(
                    "{doc} at receiver {}, its receiver is {home}",
                    g.receiver
                ));
            }
            if g.status != want {
                status.push(format!(
                    "{doc} arrived as {}, the node booked {}",
                    g.status.name(),
                    want.name()
                ));
            }
        }
        if got.len() > 1 {
            r.repeated_docs += 1;
            if !allow.repeats_from.contains(&node) {
                repeated.push(format!("{doc} arrived {} times (node {node})", got.len()));
            }
        }
    }
    for (doc, got) in by_doc {
        stray.push(format!(
            "{doc}: {} items for a document no node holds",
            got.len()
        ));
    }
    r.problem("documents lost", &lost);
    r.problem("documents at the wrong receiver", &elsewhere);
    r.problem("documents that arrived more than once", &repeated);
    r.problem("documents with the wrong status", &status);
    r.problem("items that should not exist", &stray);
}

/// Every item of every node's store at its receiver exactly once, and nothing else there.
fn check_items(plan: &Plan, r: &mut Report, items: &[Received]) -> Result<(), Error> {
    // Doc ids are distinct between nodes, so (doc id, file id, item) names an item.
    let mut want: BTreeMap<(String, u64, u32), usize> = BTreeMap::new();
    for n in 1..=plan.nodes {
        for (doc, _, file_id, idx) in observe::written(plan, n)? {
            let home = observe::receiver_of(plan, &doc);
            want.insert((doc, file_id, idx), home);
        }
    }
    let mut seen: BTreeMap<(String, u64, u32), usize> = BTreeMap::new();
    let (mut dup, mut extra, mut lost) = (Vec::new(), Vec::new(), Vec::new());
    for it in items {
        let key = (it.doc_id.clone(), it.file_id, it.item_idx);
        if seen.insert(key.clone(), it.receiver).is_some() {
            dup.push(format!(
                "item {}:{} ({}) stored twice",
                it.file_id, it.item_idx, it.doc_id
            ));
        }
        if want.get(&key) != Some(&it.receiver) {
            extra.push(format!(
                "item {}:{} ({}) at receiver {} was not written for it",
                it.file_id, it.item_idx, it.doc_id, it.receiver
            ));
        }
    }
    for (key, home) in &want {
        if !seen.contains_key(key) {
            lost.push(format!(
                "item {}:{} ({}) never reached receiver {home}",
                key.1, key.2, key.0
            ));
        }
    }
    r.problem("items stored twice by a receiver", &dup);
    r.problem("items at a receiver that no node wrote for it", &extra);
    r.problem("items written by a node that never arrived", &lost);
    Ok(())
}

/// The sample web's view, for a pipeline whose web server runs in the test: every request
/// for a page came from the crawler of the node owning its domain (its User-Agent names the
/// node), once (or more for a node in `allow`), and no disallowed page was asked for.
pub fn web_log(
    plan: &Plan,
    log: &[crate::web::Logged],
    allow: &Allow,
) -> Result<Vec<String>, Error> {
    let mut node_of: BTreeMap<u64, usize> = BTreeMap::new();
    for n in 1..=plan.nodes {
        for rec in observe::applied(plan, n)? {
            node_of.insert(rec.id, n);
        }
    }
    if plan.feeds_on {
        // Each sample feed is a resource of one node (db::load_sample): its sitemap and feeds
        // are that node's to fetch.
        for r in sample::feed_resources(plan) {
            let node = (r.number - 1) % plan.nodes.max(1) + 1;
            let paths = std::iter::once(&r.sitemap_path).chain(&r.feed_paths);
            for path in paths {
                if let Ok(n) = urls::normalize(&r.url(plan, path), urls::MAX_URL_LENGTH) {
                    node_of.insert(n.id, node);
                }
            }
        }
    }
    let mut asked: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    let (mut stranger, mut wrong, mut disallowed) = (Vec::new(), Vec::new(), Vec::new());
    for l in log.iter().filter(|l| l.path != "/robots.txt") {
        let url = format!("http://{}:{}{}", l.host, plan.web_port, l.path);
        let Ok(n) = urls::normalize(&url, urls::MAX_URL_LENGTH) else {
            stranger.push(format!("{url}: not a URL"));
            continue;
        };
        let Some(&node) = node_of.get(&n.id) else {
            stranger.push(format!(
                "{url} asked for by {:?}, never forwarded",
                l.user_agent
            ));
            continue;
        };
        if !l
            .user_agent
            .contains(&format!("({})", plan.node_name(node)))
        {
            wrong.push(format!(
                "{url} asked for by {:?}; its node is {}",
                l.user_agent,
                plan.node_name(node)
            ));
        }
        if let (Some(h), Some(j)) = (sample::host_index(&l.host), sample::path_index(&l.path)) {
            if sample::expect(h, j) == Expect::Disallowed {
                disallowed.push(format!("{url} is disallowed by robots.txt"));
            }
        }
        asked.entry(n.id).or_default().push(&l.user_agent);
    }
    let mut twice = Vec::new();
    for (id, who) in &asked {
        let node = node_of.get(id).copied().unwrap_or(0);
        if who.len() > 1 && !allow.repeats_from.contains(&node) {
            twice.push(format!(
                "{} asked for {} times",
                urls::doc_id(*id),
                who.len()
            ));
        }
    }
    let mut r = Report::default();
    r.problem("requests for URLs no node was sent", &stranger);
    r.problem("requests by a crawler that does not own the domain", &wrong);
    r.problem("requests robots.txt forbids", &disallowed);
    r.problem("pages asked for more than once", &twice);
    Ok(r.problems)
}
