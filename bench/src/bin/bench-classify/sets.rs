//! The labelled sets of `../shared/data/classify` and their deterministic splits. Each set is cut
//! into `train` and `test`; tuning uses only `train`, cut again the same way ([`Set::inner`]).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::Value;

/// A labelled document: its label paths (names from the top) and its text.
#[derive(Clone, Debug)]
pub struct Item {
    pub labels: Vec<Vec<String>>,
    pub text: String,
    /// Its place in time (20 Newsgroups: the article number, which grows with time in a group).
    pub order: u64,
}

pub struct Set {
    pub name: &'static str,
    pub metric: Metric,
    pub train: Vec<Item>,
    pub test: Vec<Item>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Accuracy,
    /// Multi-label: micro-F1 over the labels.
    MicroF1,
}

impl Set {
    /// The train part cut again, the same way, for tuning.
    pub fn inner(&self) -> Set {
        let (train, test) = cut(self.train.clone(), self.name);
        Set {
            name: self.name,
            metric: self.metric,
            train,
            test,
        }
    }

    pub fn smaller(mut self, train: usize, test: usize) -> Set {
        self.train = spread(self.train, train);
        self.test = spread(self.test, test);
        self
    }
}

/// At most `n` items, taken evenly.
fn spread(items: Vec<Item>, n: usize) -> Vec<Item> {
    let k = items.len().div_ceil(n.max(1)).max(1);
    items.into_iter().step_by(k).collect()
}

/// How each set is cut: by time, the last fifth to test, as the held-out parts are later in
/// time: 20 Newsgroups in each group by article number (as its "bydate" split), the others as
/// they come (oldest first).
fn cut(items: Vec<Item>, name: &str) -> (Vec<Item>, Vec<Item>) {
    if name != "20newsgroups" {
        let mut items = items;
        let test = items.split_off(items.len() * 4 / 5);
        return (items, test);
    }
    let mut groups: std::collections::BTreeMap<Vec<String>, Vec<Item>> = Default::default();
    for i in items {
        groups
            .entry(i.labels.first().cloned().unwrap_or_default())
            .or_default()
            .push(i);
    }
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for (_, mut g) in groups {
        g.sort_by_key(|i| i.order);
        let t = g.split_off(g.len() * 4 / 5);
        train.extend(g);
        test.extend(t);
    }
    (train, test)
}

/// Reads `dir/name.gz`, or `dir/name` when there is no `.gz` (a plain copy made by unpack.sh).
fn open(dir: &Path, name: &str) -> anyhow::Result<Box<dyn BufRead>> {
    let gz = dir.join(format!("{name}.gz"));
    let plain = dir.join(name);
    let r: Box<dyn Read> = if gz.exists() {
        Box::new(flate2::read::GzDecoder::new(
            std::fs::File::open(&gz).with_context(|| gz.display().to_string())?,
        ))
    } else {
        Box::new(std::fs::File::open(&plain).with_context(|| plain.display().to_string())?)
    };
    Ok(Box::new(BufReader::with_capacity(1 << 20, r)))
}

fn jsonl(dir: &Path, name: &str) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    for (i, line) in open(dir, name)?.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(&line).with_context(|| format!("{name}:{}", i + 1))?);
    }
    Ok(out)
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// 20 Newsgroups: the group's dotted name is its path (`comp.sys.mac.hardware`); raw text with
/// headers, as the published figures used.
pub fn newsgroups(data: &Path) -> anyhow::Result<Set> {
    let items = jsonl(&data.join("classify/20newsgroups"), "train.jsonl")?
        .iter()
        .map(|v| Item {
            labels: vec![text(v, "label").split('.').map(str::to_owned).collect()],
            text: text(v, "text"),
            order: text(v, "id")
                .rsplit('/')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
        })
        .collect();
    let (train, test) = cut(items, "20newsgroups");
    Ok(Set {
        name: "20newsgroups",
        metric: Metric::Accuracy,
        train,
        test,
    })
}

