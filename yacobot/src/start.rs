//! URLs that do not come from the reflog (the source's starturlfile and turtle_addurl;
//! docs/operations.md "yacobot: exclusions and start URLs"): `yacobot url add URL…` and
//! `Url.StartFile`, which the loader reads when it starts.
//!
//! A start URL is normalised as the master does (user info, IP addresses and internal hosts
//! refused as by its defaults), taken only if this node owns its domain (a domain no node owns
//! yet becomes this node's, as the master's first assignment would), passed through the
//! query-argument rules as a queued URL is, and refused if the exclusion file excludes what
//! would be stored. A new URL is inserted due now, as the loader inserts one with a hit; one
//! already in the frontier is made due now by `url add`, and left alone by the start file
//! (which is read at every start).

use std::collections::{BTreeSet, HashMap};

use anyhow::{anyhow, Context};
use chrono::NaiveDateTime;
use diesel::mysql::MysqlConnection;
use diesel::{OptionalExtension, QueryResult};
use focuser_daemon::Config;
use focuser_formats::queue::QueueRecord;
use focuser_formats::reflog::{self, HostPolicy};
use focuser_formats::urls::{self, NormalUrl};
use focuser_schema::models::{NewPartnerDomain, PartnerDomain, Url, YacobotNode};

use crate::config::YacobotConfig;
use crate::exclude::Rules;
use crate::loader::qargs;

pub mod file;

/// What became of a start URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Inserted, due now.
    Added,
    /// In the frontier already: made due now (`url add`), or left as it was (the file).
    Known,
    /// Not taken: the exclusion file excludes it (which rule).
    Excluded(String),
    /// Not taken: why (another node's domain).
    Refused(String),
}

/// A start URL as given, normalised and checked as the master checks a reflog URL; the error
/// says why not.
pub fn check(raw: &str) -> Result<NormalUrl, String> {
    let n = reflog::normalize_url(raw.trim(), urls::MAX_URL_LENGTH).map_err(|e| e.to_string())?;
    reflog::check_host(&n.url, HostPolicy::default()).map_err(|e| e.to_string())?;
    Ok(n)
}

/// This node's id: `node_id`, or the `yacobot_node` row named `node` (`None`: there is none).
pub fn this_node(
    conn: &mut MysqlConnection,
    cfg: &Config<YacobotConfig>,
) -> QueryResult<Option<u32>> {
    if let Some(id) = cfg.daemon.node_id {
        return Ok(Some(id));
    }
    YacobotNode::find_by_name(conn, &cfg.daemon.node)
        .optional()
        .map(|n| n.map(|n| n.id))
}

/// Why start URLs cannot be taken without knowing this node's id.
pub fn no_node(cfg: &Config<YacobotConfig>) -> anyhow::Error {
    anyhow!(
        "node {:?} is not in yacobot_node and node_id is not set: which domains are this node's is unknown",
        cfg.daemon.node
    )
}

/// What a batch of start URLs is added with.
pub struct Adding<'a> {
    pub node: u32,
    /// `partner_domain.assigned_by` of the domains taken.
    pub by: &'a str,
    pub exclude: &'a Rules,
    /// Make the URLs already in the frontier due now (`url add`), or leave them (the file).
    pub make_due: bool,
    pub now: NaiveDateTime,
}

/// Adds `batch` (checked) inside the caller's transaction; one outcome a URL, in order.
pub fn add(
    conn: &mut MysqlConnection,
    batch: &[NormalUrl],
    how: &Adding<'_>,
) -> QueryResult<Vec<Outcome>> {
    let owners = owners(conn, batch, how)?;
    let mut outcomes: Vec<Option<Outcome>> = batch
        .iter()
        .map(|n| match owners.get(n.domain.as_str()) {
            Some(&node) if node == how.node => None,
            Some(node) => Some(Outcome::Refused(format!(
                "domain {} is node {node}'s, not this node's ({}): add it there",
                n.domain, how.node
            ))),
            None => Some(Outcome::Refused(format!("domain {}: no owner", n.domain))),
        })
        .collect();
    let records: Vec<(usize, QueueRecord)> = batch
        .iter()
        .enumerate()
        .filter(|(i, _)| outcomes[*i].is_none())
        .map(|(i, n)| (i, record(n, how.now)))
        .collect();
    let queued: Vec<QueueRecord> = records.iter().map(|(_, r)| r.clone()).collect();
    let (prepared, _) = qargs::prepare(conn, &mut qargs::RuleCache::default(), &queued, how.now)?;
    let mut ids: Vec<u64> = prepared.iter().map(|p| p.id).collect();
    ids.sort_unstable();
    ids.dedup();
    let known: BTreeSet<u64> = Url::existing_ids(conn, &ids)?.into_iter().collect();
    let mut new_rows = Vec::new();
    let mut taken = BTreeSet::new();
    for ((i, _), p) in records.iter().zip(&prepared) {
        if let Some(why) = how.exclude.why(&p.url) {
            outcomes[*i] = Some(Outcome::Excluded(why));
        } else if known.contains(&p.id) || !taken.insert(p.id) {
            outcomes[*i] = Some(Outcome::Known);
        } else {
            new_rows.push(p.row());
            outcomes[*i] = Some(Outcome::Added);
        }
    }
    Url::load_batch(conn, &new_rows, how.now)?;
    if how.make_due {
        let due: Vec<u64> = known.into_iter().collect();
        Url::make_due(conn, &due, how.now)?;
    }
    Ok(outcomes
        .into_iter()
        .map(|o| o.unwrap_or(Outcome::Refused("not looked at".into())))
        .collect())
}

