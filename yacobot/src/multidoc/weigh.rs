//! A batch's pages weighed with their domains' evidence and counted into it ([`Weigher`]);
//! `super::plan` groups, classifies and binds them into the rows the batch's transaction
//! writes ([`Plan`]).
//!
//! The evidence is loaded for the batch's blocks only ([`load`]: the domains, and the rows of
//! the (domain, fingerprint) pairs its pages hold): a block's weight depends on nothing else.
//! Each page is weighed BEFORE it is added to its domain's evidence (docs/multidoc.md), in
//! archive order, so a page sees the pages before it, those of the batch included.
//!
//! A page is counted into the evidence once: not when it is before the end of what was counted
//! (a rewind), nor when its URL was counted already since the domain's evidence began (a
//! page re-indexed from the archive or fetched again is archived again; counting every copy
//! would make a small site's own text look like template).

use std::collections::{HashMap, HashSet};

use chrono::{NaiveDate, NaiveDateTime, TimeDelta};
use diesel::prelude::*;
use focuser_daemon::clock;
use focuser_formats::segment::Position;
use focuser_formats::urls;
use focuser_multidoc::analyze::{Analysis, Evidence};
use focuser_multidoc::template::{DomainEvidence, Row, Seen};
use focuser_multidoc::Page;
use focuser_schema::models::{
    FingerprintCount, MultidocDomain, MultidocFingerprint, MultidocPage, NewMultidocDomain,
    NewMultidocGroup, NewMultidocPage,
};

use super::model::ModelSlot;
use super::stats::Tally;
use super::take::{Batch, PageIn, Taken};
use crate::config::MultiDocConfig;

/// A domain's key in the evidence tables: its name's "URL id" (the first 8 bytes of its MD5,
/// big-endian; docs/formats.md "Page analysis tables").
pub fn domain_key(domain: &str) -> u64 {
    urls::url_id(domain)
}

/// What a batch needs from the database.
#[derive(Default)]
pub struct Loaded {
    pub domains: HashMap<u64, MultidocDomain>,
    /// When each URL of the batch that has a row was counted.
    pub counted: HashMap<u64, Option<NaiveDateTime>>,
    pub fingerprints: Vec<MultidocFingerprint>,
}

/// Reads what `batch` needs (safe to repeat: reads only).
pub fn load(conn: &mut MysqlConnection, batch: &Batch) -> QueryResult<Loaded> {
    let mut keys = HashSet::new();
    let mut ids = HashSet::new();
    let mut pairs = HashSet::new();
    for (p, a) in batch.pages() {
        let key = domain_key(&p.domain);
        keys.insert(key);
        ids.insert(p.id);
        if let Ok(a) = a {
            pairs.extend(a.fingerprints.iter().map(|&fp| (key, fp)));
        }
    }
    let keys: Vec<u64> = keys.into_iter().collect();
    let ids: Vec<u64> = ids.into_iter().collect();
    let pairs: Vec<(u64, u64)> = pairs.into_iter().collect();
    Ok(Loaded {
        domains: MultidocDomain::load(conn, &keys)?
            .into_iter()
            .map(|d| (d.domain_key, d))
            .collect(),
        counted: MultidocPage::counted(conn, &ids)?.into_iter().collect(),
        fingerprints: MultidocFingerprint::load(conn, &pairs)?,
    })
}

/// The clock and settings of one batch.
pub struct Env {
    pub now: NaiveDateTime,
    pub today: NaiveDate,
    /// Evidence last seen before this day is expired (`MultiDoc.ExpireDays`).
    pub expired: NaiveDate,
    /// Items before this were counted already.
    pub counted_to: Position,
    pub max_fingerprints: u32,
}

impl Env {
    /// A batch's clock now, with `md`'s settings; items before `counted_to` were counted.
    pub fn now(md: &MultiDocConfig, counted_to: Position) -> Env {
        let now = clock::db_now();
        let today = now.date();
        Env {
            now,
            today,
            expired: today - TimeDelta::days(i64::from(md.expire_days)),
            counted_to,
            max_fingerprints: md.max_fingerprints,
        }
    }
}

