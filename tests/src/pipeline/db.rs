//! The run's databases: the master's (nodes, partner domains) and one per node (its frontier and
//! its feeds), as docs/operations.md#scaling-out describes a deployment that gives each node its
//! own. Made empty and migrated before a run, filled with the sample, and read to follow it.

use diesel::dsl::count_star;
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use diesel::sql_types::Text;

use focuser_schema::models::{
    DataFrom, DataStatus, FetchState, FetchStatus, GroupType, IndexType, NewOpenXmlFormat,
    NewPartnerDomain, NewVrOpenDatasource, NewVrResource, NewYacobotNode, ResStatus,
};
use focuser_schema::schema::{partner_domain, url, vr_data, vr_resource};

use super::plan::Plan;
use super::sample::{self, FeedResource};
use crate::Error;

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

/// Creates the database of `url` if needed, migrates it and empties every table, as the
/// account of `url` (which must own it).
pub fn fresh(url: &str) -> Result<(), Error> {
    let parts = crate::UrlParts::parse(url)?;
    let server = crate::url_with_db(url, "")?;
    let mut conn = focuser_schema::db::connect_first(&server)?;
    diesel::sql_query(format!(
        "CREATE DATABASE IF NOT EXISTS `{}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
        parts.database
    ))
    .execute(&mut conn)?;
    let mut conn = focuser_schema::db::connect_first(url)?;
    focuser_schema::migrate(&mut conn)?;
    let tables: Vec<Name> = diesel::sql_query(
        "SELECT TABLE_NAME AS name FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' \
         AND TABLE_NAME NOT LIKE '\\_\\_diesel%'",
    )
    .load(&mut conn)?;
    for t in tables {
        diesel::sql_query(format!("TRUNCATE TABLE `{}`", t.name)).execute(&mut conn)?;
    }
    Ok(())
}

/// The sample: the nodes and the partner domains assigned before the first cycle (master's
/// database), and one feed resource per node (each node's database).
pub fn load_sample(plan: &Plan, admin_master: &str, admin_nodes: &[String]) -> Result<(), Error> {
    let mut m = focuser_schema::db::connect_first(admin_master)?;
    for n in 1..=plan.nodes {
        let name = plan.node_name(n);
        let host = format!("127.0.0.1:{}", plan.ports.yacobots[n - 1]);
        // Node n is id n (its queue directory, its database), also on a Galera cluster,
        // whose auto_increment would give 1, 4, 7.
        NewYacobotNode {
            name: &name,
            host: &host,
            enabled: true,
        }
        .insert_as(&mut m, n as u32)?;
    }
    for (domain, node) in sample::preassigned_domains(plan) {
        NewPartnerDomain {
            domain: &domain,
            yacobot_id: node,
            assigned_by: "sample",
        }
        .insert(&mut m)?;
    }
    // Resource n belongs to node n (check::web_log expects its requests from there).
    for r in sample::feed_resources(plan) {
        if let Some(db) = admin_nodes.get((r.number - 1) % admin_nodes.len().max(1)) {
            let mut c = focuser_schema::db::connect_first(db)?;
            feed_rows(plan, &r, &mut c)?;
        }
    }
    Ok(())
}

/// A resource, its data source (the sitemap) and its class's `open_xml_format` rules.
fn feed_rows(plan: &Plan, r: &FeedResource, c: &mut MysqlConnection) -> Result<(), Error> {
    let res = NewVrResource {
        class_id: r.class_id,
        res_name: &r.name,
        data_group: "offers",
        data_from: DataFrom::PARTNER_FEED,
        frequency: 3600,
        is_manual: false,
        res_status: ResStatus::Enabled,
        priority: 10,
        max_items: 0,
    }
    .insert(c)?;
    let sitemap = r.url(plan, &r.sitemap_path);
    NewVrOpenDatasource {
        res_id: res.id,
        name: "main",
        priority: 10,
        sitemap_url: &sitemap,
    }
    .insert(c)?;
    // (label, parent, xpath, key, index, full hit, mark, required)
    let rules = [
        ("id", "channel/item", "id", true, true, false, false, true),
        ("title", "", "title", false, true, true, false, true),
        ("price", "", "price", false, false, false, true, false),
    ];
    for (label, parent, xpath, key, index, fullhit, mark, required) in rules {
        NewOpenXmlFormat {
            class_id: r.class_id,
            label_name: label,
            parent_label: parent,
            xpath,
            is_key: key,
            is_index: index,
            is_fullhit: fullhit,
            is_mark: mark,
            is_required: required,
            index_type: IndexType::KEYWORD,
            group_type: GroupType::NONE,
        }
        .insert(c)?;
    }
    Ok(())
}

