//! Looking at a running pipeline from outside, as an operator can: the daemons'
//! `/status.json`, the files in their directories, the databases, and the receivers' stores.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::Path;

use focuser_formats::queue::{self, QueueRecord};
use focuser_formats::segment::{doc_hash, Cursor, Position, Status};
use serde_json::Value;

use super::daemons::{self, incoming_dir, Instance};
use super::plan::Plan;
use super::{db, multidoc};
use crate::Error;

/// `GET path` on a loopback port: (status, body).
pub fn http_get(port: u16, path: &str) -> Result<(u16, String), Error> {
    let stream = TcpStream::connect(("127.0.0.1", port))?;
    match crate::net::request(stream, "GET", path, None)? {
        (0, _, _) => Err("no status in the answer".into()),
        (status, _, body) => Ok((status, body)),
    }
}

/// A daemon's `/status.json`.
pub fn status_json(i: &Instance) -> Result<Value, Error> {
    let (code, body) = http_get(i.status_port, "/status.json")?;
    if code != 200 {
        return Err(format!("{}: /status.json answered {code}", i.name).into());
    }
    Ok(serde_json::from_str(&body)?)
}

/// The sum of a figure over its labels in a `/status.json`.
pub fn figure_sum(status: &Value, name: &str) -> f64 {
    status["figures"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .filter(|f| f["name"] == name)
                .filter_map(|f| f["value"].as_f64())
                .sum()
        })
        .unwrap_or(0.0)
}

/// The path binder's passes done, a yacobot's figure.
pub const PASSES: &str = "yacobot_pathbinder_passes_total";

/// A figure's sum over its labels, `None` when the status has no such figure.
pub fn figure(status: &Value, name: &str) -> Option<f64> {
    let fs = status["figures"].as_array()?;
    let mut values = fs.iter().filter(|f| f["name"] == name).peekable();
    values.peek()?;
    Some(values.filter_map(|f| f["value"].as_f64()).sum())
}