/// What the batch's transaction writes, and what it adds to the figures once committed.
#[derive(Default)]
pub struct Plan {
    pub domains: Vec<NewMultidocDomain>,
    pub fingerprints: Vec<FingerprintCount>,
    pub pages: Vec<NewMultidocPage>,
    pub gone: Vec<u64>,
    /// Domains that may hold more than `MultiDoc.MaxFingerprints` rows once it is in.
    pub over_cap: Vec<u64>,
    /// Duplicate groups founded or taking a new representative, and the groups the batch's
    /// pages joined or left (settled once the pages are written).
    pub groups: Vec<NewMultidocGroup>,
    pub touched: Vec<u64>,
    pub tally: Tally,
}

/// A domain's evidence during a batch, and what the batch adds to it.
struct Domain {
    name: String,
    evidence: DomainEvidence,
    /// When its evidence began (now if it is new or expired).
    since: NaiveDateTime,
    /// Rows it holds (expired ones included), as last counted, and the pairs known to exist.
    rows: u32,
    present: HashSet<u64>,
    /// Pages counted before the batch (0 if it is new or expired), and by the batch.
    pages_before: u32,
    pages: u32,
    new_rows: u32,
    /// Per fingerprint: pages of the batch it was on, the domain's page count at the last.
    counts: HashMap<u64, (u32, u32)>,
}

impl Domain {
    fn new(name: &str, row: Option<&MultidocDomain>, env: &Env) -> Domain {
        let live = row.filter(|r| r.seen_on >= env.expired);
        Domain {
            name: name.to_string(),
            // The table bounds the evidence; in memory it holds only the batch's blocks.
            evidence: DomainEvidence::new(usize::MAX),
            since: live.map_or(env.now, |r| r.since),
            rows: row.map_or(0, |r| r.fingerprints),
            present: HashSet::new(),
            pages_before: live.map_or(0, |r| r.pages),
            pages: 0,
            new_rows: 0,
            counts: HashMap::new(),
        }
    }

    fn add(&mut self, fingerprints: &[u64]) {
        self.pages += 1;
        self.evidence.add_page(fingerprints.iter().copied());
        let at = self.evidence.pages();
        let mut fps = fingerprints.to_vec();
        fps.sort_unstable();
        fps.dedup();
        for fp in fps {
            let c = self.counts.entry(fp).or_insert((0, 0));
            c.0 += 1;
            c.1 = at;
            if self.present.insert(fp) {
                self.new_rows += 1;
            }
        }
    }
}

/// The batch's domains' evidence as the batch goes: each page weighed with the pages counted
/// before it (its batch's earlier ones included), then counted in if it is to be (a
/// duplicate is not: see `super::dups`).
pub struct Weigher {
    domains: HashMap<u64, Domain>,
    counted: HashMap<u64, Option<NaiveDateTime>>,
}

impl Weigher {
    pub fn new(batch: &Batch, loaded: Loaded, env: &Env) -> Weigher {
        Weigher {
            domains: domains(batch, &loaded, env),
            counted: loaded.counted,
        }
    }

    /// A `DELETE` item: if the URL comes back, it is a new page of its domain.
    pub fn gone(&mut self, id: u64) {
        self.counted.insert(id, None);
    }

    /// `a` weighed with its domain's evidence; and whether it may be counted into it: not
    /// when its item is before the end of what was counted (a rewind), nor when its URL was
    /// counted since the domain's evidence began.
    pub fn weigh(&mut self, p: &PageIn, mut a: Analysis, env: &Env) -> (Analysis, bool) {
        let Some(d) = self.domains.get_mut(&domain_key(&p.domain)) else {
            return (a, false);
        };
        let in_evidence = in_evidence(&self.counted, p.id, d);
        a.weigh(Some(Evidence {
            domain: &d.evidence,
            includes_page: in_evidence,
        }));
        (a, p.place >= env.counted_to && !in_evidence)
    }

    /// Counts page `p` (weighed) into its domain's evidence.
    pub fn count(&mut self, p: &PageIn, a: &Analysis, env: &Env) {
        if let Some(d) = self.domains.get_mut(&domain_key(&p.domain)) {
            d.add(&a.fingerprints);
            self.counted.insert(p.id, Some(env.now));
        }
    }

