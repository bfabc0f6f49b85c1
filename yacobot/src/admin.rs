//! `yacobot resource …`: the operator's partner-feed commands (docs/design.md#yacobot-resources).
//! They only touch the database; the running worker picks the changes up at its next scan.
//! `disable`, `enable` and `remove` are in [`withdraw`].

mod withdraw;

use std::fmt::Write;

use anyhow::{anyhow, bail, Context};
use clap::{Args, Subcommand};
use diesel::mysql::MysqlConnection;
use diesel::OptionalExtension;
use focuser_schema::models::{
    DataFrom, FetchStatus, NewVrOpenDatasource, NewVrResource, ProcessTimestamp, ResStatus, VrData,
    VrOpenDatasource, VrResource, VrResourceChanges,
};

#[derive(Debug, Subcommand)]
pub enum ResourceCmd {
    /// Add a resource, or change the settings of the one with this name (and add or change
    /// its data sources)
    Add(AddArgs),
    /// Every resource with the state of its last run
    List,
    /// One resource (id or name): settings, sources, last report, last runs
    Show { resource: String },
    /// Ask for a run at the next scan (sets manual_update; an unchanged sitemap is processed)
    FetchNow { resource: String },
    /// Withdraw a resource: at the next scan, a DELETE item for each of its live items and
    /// the rows marked deleted, then it is disabled (res_status = 0); its settings and rows
    /// stay, so that enable brings the items back
    Disable { resource: String },
    /// Run a disabled resource again: a run is asked for, which brings its items back as
    /// UPDATE items
    Enable { resource: String },
    /// Remove a resource: withdrawn as by disable, then the resource and all its rows
    /// deleted
    Remove { resource: String },
}

// `resource add`'s arguments (its help is the variant's).
#[derive(Debug, Args)]
pub struct AddArgs {
    name: String,
    /// Resource class: selects its open_xml_format rules
    #[arg(long)]
    class: u32,
    /// A data source, NAME=SITEMAP_URL; give it once per source, in priority order
    #[arg(long = "source", value_name = "NAME=URL")]
    sources: Vec<String>,
    /// Seconds between automatic runs
    #[arg(long, default_value_t = 86400)]
    frequency: u32,
    /// Runs only when asked for (fetch-now)
    #[arg(long)]
    manual: bool,
    #[arg(long, default_value_t = 0)]
    priority: i32,
    #[arg(long, default_value = "")]
    group: String,
    /// Items per run at most; 0: no cap
    #[arg(long, default_value_t = 0)]
    max_items: u32,
}

pub(crate) fn find(conn: &mut MysqlConnection, r: &str) -> anyhow::Result<VrResource> {
    let found = match r.parse::<u32>() {
        Ok(id) => VrResource::find(conn, id),
        Err(_) => VrResource::find_by_name(conn, r),
    };
    found.with_context(|| format!("no resource {r:?}"))
}

fn set(
    conn: &mut MysqlConnection,
    r: &str,
    changes: VrResourceChanges<'_>,
) -> anyhow::Result<VrResource> {
    let res = find(conn, r)?;
    VrResource::update(conn, res.id, &changes)?;
    Ok(VrResource::find(conn, res.id)?)
}

fn status_name(status: FetchStatus) -> &'static str {
    match status {
        FetchStatus::Never => "never run",
        FetchStatus::Ok => "ok",
        FetchStatus::Running => "running",
        FetchStatus::Error => "error",
        FetchStatus::Unknown(_) => "?",
    }
}

/// Runs one command; returns what to print.
pub fn resource(conn: &mut MysqlConnection, cmd: &ResourceCmd) -> anyhow::Result<String> {
    match cmd {
        ResourceCmd::Add(a) => add(conn, a),
        ResourceCmd::List => list(conn),
        ResourceCmd::Show { resource } => show(conn, resource),
        ResourceCmd::FetchNow { resource } => fetch_now(conn, resource),
        ResourceCmd::Disable { resource } => withdraw::disable(conn, resource),
        ResourceCmd::Enable { resource } => withdraw::enable(conn, resource),
        ResourceCmd::Remove { resource } => withdraw::remove(conn, resource),
    }
}