/// Lenta headlines of the 15 rubrics with at least 200 items, oldest first (the file is newest
/// first; ties keep the file's order).
pub fn lenta(data: &Path) -> anyhow::Result<Set> {
    let rows = jsonl(&data.join("classify/lenta"), "dev.jsonl")?;
    let mut count = std::collections::HashMap::<String, usize>::new();
    for v in &rows {
        *count.entry(text(v, "label")).or_default() += 1;
    }
    let mut items: Vec<(String, usize, Item)> = rows
        .iter()
        .enumerate()
        .filter(|(_, v)| count.get(&text(v, "label")).is_some_and(|&c| c >= 200))
        .map(|(i, v)| {
            let item = Item {
                labels: vec![vec![text(v, "label")]],
                text: text(v, "text"),
                order: i as u64,
            };
            (text(v, "date"), usize::MAX - i, item)
        })
        .collect();
    items.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let (train, test) = cut(items.into_iter().map(|x| x.2).collect(), "lenta");
    Ok(Set {
        name: "lenta",
        metric: Metric::Accuracy,
        train,
        test,
    })
}

/// Reuters-21578 ModApte-like: the TOPICS="YES" train documents with at least one topic, in
/// NEWID order, text = title + "\n" + body (entities decoded); the labels scored are those with
/// a document on both sides of the cut.
pub fn reuters(data: &Path) -> anyhow::Result<Set> {
    let mut rows: Vec<(u64, Item)> = Vec::new();
    for v in jsonl(&data.join("classify/reuters21578"), "train.jsonl")? {
        if text(&v, "topics_attr") != "YES" {
            continue;
        }
        let labels: Vec<Vec<String>> = v
            .get("label")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(|s| vec![s.to_owned()])
                    .collect()
            })
            .unwrap_or_default();
        if labels.is_empty() {
            continue;
        }
        let id: u64 = text(&v, "id").parse().unwrap_or(0);
        let body = unescape(&format!("{}\n{}", text(&v, "title"), text(&v, "text")));
        rows.push((
            id,
            Item {
                labels,
                text: body,
                order: id,
            },
        ));
    }
    rows.sort_by_key(|r| r.0);
    let (mut train, mut test) = cut(rows.into_iter().map(|r| r.1).collect(), "reuters");
    let names = |items: &[Item]| -> std::collections::HashSet<Vec<String>> {
        items
            .iter()
            .flat_map(|i| i.labels.iter().cloned())
            .collect()
    };
    let both: std::collections::HashSet<Vec<String>> =
        names(&train).intersection(&names(&test)).cloned().collect();
    for part in [&mut train, &mut test] {
        for i in part.iter_mut() {
            i.labels.retain(|l| both.contains(l));
        }
        part.retain(|i| !i.labels.is_empty());
    }
    Ok(Set {
        name: "reuters",
        metric: Metric::MicroF1,
        train,
        test,
    })
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest.find(';').filter(|&e| e <= 8);
        let ent = end.map(|e| &rest[1..e]);
        let ch = match ent {
            Some("lt") => Some('<'),
            Some("gt") => Some('>'),
            Some("amp") => Some('&'),
            Some("quot") => Some('"'),
            Some(e) if e.starts_with('#') => e[1..].parse::<u32>().ok().and_then(char::from_u32),
            _ => None,
        };
        match (ch, end) {
            (Some(c), Some(e)) => {
                if !c.is_control() {
                    out.push(c);
                }
                rest = &rest[e + 1..];
            }
            _ => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The data directory: `--data`, else `../shared/data` from the repository root; absent, where
/// to get it.
pub fn data_dir(arg: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let dir =
        arg.unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    if !dir.join("classify").is_dir() {
        bail!(
            "no labelled data in {}: this benchmark reads the development sets of shared/data \
             (classify/20newsgroups, classify/lenta, classify/reuters21578; its README gives their \
             sources and licences). Put that tree beside the repository as ../shared/data, or \
             pass --data DIR.",
            dir.display()
        );
    }
    Ok(dir)
}