/// Files in `dir` whose names end in `suffix` (not hidden ones, being written).
fn files(dir: &Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            !n.starts_with('.') && n.ends_with(suffix) && e.path().is_file()
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The records of the queue files a node has applied (kept in its inbox's `done/`).
pub fn applied(plan: &Plan, node: usize) -> Result<Vec<QueueRecord>, Error> {
    let mut out = Vec::new();
    for f in files(&daemons::inbox(plan, node).join("done"), ".q") {
        let (_, records) = queue::read(std::io::BufReader::new(std::fs::File::open(&f)?))
            .map_err(|e| format!("{}: {e}", f.display()))?;
        out.extend(records);
    }
    Ok(out)
}

/// Where the work of a pipeline stands.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Reflogs not yet taken, or a cycle in hand.
    pub master_busy: bool,
    pub master_cycles: u64,
    /// Queue files not yet shipped, shipped and not yet applied.
    pub queue_files: usize,
    pub inbox_files: usize,
    /// Per node: URLs loaded, URLs due or in hand, and `url.fetch_state` counts.
    pub forwarded: Vec<usize>,
    pub unsettled: Vec<i64>,
    pub states: Vec<[i64; 5]>,
    /// Per node, with the resources worker on: resources not run yet or running, and
    /// feed items in `vr_data`.
    pub feeds_pending: Vec<i64>,
    pub feed_items: Vec<i64>,
    /// Per node, with page analysis on: its multidoc worker's figures, when its status
    /// endpoint has them (without them there is nothing to wait for: the check says so).
    pub analysed: Vec<Option<multidoc::Figures>>,
    /// Per node, with bindings on: path binder passes done (`None`: no such figure yet).
    pub stub_passes: Vec<Option<f64>>,
    /// Per sender: items not yet acknowledged, and files not yet shipped.
    pub lag_items: Vec<f64>,
    pub sendfile_pending: Vec<f64>,
    /// Daemons whose status page did not answer.
    pub silent: Vec<String>,
}

impl Progress {
    /// Nothing left to do anywhere (as far as this look can tell).
    pub fn settled(&self) -> bool {
        !self.master_busy
            && self.master_cycles > 0
            && self.queue_files == 0
            && self.inbox_files == 0
            && self.unsettled.iter().all(|&n| n == 0)
            && self.feeds_pending.iter().all(|&n| n == 0)
            && self.analysis_done()
            && self.lag_items.iter().all(|&n| n == 0.0)
            && self.sendfile_pending.iter().all(|&n| n == 0.0)
            && self.silent.is_empty()
    }

    /// Whether the path binder has passed since `then` (an earlier look): on every node,
    /// `then`'s pass in hand (if any) finished and a whole pass more, begun after `then`.
    pub fn stubs_since(&self, then: &Progress) -> bool {
        self.stub_passes
            .iter()
            .zip(&then.stub_passes)
            .all(|(now, then)| match (now, then) {
                (Some(now), Some(then)) => *now >= then + 2.0,
                _ => false,
            })
    }

    /// Every node with analysis figures has analysed every archived item: its lag is 0, or
    /// (a worker without the lag figure) pages analysed and refused make its pages fetched.
    fn analysis_done(&self) -> bool {
        self.analysed.iter().zip(&self.states).all(|(a, s)| {
            a.as_ref().is_none_or(|f| match f.lag {
                Some(lag) => lag == 0.0,
                None => f.pages + f.errors >= s[2] as f64,
            })
        })
    }

    pub fn line(&self) -> String {
        let nodes: Vec<String> = self
            .states
            .iter()
            .zip(&self.forwarded)
            .enumerate()
            .map(|(i, (s, f))| {
                format!(
                    "yb{}: {f} URLs, {} fetched, {} gone, {} failed",
                    i + 1,
                    s[2],
                    s[4],
                    s[3]
                )
            })
            .collect();
        let feeds = if self.feed_items.is_empty() {
            String::new()
        } else {
            format!(
                "; feeds: {} items, {} resources to run",
                self.feed_items.iter().sum::<i64>(),
                self.feeds_pending.iter().sum::<i64>()
            )
        };
        let analysed: Vec<String> = self
            .analysed
            .iter()
            .map(|a| a.as_ref().map_or("?".into(), |f| f.pages.to_string()))
            .collect();
        let feeds = if analysed.is_empty() {
            feeds
        } else {
            format!("{feeds}; pages analysed {}", analysed.join("/"))
        };
        let passes: Vec<String> = self
            .stub_passes
            .iter()
            .map(|p| p.map_or("?".into(), |n| n.to_string()))
            .collect();
        let feeds = if passes.is_empty() {
            feeds
        } else {
            format!("{feeds}; path binder passes {}", passes.join("/"))
        };
        format!(
            "master cycles {}{}; queue files {} to ship, {} to load; {}{feeds}; sender lag {} items{}",
            self.master_cycles,
            if self.master_busy { " (busy)" } else { "" },
            self.queue_files,
            self.inbox_files,
            nodes.join("; "),
            self.lag_items.iter().sum::<f64>(),
            if self.silent.is_empty() {
                String::new()
            } else {
                format!("; not answering: {}", self.silent.join(", "))
            }
        )
    }
}

/// Looks at every part of the pipeline once.
pub fn progress(plan: &Plan) -> Result<Progress, Error> {
    let mut p = Progress {
        master_busy: !files(&incoming_dir(plan), "").is_empty()
            || plan.dir.join("master/state/cycle.journal").exists(),
        ..Progress::default()
    };
    let mut analysed = std::collections::BTreeMap::new();
    let mut passes = std::collections::BTreeMap::new();
    for i in daemons::instances(plan) {
        let status = match status_json(&i) {
            Ok(s) => s,
            Err(_) => {
                p.silent.push(i.name.clone());
                continue;
            }
        };
        match i.kind {
            daemons::Kind::Master => {
                p.master_cycles = figure_sum(&status, "master_cycles_total") as u64;
            }
            daemons::Kind::Yacobot if plan.multidoc => {
                analysed.insert(i.number, multidoc::Figures::of(&status));
                passes.insert(i.number, figure(&status, PASSES));
            }
            daemons::Kind::Sender
            | daemons::Kind::FeedSender
            | daemons::Kind::BindingsSender
            | daemons::Kind::StubsSender => {
                p.lag_items
                    .push(figure_sum(&status, "reader_sender_lag_items"));
                p.sendfile_pending
                    .push(figure_sum(&status, "reader_sendfile_pending"));
            }
            _ => {}
        }
    }
    for n in 1..=plan.nodes {
        p.queue_files += files(&daemons::queue_dir(plan, n), ".q").len();
        p.inbox_files += files(&daemons::inbox(plan, n), ".q").len();
        p.forwarded.push(applied(plan, n)?.len());
        p.unsettled.push(db::unsettled(&plan.node_dbs[n - 1])?);
        p.states.push(db::states(&plan.node_dbs[n - 1])?);
        if plan.multidoc {
            p.analysed.push(analysed.remove(&n).flatten());
        }
        if plan.bindings {
            p.stub_passes.push(passes.remove(&n).flatten());
        }
        if plan.feeds_on {
            p.feeds_pending
                .push(db::feeds_pending(&plan.node_dbs[n - 1])?);
            p.feed_items
                .push(db::feed_docs(&plan.node_dbs[n - 1])?.len() as i64);
        }
    }
    Ok(p)
}

/// One item as a receiver holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The receiver (1-based).
    pub receiver: usize,
    pub doc_id: String,
    pub status: Status,
    /// The sender stream (receiver-local number) and the item's place in the node's store.
    pub stream: u32,
    pub file_id: u64,
    pub item_idx: u32,
}

