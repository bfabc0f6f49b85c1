//! The three views of one status snapshot: HTML for people, JSON, Prometheus text.

use std::fmt::Write;

use serde::Serialize;

use super::{Figure, Kind};
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
    pub figures: Vec<Figure>,
    pub recent_errors: Vec<RecentEntry>,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn show_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}

fn uptime(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    if d > 0 {
        format!("{d}d {h}h {m}m")
    } else {
        format!("{h}h {m}m {s}s")
    }
}

pub fn html(s: &Snapshot) -> String {
    let mut page = String::with_capacity(4096);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"10\"><title>{name} status</title>\
         <style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse;margin-bottom:1.5em}}\
         td,th{{border:1px solid #ccc;padding:.3em .7em;text-align:left}}td.n{{text-align:right;font-variant-numeric:tabular-nums}}\
         .err{{color:#a00}}.warn{{color:#a60}}</style></head><body>\n\
         <h1>{name}</h1>\n<table>\
         <tr><th>version</th><td id=\"version\">{version}</td></tr>\
         <tr><th>pid</th><td id=\"pid\">{pid}</td></tr>\
         <tr><th>started</th><td>{started}</td></tr>\
         <tr><th>uptime</th><td id=\"uptime\">{up}</td></tr>\
         <tr><th>config file</th><td>{config}</td></tr></table>\n<h2>Figures</h2>\n<table>\
         <tr><th>figure</th><th>value</th><th>what it is</th></tr>\n",
        name = escape(&s.daemon),
        version = escape(&s.version),
        pid = s.pid,
        started = escape(&s.started_at),
        up = uptime(s.uptime_seconds),
        config = escape(&s.config_file),
    );
    for f in &s.figures {
        let labels: Vec<String> = f.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let name = if labels.is_empty() {
            f.name.clone()
        } else {
            format!("{} ({})", f.name, labels.join(", "))
        };
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            escape(&name),
            show_value(f.value),
            escape(&f.help)
        );
    }
    page.push_str("</table>\n<h2>Recent errors</h2>\n");
    if s.recent_errors.is_empty() {
        page.push_str("<p>none</p>\n");
    } else {
        page.push_str("<table><tr><th>time</th><th>level</th><th>message</th></tr>\n");
        for e in s.recent_errors.iter().rev() {
            let class = if e.level == "ERROR" { "err" } else { "warn" };
            let _ = writeln!(
                page,
                "<tr class=\"{class}\"><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&e.time),
                escape(&e.level),
                escape(&e.message)
            );
        }
        page.push_str("</table>\n");
    }
    page.push_str("</body></html>\n");
    page
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
