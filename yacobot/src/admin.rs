//! `yacobot resource …`: the operator's partner-feed commands (docs/design.md#yacobot-resources).
//! They only touch the database; the running worker picks the changes up at its next scan.

use std::fmt::Write;

use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use diesel::mysql::MysqlConnection;
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
    /// Stop running a resource (res_status = 0); its items stay
    Disable { resource: String },
    /// Run a disabled resource again
    Enable { resource: String },
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

fn find(conn: &mut MysqlConnection, r: &str) -> anyhow::Result<VrResource> {
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
        ResourceCmd::Disable { resource } => switch(conn, resource, false),
        ResourceCmd::Enable { resource } => switch(conn, resource, true),
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
    let res = diesel::Connection::transaction(conn, |c| {
        let res = NewVrResource {
            class_id: *class,
            res_name: name,
            data_group: group,
            data_from: DataFrom::PARTNER_FEED,
            frequency: *frequency,
            is_manual: *manual,
            res_status: ResStatus::Enabled,
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
        "{:>5}  {:<24} {:>6} {:>7} {:<10} {:<19} {:>8}",
        "id", "name", "class", "enabled", "last run", "ended", "items"
    );
    for r in VrResource::all(conn)? {
        let items = VrData::count_live(conn, r.id)?;
        let _ = writeln!(
            out,
            "{:>5}  {:<24} {:>6} {:>7} {:<10} {:<19} {:>8}{}",
            r.id,
            r.res_name,
            r.class_id,
            if r.res_status == ResStatus::Enabled {
                "yes"
            } else {
                "no"
            },
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
        if r.res_status == ResStatus::Enabled {
            "enabled"
        } else {
            "disabled"
        }
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

/// `resource enable` (`on`) and `resource disable`.
fn switch(conn: &mut MysqlConnection, resource: &str, on: bool) -> anyhow::Result<String> {
    let mut out = String::new();
    let r = set(
        conn,
        resource,
        VrResourceChanges {
            res_status: Some(if on {
                ResStatus::Enabled
            } else {
                ResStatus::Disabled
            }),
            ..Default::default()
        },
    )?;
    let _ = writeln!(
        out,
        "resource {} \"{}\" {}",
        r.id,
        r.res_name,
        if on { "enabled" } else { "disabled" }
    );
    Ok(out)
}