    /// What the batch counted into its domains, added to `plan`.
    pub fn finish(self, env: &Env, plan: &mut Plan) {
        for (key, d) in self.domains {
            counts(key, d, env, plan);
        }
    }
}

/// A one-page `batch`'s page weighed as the worker weighs it when it analyses it again
/// (`yacobot bindings URL`), counting nothing; and per block, whether the evidence calls it
/// template. `None`: the batch holds no page, or its page could not be analysed.
pub fn reweigh(
    batch: Batch,
    loaded: Loaded,
    env: &Env,
    slot: &mut ModelSlot,
) -> Option<(PageIn, Page, Vec<bool>)> {
    let mut domains = domains(&batch, &loaded, env);
    let Some(Taken::Page(p, a)) = batch.items.into_iter().next() else {
        return None;
    };
    let a = (*a).ok()?;
    let d = domains.get_mut(&domain_key(&p.domain))?;
    let in_evidence = in_evidence(&loaded.counted, p.id, d);
    let mut a = a;
    a.weigh(Some(Evidence {
        domain: &d.evidence,
        includes_page: in_evidence,
    }));
    let e = Evidence {
        domain: &d.evidence,
        includes_page: in_evidence,
    };
    let template = a.fingerprints.iter().map(|&fp| e.is_template(fp)).collect();
    let (model, tokenizer) = slot.parts();
    let page = Page::from_analysis(a, Some(&p.url), tokenizer, model);
    Some((p, page, template))
}

/// Whether page `id` is counted in its domain's evidence already (since it began).
fn in_evidence(counted: &HashMap<u64, Option<NaiveDateTime>>, id: u64, d: &Domain) -> bool {
    let prior = counted.get(&id).copied().flatten();
    prior.is_some_and(|t| t >= d.since)
}

/// The batch's domains with their evidence as loaded (an expired domain, or one row of an
/// expired pair, reads as absent: the SQL restarts them the same way).
fn domains(batch: &Batch, loaded: &Loaded, env: &Env) -> HashMap<u64, Domain> {
    let mut domains: HashMap<u64, Domain> = HashMap::new();
    for (p, _) in batch.pages() {
        let key = domain_key(&p.domain);
        domains
            .entry(key)
            .or_insert_with(|| Domain::new(&p.domain, loaded.domains.get(&key), env));
    }
    let mut rows: HashMap<u64, Vec<Row>> = HashMap::new();
    for f in &loaded.fingerprints {
        let Some(d) = domains.get_mut(&f.domain_key) else {
            continue;
        };
        d.present.insert(f.fingerprint);
        let live = loaded
            .domains
            .get(&f.domain_key)
            .is_some_and(|r| r.seen_on >= env.expired);
        if live && f.seen_on >= env.expired {
            rows.entry(f.domain_key).or_default().push(Row {
                fingerprint: f.fingerprint,
                seen: Seen {
                    pages: f.pages,
                    last_seen: f.last_page,
                },
            });
        }
    }
    for (key, d) in domains.iter_mut() {
        let rows = rows.remove(key).unwrap_or_default();
        d.evidence = DomainEvidence::from_rows(d.pages_before, rows, usize::MAX);
    }
    domains
}

/// What the batch counted into domain `d`, added to the plan.
fn counts(key: u64, d: Domain, env: &Env, plan: &mut Plan) {
    if d.pages == 0 {
        return;
    }
    if u64::from(d.rows) + u64::from(d.new_rows) > u64::from(env.max_fingerprints) {
        plan.over_cap.push(key);
    }
    plan.fingerprints.extend(
        d.counts
            .iter()
            .map(|(&fp, &(pages, last_page))| FingerprintCount {
                domain_key: key,
                fingerprint: fp,
                pages,
                last_page,
                seen_on: env.today,
            }),
    );
    plan.domains.push(NewMultidocDomain {
        domain_key: key,
        domain: d.name,
        pages: d.pages,
        fingerprints: d.new_rows,
        since: env.now,
        seen_on: env.today,
    });
}