/// The owner of each domain of `batch`; a domain no node owns becomes this node's.
fn owners<'b>(
    conn: &mut MysqlConnection,
    batch: &'b [NormalUrl],
    how: &Adding<'_>,
) -> QueryResult<HashMap<&'b str, u32>> {
    let domains: BTreeSet<&str> = batch.iter().map(|n| n.domain.as_str()).collect();
    let domains: Vec<&str> = domains.into_iter().collect();
    let mut owners: HashMap<String, u32> = PartnerDomain::find_many(conn, &domains)?
        .into_iter()
        .map(|d| (d.domain, d.yacobot_id))
        .collect();
    let free: Vec<NewPartnerDomain<'_>> = domains
        .iter()
        .filter(|d| !owners.contains_key(**d))
        .map(|d| NewPartnerDomain {
            domain: d,
            yacobot_id: how.node,
            assigned_by: how.by,
        })
        .collect();
    if !free.is_empty() {
        NewPartnerDomain::insert_many_if_absent(conn, &free)?;
        // What is there now: this node's row, or one another writer put first.
        let names: Vec<&str> = free.iter().map(|d| d.domain).collect();
        owners.extend(
            PartnerDomain::find_many(conn, &names)?
                .into_iter()
                .map(|d| (d.domain, d.yacobot_id)),
        );
    }
    Ok(domains
        .into_iter()
        .filter_map(|d| Some((d, *owners.get(d)?)))
        .collect())
}

/// A start URL as a queue record with one hit (what the loader's rules take).
fn record(n: &NormalUrl, now: NaiveDateTime) -> QueueRecord {
    QueueRecord {
        id: n.id,
        url: n.url.clone(),
        domain: n.domain.clone(),
        timestamp: now.and_utc().timestamp(),
        hits: 1,
        updatetag: String::new(),
        new: true,
    }
}

/// `partner_domain.assigned_by` for a domain this node took for a start URL.
pub fn assigned_by(cfg: &Config<YacobotConfig>) -> String {
    format!("yacobot:{}", cfg.daemon.node)
        .chars()
        .take(64)
        .collect()
}

/// `yacobot url add URL…`: each URL's outcome on stdout (`URL: added`, `URL: known, due
/// now`), each refusal on stderr with its reason. Returns how many were refused.
pub fn command(cfg: &Config<YacobotConfig>, raw_urls: &[String]) -> anyhow::Result<usize> {
    let exclude = crate::exclude::read(cfg).context("the exclusion file")?;
    let mut conn = focuser_daemon::db::connect(&cfg.common)?;
    let node = this_node(&mut conn, cfg)
        .context("reading yacobot_node")?
        .ok_or_else(|| no_node(cfg))?;
    let mut refused = 0;
    let mut checked = Vec::new();
    let mut given = Vec::new();
    for raw in raw_urls {
        match check(raw) {
            Ok(n) => {
                checked.push(n);
                given.push(raw.as_str());
            }
            Err(why) => {
                eprintln!("{raw}: refused: {why}");
                refused += 1;
            }
        }
    }
    let by = assigned_by(cfg);
    let how = Adding {
        node,
        by: &by,
        exclude: &exclude,
        make_due: true,
        now: focuser_daemon::clock::db_now(),
    };
    let outcomes = diesel::Connection::transaction(&mut conn, |c| add(c, &checked, &how))
        .context("adding the URLs")?;
    for ((raw, n), outcome) in given.iter().zip(&checked).zip(outcomes) {
        match outcome {
            Outcome::Added => println!("{}: added, due now", n.url),
            Outcome::Known => println!("{}: known, due now", n.url),
            Outcome::Excluded(why) => {
                eprintln!("{raw}: refused: excluded by {why}");
                refused += 1;
            }
            Outcome::Refused(why) => {
                eprintln!("{raw}: refused: {why}");
                refused += 1;
            }
        }
    }
    Ok(refused)
}
