//! The domain map in MySQL: partner_domain joined with enabled yacobot_nodes.

use std::collections::HashMap;

use anyhow::Context;
use diesel::mysql::MysqlConnection;
use diesel::Connection;
use focuser_daemon::db::{retry_conflicts, Database};
use focuser_schema::models::{NewPartnerDomain, PartnerDomain, YacobotNode};

use crate::cycle::DomainStore;
use crate::route::{Assignment, DomainMap};

pub fn load_map(conn: &mut MysqlConnection) -> diesel::QueryResult<DomainMap> {
    let nodes = YacobotNode::enabled(conn)?
        .into_iter()
        .map(|n| n.id)
        .collect();
    let rows = PartnerDomain::map(conn)?.into_iter().collect();
    Ok(DomainMap { nodes, rows })
}

/// Writes the plan in one transaction and reads back what the database holds for it.
pub fn apply_plan(
    conn: &mut MysqlConnection,
    plan: &[Assignment],
    by: &str,
    now: i64,
) -> diesel::QueryResult<HashMap<String, u32>> {
    let when = chrono::DateTime::from_timestamp(now, 0)
        .map(|t| t.naive_utc())
        .unwrap_or_default();
    let mut sorted: Vec<&Assignment> = plan.iter().collect();
    sorted.sort_by(|a, b| a.domain.cmp(&b.domain)); // the same lock order in every master
    conn.transaction(|c| {
        let fresh: Vec<NewPartnerDomain<'_>> = sorted
            .iter()
            .filter(|a| a.previous.is_none())
            .map(|a| NewPartnerDomain {
                domain: &a.domain,
                yacobot_id: a.node,
                assigned_by: by,
            })
            .collect();
        NewPartnerDomain::insert_many_if_absent(c, &fresh)?;
        for a in sorted.iter().filter(|a| a.previous.is_some()) {
            if let Some(from) = a.previous {
                if PartnerDomain::reassign(c, &a.domain, from, a.node, by, when)? == 1 {
                    log::info!(
                        "domain {} moved from node {from} (disabled or gone) to node {}",
                        a.domain,
                        a.node
                    );
                }
            }
        }
        let domains: Vec<&str> = sorted.iter().map(|a| a.domain.as_str()).collect();
        let mut rows: HashMap<String, u32> = PartnerDomain::find_many(c, &domains)?
            .into_iter()
            .map(|r| (r.domain, r.yacobot_id))
            .collect();
        // A row deleted under us: insert ours.
        let missing: Vec<NewPartnerDomain<'_>> = sorted
            .iter()
            .filter(|a| !rows.contains_key(&a.domain))
            .map(|a| NewPartnerDomain {
                domain: &a.domain,
                yacobot_id: a.node,
                assigned_by: by,
            })
            .collect();
        if !missing.is_empty() {
            NewPartnerDomain::insert_many_if_absent(c, &missing)?;
            let again: Vec<&str> = missing.iter().map(|m| m.domain).collect();
            rows.extend(
                PartnerDomain::find_many(c, &again)?
                    .into_iter()
                    .map(|r| (r.domain, r.yacobot_id)),
            );
        }
        Ok(rows)
    })
}

/// A plain connection (`master replay`, admin commands, tests).
pub struct ConnStore(pub MysqlConnection);

impl DomainStore for ConnStore {
    fn load(&mut self) -> anyhow::Result<DomainMap> {
        load_map(&mut self.0).context("reading partner_domain and yacobot_node")
    }

    fn apply(
        &mut self,
        plan: &[Assignment],
        by: &str,
        now: i64,
    ) -> anyhow::Result<HashMap<String, u32>> {
        // A deadlock, or on a Galera cluster the other master's insert of the same domain
        // on another node, is tried again (the daemons' policy for conflicts).
        retry_conflicts("route", || apply_plan(&mut self.0, plan, by, now))
            .context("writing partner_domain")
    }
}

/// The daemon's pool: waits out a lost database instead of failing the cycle.
pub struct PoolStore<'a>(pub &'a Database);

impl DomainStore for PoolStore<'_> {
    fn load(&mut self) -> anyhow::Result<DomainMap> {
        Ok(self.0.run("domains_from_db", load_map)?)
    }

    fn apply(
        &mut self,
        plan: &[Assignment],
        by: &str,
        now: i64,
    ) -> anyhow::Result<HashMap<String, u32>> {
        // `run` retries a deadlock, and on a Galera cluster a certification failure at
        // commit (the other master's insert of the same domain on another node won).
        Ok(self.0.run("route", |c| apply_plan(c, plan, by, now))?)
    }
}
