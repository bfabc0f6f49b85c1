//! One status snapshot and two of its views: JSON and Prometheus text (the HTML page is
//! `html.rs`).

use std::fmt::Write;

use serde::Serialize;

use super::history::ChartData;
#[cfg(test)]
use super::page::Row;
use super::page::{Card, Table};
use super::{Figure, Kind};
use crate::config::Key;
use crate::logging::RecentEntry;

/// Everything the endpoint shows, taken at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    pub daemon: String,
    pub version: String,
    pub pid: u32,
    pub started_at: String,
    pub uptime_seconds: u64,
    pub config_file: String,
    /// The running config: every key, its value (the database's password masked) and
    /// whether a reload applies it (`live`) or it waits for a restart (`restart`).
    pub config: Vec<Key>,
    pub figures: Vec<Figure>,
    /// The headline row: the daemon's key figures, then the runtime's (database, log).
    pub cards: Vec<Card>,
    pub tables: Vec<Table>,
    /// The charted figures over the last `history_seconds`.
    pub charts: Vec<ChartData>,
    /// How often the charted figures are sampled (`status_sample`).
    pub sample_seconds: u64,
    pub history_seconds: u64,
    pub recent_errors: Vec<RecentEntry>,
}

pub fn json(s: &Snapshot) -> String {
    serde_json::to_string_pretty(s).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('"', "\\\"")
}

fn metric_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("focuser_{clean}")
}

/// The Prometheus text exposition format (version 0.0.4).
pub fn prometheus(s: &Snapshot) -> String {
    let mut out = String::with_capacity(2048);
    let daemon = escape_label(&s.daemon);
    let _ = writeln!(
        out,
        "# HELP focuser_build_info Daemon name and version.\n# TYPE focuser_build_info gauge"
    );
    let _ = writeln!(
        out,
        "focuser_build_info{{daemon=\"{daemon}\",version=\"{}\"}} 1",
        escape_label(&s.version)
    );
    let _ = writeln!(out, "# HELP focuser_uptime_seconds Seconds since the daemon started.\n# TYPE focuser_uptime_seconds gauge");
    let _ = writeln!(
        out,
        "focuser_uptime_seconds{{daemon=\"{daemon}\"}} {}",
        s.uptime_seconds
    );
    let mut figures = s.figures.clone();
    figures.sort_by(|a, b| a.name.cmp(&b.name));
    let mut last = String::new();
    for f in &figures {
        let name = metric_name(&f.name);
        if name != last {
            let kind = match f.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
            };
            let _ = writeln!(out, "# HELP {name} {}", f.help.replace('\n', " "));
            let _ = writeln!(out, "# TYPE {name} {kind}");
            last = name.clone();
        }
        let mut labels = vec![format!("daemon=\"{daemon}\"")];
        labels.extend(
            f.labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))),
        );
        let _ = writeln!(out, "{name}{{{}}} {}", labels.join(","), f.value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::page::Chart;
    use crate::status::History;

    fn snapshot() -> Snapshot {
        Snapshot {
            daemon: "d".into(),
            version: "0.1.0".into(),
            pid: 42,
            started_at: "2024-01-01 00:00:00 UTC".into(),
            uptime_seconds: 5,
            config_file: "x.cf".into(),
            config: Vec::new(),
            figures: vec![
                Figure::counter("lines_total", "lines read", 10.0),
                Figure::gauge("lag", "lag", 3.0).with_label("receiver", "a"),
            ],
            cards: Vec::new(),
            tables: Vec::new(),
            charts: Vec::new(),
            sample_seconds: 10,
            history_seconds: 3600,
            recent_errors: Vec::new(),
        }
    }

    #[test]
    fn metrics_hold_the_figures_and_nothing_of_the_page() {
        let plain = snapshot();
        let mut page = snapshot();
        page.cards = vec![Card::number("lines", 10.0)];
        page.tables = vec![Table::new("t", "T", &["a"])];
        let mut h = History::new(10);
        let charts = [Chart::of("lines_total", "Lines")];
        h.record(0, &charts, &page.figures);
        h.record(10_000, &charts, &page.figures);
        page.charts = h.charts(&charts);
        assert_eq!(prometheus(&plain), prometheus(&page));
        assert_eq!(
            prometheus(&plain),
            "# HELP focuser_build_info Daemon name and version.\n\
             # TYPE focuser_build_info gauge\n\
             focuser_build_info{daemon=\"d\",version=\"0.1.0\"} 1\n\
             # HELP focuser_uptime_seconds Seconds since the daemon started.\n\
             # TYPE focuser_uptime_seconds gauge\n\
             focuser_uptime_seconds{daemon=\"d\"} 5\n\
             # HELP focuser_lag lag\n\
             # TYPE focuser_lag gauge\n\
             focuser_lag{daemon=\"d\",receiver=\"a\"} 3\n\
             # HELP focuser_lines_total lines read\n\
             # TYPE focuser_lines_total counter\n\
             focuser_lines_total{daemon=\"d\"} 10\n"
        );
    }

    #[test]
    fn json_holds_cards_tables_and_series() {
        let mut s = snapshot();
        s.cards = vec![Card::number("lines", 10.0).unit("lines")];
        s.tables =
            vec![Table::new("t", "T", &["a", "b"]).row(Row::new(vec!["x".into(), 2.into()]))];
        let mut h = History::new(10);
        let charts = [Chart::of("lag", "Lag")];
        h.record(1_000, &charts, &s.figures);
        s.charts = h.charts(&charts);
        let v: serde_json::Value = serde_json::from_str(&json(&s)).unwrap();
        assert_eq!(v["cards"][0]["label"], "lines");
        assert_eq!(v["cards"][0]["value"], 10.0);
        assert_eq!(v["cards"][0]["state"], "ok");
        assert_eq!(
            v["tables"][0]["rows"][0]["cells"],
            serde_json::json!(["x", 2.0])
        );
        assert_eq!(v["charts"][0]["kind"], "gauge");
        assert_eq!(
            v["charts"][0]["series"][0]["labels"],
            serde_json::json!([["receiver", "a"]])
        );
        assert_eq!(
            v["charts"][0]["series"][0]["points"],
            serde_json::json!([[1.0, 3.0]])
        );
        assert_eq!(v["sample_seconds"], 10);
    }
}
