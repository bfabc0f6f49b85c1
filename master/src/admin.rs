//! The operator's tools: `master replay`, `master domains`, `master assign`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, IsTerminal};
use std::path::PathBuf;

use anyhow::{anyhow, Context};
use diesel::mysql::MysqlConnection;
use focuser_formats::reflog::{self, HostPolicy};
use focuser_formats::urls::MAX_URL_LENGTH;
use focuser_schema::models::{NewPartnerDomain, PartnerDomain, YacobotNode};
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::MasterConfig;
use crate::cycle::{CycleStats, Master};
use crate::daemon::summary;
use crate::names;
use crate::store::ConnStore;

/// The latest timestamp in a reflog file (a replayed cycle's clock, unless `--now` is given).
fn latest_timestamp(path: &PathBuf, offset: i64) -> anyhow::Result<Option<i64>> {
    let mut latest = None;
    let input = BufReader::with_capacity(
        1 << 20,
        std::fs::File::open(path).with_context(|| path.display().to_string())?,
    );
    for line in input.split(b'\n').skip(1) {
        let line = line?;
        if let Ok(l) = reflog::parse_line(&line, offset) {
            latest = Some(latest.map_or(l.timestamp, |t: i64| t.max(l.timestamp)));
        }
    }
    Ok(latest)
}

/// Runs cycles over `files` (in the given order, `Cycle.MaxFiles` a cycle, one if unset)
/// without the daemon; the files stay where they are. Returns each cycle's figures.
pub fn replay(
    cfg: &MasterConfig,
    conn: MysqlConnection,
    files: &[PathBuf],
    now: Option<i64>,
) -> anyhow::Result<Vec<CycleStats>> {
    // The journal names its inputs one a line, as text.
    if let Some(f) = files.iter().find(|f| !names::journaled(f.as_os_str())) {
        return Err(anyhow!(
            "{}: a path with control characters, a backslash or bytes that are not UTF-8 \
             cannot be journaled; rename the file",
            names::printable(f.as_os_str())
        ));
    }
    let master = Master::new(cfg);
    let mut store = ConnStore(conn);
    if let Some(seq) = master.recover(&mut store)? {
        eprintln!("finished the interrupted cycle {seq} first");
    }
    let offset = cfg.utc_offset().map_err(|e| anyhow!(e))?;
    let per_cycle = cfg.cycle.max_files.max(1);
    let total: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(total)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, {eta}) {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut all = Vec::new();
    for group in files.chunks(per_cycle) {
        let clock = match now {
            Some(n) => n,
            None => {
                let mut latest = None;
                for f in group {
                    latest = latest.max(latest_timestamp(f, offset)?);
                }
                latest.unwrap_or_else(focuser_daemon::clock::unix_secs)
            }
        };
        bar.set_message(format!("{}", group[0].display()));
        if let Some(stats) = master.run(&mut store, clock, Some(group.to_vec()))? {
            bar.println(summary(&stats));
            all.push(stats);
        }
        bar.inc(
            group
                .iter()
                .filter_map(|f| std::fs::metadata(f).ok())
                .map(|m| m.len())
                .sum(),
        );
    }
    bar.finish_and_clear();
    Ok(all)
}

/// The summary table `master replay` ends with.
pub fn table(cycles: &[CycleStats]) -> String {
    let mut out = format!(
        "{:>6} {:>5} {:>10} {:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>9} {:>8} {:>7} {:>8}\n",
        "cycle",
        "files",
        "lines",
        "rejected",
        "urls",
        "forwarded",
        "new",
        "window",
        "tag",
        "kept",
        "expired",
        "domains",
        "seconds"
    );
    let mut totals = CycleStats::default();
    for s in cycles {
        out.push_str(&row(&s.seq.to_string(), s));
        totals.ingest.files += s.ingest.files;
        totals.ingest.lines += s.ingest.lines;
        for (k, v) in &s.ingest.rejected {
            *totals.ingest.rejected.entry(k).or_insert(0) += v;
        }
        totals.join.add(&s.join);
        totals.new_domains += s.new_domains;
        totals.seconds += s.seconds;
    }
    out.push_str(&row("total", &totals));
    out
}