/// Every durable item of every receiver's store.
pub fn received(plan: &Plan) -> Result<Vec<Received>, Error> {
    let mut out = Vec::new();
    for k in 1..=plan.receivers {
        let mut c = Cursor::new(&daemons::received(plan, k), Position::START, None);
        while let Some(s) = c.next()? {
            out.push(Received {
                receiver: k,
                doc_id: String::from_utf8_lossy(&s.item.doc_id).into_owned(),
                status: s.item.status,
                stream: s.item.origin.stream,
                file_id: s.item.origin.file_id,
                item_idx: s.item.origin.item_idx,
            });
        }
    }
    Ok(out)
}

/// One item of a node's own store: (doc id, status, file id, item index).
pub type Written = (String, Status, u64, u32);

/// Every item still in a node's stores (all of them, when retention is off): the crawl
/// archive's, and the resources' when they run.
pub fn written(plan: &Plan, node: usize) -> Result<Vec<Written>, Error> {
    let mut out = Vec::new();
    let mut stores = vec![daemons::segments(plan, node)];
    if plan.feeds_on {
        stores.push(daemons::feed_segments(plan, node));
    }
    for store in stores {
        let mut c = Cursor::new(&store, Position::START, None);
        while let Some(s) = c.next()? {
            out.push((
                String::from_utf8_lossy(&s.item.doc_id).into_owned(),
                s.item.status,
                s.file_id,
                s.item_idx,
            ));
        }
    }
    Ok(out)
}

/// The receiver (1-based) a doc id belongs to: `CRC-32C(doc_id) % receivers`, plus one.
pub fn receiver_of(plan: &Plan, doc_id: &str) -> usize {
    (doc_hash(doc_id.as_bytes()) as usize % plan.receivers.max(1)) + 1
}

/// Items per receiver, by status.
pub fn received_counts(items: &[Received]) -> BTreeMap<usize, (u64, u64)> {
    let mut m: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    for r in items {
        let e = m.entry(r.receiver).or_default();
        match r.status {
            Status::Update => e.0 += 1,
            Status::Delete => e.1 += 1,
            // Never shipped: the wire refuses it.
            Status::Keep => {}
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The path binder has passed since an earlier look only when every node finished two
    /// passes more: the one in hand then may have begun before the last binding.
    #[test]
    fn the_path_binder_passed_since_a_look_after_two_passes_on_every_node() {
        let at = |passes: &[Option<f64>]| Progress {
            stub_passes: passes.to_vec(),
            ..Progress::default()
        };
        let then = at(&[Some(3.0), Some(5.0)]);
        assert!(!at(&[Some(4.0), Some(7.0)]).stubs_since(&then));
        assert!(!at(&[Some(5.0), None]).stubs_since(&then));
        assert!(!at(&[Some(5.0), Some(7.0)]).stubs_since(&at(&[None, Some(5.0)])));
        assert!(at(&[Some(5.0), Some(7.0)]).stubs_since(&then));
    }
}