/// A node's frontier as the checks see it: (id, domain, fetch_state, fetch_error).
pub type UrlRow = (u64, String, FetchState, Option<String>);

pub fn urls(node_db: &str) -> Result<Vec<UrlRow>, Error> {
    let mut c = focuser_schema::db::connect_first(node_db)?;
    Ok(url::table
        .select((url::id, url::domain, url::fetch_state, url::fetch_error))
        .order(url::id)
        .load(&mut c)?)
}

/// URLs of a node that are due or in a crawler's hands: 0 once it has done all it can now.
pub fn unsettled(node_db: &str) -> Result<i64, Error> {
    let mut c = focuser_schema::db::connect_first(node_db)?;
    let now = focuser_schema::db::utc_now();
    Ok(url::table
        .filter(
            url::fetch_state
                .eq(FetchState::Claimed)
                .or(url::hits.gt(0).and(url::next_indexed.le(now))),
        )
        .select(count_star())
        .first(&mut c)?)
}

/// URLs per `fetch_state` (0 idle … 4 gone).
pub fn states(node_db: &str) -> Result<[i64; 5], Error> {
    let mut c = focuser_schema::db::connect_first(node_db)?;
    let rows: Vec<(FetchState, i64)> = url::table
        .group_by(url::fetch_state)
        .select((url::fetch_state, count_star()))
        .load(&mut c)?;
    let mut out = [0; 5];
    for (s, n) in rows {
        if let Some(slot) = out.get_mut(usize::from(s.code())) {
            *slot = n;
        }
    }
    Ok(out)
}

/// Live feed items of a node (the resources worker's `vr_data` rows).
pub fn feed_items(node_db: &str) -> Result<i64, Error> {
    let mut c = focuser_schema::db::connect_first(node_db)?;
    Ok(vr_data::table
        .filter(vr_data::data_status.eq(DataStatus::Live))
        .select(count_star())
        .first(&mut c)?)
}

/// Every feed item of a node: (doc id, `data_status`).
pub fn feed_docs(node_db: &str) -> Result<Vec<(String, DataStatus)>, Error> {
    let mut c = focuser_schema::db::connect_first(node_db)?;
    Ok(vr_data::table
        .select((vr_data::doc_id, vr_data::data_status))
        .load(&mut c)?)
}

/// Enabled resources of a node that have not run yet or are running.
pub fn feeds_pending(node_db: &str) -> Result<i64, Error> {
    let mut c = focuser_schema::db::connect_first(node_db)?;
    Ok(vr_resource::table
        .filter(vr_resource::res_status.eq(ResStatus::Enabled))
        .filter(vr_resource::fetch_status.eq_any([FetchStatus::Never, FetchStatus::Running]))
        .select(count_star())
        .first(&mut c)?)
}

/// Every partner domain and its node.
pub fn domain_owners(master_db: &str) -> Result<std::collections::BTreeMap<String, u32>, Error> {
    let mut c = focuser_schema::db::connect_first(master_db)?;
    let rows: Vec<(String, u32)> = partner_domain::table
        .select((partner_domain::domain, partner_domain::yacobot_id))
        .load(&mut c)?;
    Ok(rows.into_iter().collect())
}

/// A node's stored bindings: (doc id, MD5 of the binding shipped).
pub fn bindings(node_db: &str) -> Result<Vec<(u64, String)>, Error> {
    use focuser_schema::schema::binding_page;
    let mut c = focuser_schema::db::connect_first(node_db)?;
    Ok(binding_page::table
        .select((binding_page::id, binding_page::md5))
        .order(binding_page::id)
        .load(&mut c)?)
}

/// A node's stubs (`path_stub`, stubs and query_args items): (key, MD5 of the item shipped).
pub fn stubs(node_db: &str) -> Result<Vec<(u64, String)>, Error> {
    use focuser_schema::schema::path_stub;
    let mut c = focuser_schema::db::connect_first(node_db)?;
    Ok(path_stub::table
        .select((path_stub::id, path_stub::md5))
        .order(path_stub::id)
        .load(&mut c)?)
}