/// `resource add`.
fn add(conn: &mut MysqlConnection, a: &AddArgs) -> anyhow::Result<String> {
    let mut out = String::new();
    let AddArgs {
        name,
        class,
        sources,
        frequency,
        manual,
        priority,
        group,
        max_items,
    } = a;
    let mut parsed = Vec::new();
    for s in sources {
        let (n, u) = s
            .split_once('=')
            .filter(|(n, u)| !n.is_empty() && u.starts_with("http"))
            .ok_or_else(|| anyhow!("--source {s:?}: NAME=URL, the URL starting with http"))?;
        parsed.push((n, u));
    }
    // An existing resource keeps its state: enable and disable say what happens to its items.
    let res_status = match VrResource::find_by_name(conn, name).optional()? {
        Some(r) if r.res_status == ResStatus::Removing => bail!(
            "resource {} \"{}\" is being removed: add it again once it is gone; nothing changed",
            r.id,
            r.res_name
        ),
        Some(r) => r.res_status,
        None => ResStatus::Enabled,
    };
    let res = diesel::Connection::transaction(conn, |c| {
        let res = NewVrResource {
            class_id: *class,
            res_name: name,
            data_group: group,
            data_from: DataFrom::PARTNER_FEED,
            frequency: *frequency,
            is_manual: *manual,
            res_status,
            priority: *priority,
            max_items: *max_items,
        }
        .upsert(c)?;
        let n = parsed.len() as i32;
        for (i, (ds, url)) in parsed.iter().enumerate() {
            NewVrOpenDatasource {
                res_id: res.id,
                name: ds,
                priority: n - i as i32,
                sitemap_url: url,
            }
            .upsert(c)?;
        }
        diesel::QueryResult::Ok(res)
    })?;
    let _ = writeln!(out, "resource {} \"{}\" saved", res.id, res.res_name);
    Ok(out)
}

/// `resource list`.
fn list(conn: &mut MysqlConnection) -> anyhow::Result<String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5}  {:<24} {:>6} {:>11} {:<10} {:<19} {:>8}",
        "id", "name", "class", "enabled", "last run", "ended", "items"
    );
    for r in VrResource::all(conn)? {
        let items = VrData::count_live(conn, r.id)?;
        let _ = writeln!(
            out,
            "{:>5}  {:<24} {:>6} {:>11} {:<10} {:<19} {:>8}{}",
            r.id,
            r.res_name,
            r.class_id,
            withdraw::state(r.res_status),
            status_name(r.fetch_status),
            r.last_fetch_time
                .map(|t| t.to_string())
                .unwrap_or_else(|| "-".into()),
            items,
            if r.manual_update {
                "  (run asked for)"
            } else {
                ""
            }
        );
    }
    Ok(out)
}

/// `resource show`.
fn show(conn: &mut MysqlConnection, resource: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let r = find(conn, resource)?;
    let _ = writeln!(out, "resource {} \"{}\"", r.id, r.res_name);
    let _ = writeln!(
        out,
        "class {}, group \"{}\", every {} s{}, priority {}, max items {}, {}",
        r.class_id,
        r.data_group,
        r.frequency,
        if r.is_manual { " (manual only)" } else { "" },
        r.priority,
        r.max_items,
        withdraw::described(r.res_status)
    );
    let _ = writeln!(
        out,
        "last run: {}, started {}, ended {}{}",
        status_name(r.fetch_status),
        r.fetch_time
            .map(|t| t.to_string())
            .unwrap_or_else(|| "-".into()),
        r.last_fetch_time
            .map(|t| t.to_string())
            .unwrap_or_else(|| "-".into()),
        r.claimed_by
            .as_deref()
            .map(|c| format!(", held by {c}"))
            .unwrap_or_default()
    );
    let _ = writeln!(out, "live items: {}", VrData::count_live(conn, r.id)?);
    for s in VrOpenDatasource::for_resource(conn, r.id)? {
        let _ = writeln!(
            out,
            "source \"{}\" (priority {}): {}",
            s.name, s.priority, s.sitemap_url
        );
    }
    let _ = writeln!(out, "report:\n{}", r.fetch_detail.as_deref().unwrap_or("-"));
    for p in ProcessTimestamp::recent(conn, r.id, 5)? {
        let _ =
            writeln!(
            out,
            "run {}: {} from {} to {}: {} items, {} new, {} changed, {} deleted, {} failed keys",
            p.id,
            status_name(p.status),
            p.fetch_start.map(|t| t.to_string()).unwrap_or_else(|| "-".into()),
            p.write_end.map(|t| t.to_string()).unwrap_or_else(|| "-".into()),
            p.items,
            p.inserted,
            p.updated,
            p.deleted,
            p.failed_keys
        );
    }
    Ok(out)
}

/// `resource fetch-now`.
fn fetch_now(conn: &mut MysqlConnection, resource: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let r = set(
        conn,
        resource,
        VrResourceChanges {
            manual_update: Some(true),
            ..Default::default()
        },
    )?;
    if r.res_status != ResStatus::Enabled {
        let _ = writeln!(
            out,
            "resource {} is disabled: enable it for the run to start",
            r.id
        );
    }
    let _ = writeln!(
        out,
        "resource {} \"{}\": a run is asked for",
        r.id, r.res_name
    );
    Ok(out)
}