fn row(label: &str, s: &CycleStats) -> String {
    format!(
        "{:>6} {:>5} {:>10} {:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>9} {:>8} {:>7} {:>8.2}\n",
        label,
        s.ingest.files,
        s.ingest.lines,
        s.ingest.rejected_total(),
        s.join.unique_urls,
        s.forwarded(),
        s.join.forwarded_new,
        s.join.forwarded_window,
        s.join.forwarded_updatetag,
        s.join.kept,
        s.join.expired,
        s.new_domains,
        s.seconds
    )
}

/// `master domains`: each node with its domains, then every domain and its node.
pub fn domains(conn: &mut MysqlConnection) -> anyhow::Result<String> {
    let nodes = YacobotNode::all(conn)?;
    let map = PartnerDomain::map(conn)?;
    let mut per_node: BTreeMap<u32, u64> = BTreeMap::new();
    for (_, n) in &map {
        *per_node.entry(*n).or_insert(0) += 1;
    }
    let mut out = format!(
        "{:>5} {:<16} {:<8} {:>8}\n",
        "node", "name", "enabled", "domains"
    );
    for n in &nodes {
        out.push_str(&format!(
            "{:>5} {:<16} {:<8} {:>8}\n",
            n.id,
            n.name,
            if n.enabled { "yes" } else { "no" },
            per_node.get(&n.id).copied().unwrap_or(0)
        ));
    }
    for (id, count) in per_node
        .iter()
        .filter(|(id, _)| !nodes.iter().any(|n| n.id == **id))
    {
        out.push_str(&format!("{id:>5} {:<16} {:<8} {count:>8}\n", "(gone)", "-"));
    }
    let mut sorted = map;
    sorted.sort();
    out.push('\n');
    for (domain, node) in sorted {
        out.push_str(&format!("{domain}\t{node}\n"));
    }
    Ok(out)
}

/// `text` as a routing domain: what the master makes of the URLs whose host it is
/// (`WWW.Пример.рф` → `xn--e1afmkfd.xn--p1ai`). Refused unless it is a host alone (no scheme,
/// user info, port or path) of URLs the master forwards (`hosts`).
pub fn domain_arg(text: &str, hosts: HostPolicy) -> anyhow::Result<String> {
    let refused = |why: &dyn std::fmt::Display| anyhow!("{text:?} is not a domain: {why}");
    let host = url::Host::parse(text).map_err(|e| refused(&e))?;
    let url = format!("http://{host}/");
    let n = reflog::normal_form(&url, MAX_URL_LENGTH)
        .and_then(|n| reflog::check_host(&n.url, hosts).map(|()| n))
        .map_err(|e| refused(&e))?;
    Ok(n.domain.into_owned())
}

/// `master assign DOMAIN NODE`: moves a domain to a node (by id or name); returns what was done.
/// `hosts`: the config's `Url.*` (a domain of URLs the master refuses is no domain).
pub fn assign(
    conn: &mut MysqlConnection,
    (domain, hosts): (&str, HostPolicy),
    node: &str,
    who: &str,
) -> anyhow::Result<String> {
    let domain = domain_arg(domain, hosts)?;
    let target = match node.parse::<u32>() {
        Ok(id) => YacobotNode::find(conn, id),
        Err(_) => YacobotNode::find_by_name(conn, node),
    }
    .map_err(|_| anyhow!("no yacobot node {node}"))?;
    if !target.enabled {
        return Err(anyhow!(
            "node {} ({}) is disabled; enable it first",
            target.id,
            target.name
        ));
    }
    let before = PartnerDomain::find(conn, &domain)
        .ok()
        .map(|d| d.yacobot_id);
    let by = format!("admin:{who}");
    let row = NewPartnerDomain {
        domain: &domain,
        yacobot_id: target.id,
        assigned_by: &by,
    }
    .upsert(conn, focuser_schema::db::utc_now())?;
    let message = match before {
        Some(b) if b == row.yacobot_id => format!(
            "{domain} is already on node {} ({})",
            target.id, target.name
        ),
        Some(b) => format!(
            "{domain} moved from node {b} to node {} ({}) by {by}",
            target.id, target.name
        ),
        None => format!(
            "{domain} assigned to node {} ({}) by {by}",
            target.id, target.name
        ),
    };
    Ok(message)
}
