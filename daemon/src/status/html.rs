//! The status page for people: one self-contained HTML document (inline CSS and SVG, no
//! script, nothing fetched from elsewhere) that refreshes itself every 10 seconds.
//!
//! Top to bottom: the daemon's name with version, pid, uptime and config file; the cards
//! (key figures, coloured by state); the charts of the last hour; the daemon's tables; the
//! recent warnings and errors; every figure, folded away. Every text is escaped.

use std::fmt::Write;

use super::history::ChartData;
use super::page::{format_number, Card, State, Table, Value};
use super::render::Snapshot;
use super::svg::{self, Line, PALETTE};

/// Seconds between the page's own reloads.
const REFRESH_SECONDS: u32 = 10;
const CHART_WIDTH: u32 = 360;
const CHART_HEIGHT: u32 = 130;

/// Text for HTML element content and double-quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A string usable as (part of) an HTML id: letters, digits, `-` and `_`.
fn id_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn state_class(s: State) -> &'static str {
    match s {
        State::Ok => "ok",
        State::Warn => "warn",
        State::Error => "error",
    }
}

pub fn uptime(seconds: u64) -> String {
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

const CSS: &str = "\
*{box-sizing:border-box}\
body{margin:0;background:#f3f4f6;color:#1f2937;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif}\
header{background:#1f2937;color:#f9fafb;padding:14px 24px}\
header h1{margin:0;font-size:22px;font-weight:600}\
.meta{color:#cbd5e1;font-size:13px;margin-top:3px}\
.meta span{margin-right:18px;white-space:nowrap}\
.meta b{color:#f9fafb;font-weight:500}\
main{padding:18px 24px;max-width:1280px}\
.cards{display:flex;flex-wrap:wrap;align-items:flex-start;gap:12px;margin-bottom:18px}\
.card{background:#fff;border-radius:6px;padding:9px 14px 10px;min-width:150px;max-width:320px;\
box-shadow:0 1px 2px rgba(0,0,0,.08);border-left:5px solid #16a34a}\
.card.warn{border-left-color:#d97706}.card.error{border-left-color:#dc2626;background:#fef2f2}\
.card .label{font-size:12px;color:#6b7280;text-transform:uppercase;letter-spacing:.04em}\
.card .value{font-size:24px;font-weight:600;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}\
.card .value.text{font-size:16px;font-weight:500;padding:4px 0}\
.card .unit{font-size:13px;font-weight:400;color:#6b7280}\
.card .help{font-size:12px;color:#6b7280;overflow-wrap:anywhere}\
section{background:#fff;border-radius:6px;padding:12px 16px;margin-bottom:16px;box-shadow:0 1px 2px rgba(0,0,0,.08)}\
h2{font-size:15px;margin:0 0 8px;font-weight:600}\
.note{color:#6b7280;font-size:12px;font-weight:400;margin-left:8px}\
.charts{display:flex;flex-wrap:wrap;gap:16px}\
figure{margin:0}\
figcaption{font-size:13px;margin-bottom:2px}\
figcaption .last{color:#6b7280;margin-left:6px;font-variant-numeric:tabular-nums}\
svg.chart text{font-size:10px;fill:#6b7280;font-family:inherit}\
.legend{font-size:12px;color:#4b5563}\
.legend span{margin-right:12px;white-space:nowrap}\
.legend i{display:inline-block;width:10px;height:3px;margin-right:4px;vertical-align:middle}\
table{border-collapse:collapse;width:100%}\
th{text-align:left;font-weight:600;color:#6b7280;font-size:12px;border-bottom:2px solid #e5e7eb;padding:4px 8px}\
td{border-bottom:1px solid #f0f1f3;padding:4px 8px;vertical-align:top;overflow-wrap:anywhere}\
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
tr.warn td{background:#fffbeb}tr.error td{background:#fef2f2}\
tr.error td:first-child{box-shadow:inset 3px 0 #dc2626}tr.warn td:first-child{box-shadow:inset 3px 0 #d97706}\
.empty{color:#6b7280;margin:0}\
summary{cursor:pointer;font-weight:600;font-size:15px}\
";

pub fn html(s: &Snapshot) -> String {
    let mut page = String::with_capacity(16 * 1024);
    let name = escape(&s.daemon);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{name} status</title><style>{CSS}</style></head><body>\n\
         <header><h1>{name}</h1><div class=\"meta\">\
         <span>version <b id=\"version\">{version}</b></span>\
         <span>pid <b id=\"pid\">{pid}</b></span>\
         <span>up <b id=\"uptime\">{up}</b></span>\
         <span>since <b id=\"started\">{started}</b></span>\
         <span>config <b id=\"config\">{config}</b></span></div></header>\n<main>\n",
        version = escape(&s.version),
        pid = s.pid,
        up = uptime(s.uptime_seconds),
        started = escape(&s.started_at),
        config = escape(&s.config_file),
    );
    cards(&mut page, &s.cards);
    charts(&mut page, &s.charts, s.sample_seconds);
    for t in &s.tables {
        table(&mut page, t);
    }
    recent_errors(&mut page, s);
    figures(&mut page, s);
    page.push_str("</main></body></html>\n");
    page
}

fn cards(page: &mut String, cards: &[Card]) {
    if cards.is_empty() {
        return;
    }
    page.push_str("<div class=\"cards\" id=\"cards\">\n");
    for c in cards {
        let _ = write!(
            page,
            "<div class=\"card {}\" title=\"{}\"><div class=\"label\">{}</div>\
             <div class=\"value{}\">{}",
            state_class(c.state),
            escape(&c.help),
            escape(&c.label),
            if matches!(c.value, Value::Text(_)) {
                " text"
            } else {
                ""
            },
            escape(&c.value.display()),
        );
        if !c.unit.is_empty() {
            let _ = write!(page, " <span class=\"unit\">{}</span>", escape(&c.unit));
        }
        page.push_str("</div>");
        if !c.help.is_empty() {
            let _ = write!(page, "<div class=\"help\">{}</div>", escape(&c.help));
        }
        page.push_str("</div>\n");
    }
    page.push_str("</div>\n");
}

fn charts(page: &mut String, charts: &[ChartData], sample_seconds: u64) {
    if charts.is_empty() {
        return;
    }
    let _ = writeln!(
        page,
        "<section id=\"charts\"><h2>Last hour<span class=\"note\">sampled every {sample_seconds} s</span></h2>\
         <div class=\"charts\">"
    );
    for c in charts {
        let unit = if c.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", escape(&c.unit))
        };
        let _ = write!(
            page,
            "<figure id=\"chart-{}\"><figcaption><b>{}</b>",
            id_part(&c.figure),
            escape(&c.title)
        );
        if let [only] = c.series.as_slice() {
            if let Some(&(_, v)) = only.points.last() {
                let _ = write!(
                    page,
                    "<span class=\"last\">now {}{unit}</span>",
                    format_number(v)
                );
            }
        } else if !unit.is_empty() {
            let _ = write!(page, "<span class=\"last\">{}</span>", unit.trim());
        }
        page.push_str("</figcaption>");
        let names: Vec<String> = c.series.iter().map(|s| s.name(&c.figure)).collect();
        let lines: Vec<Line> = c
            .series
            .iter()
            .zip(&names)
            .map(|(s, name)| Line {
                name,
                points: &s.points,
            })
            .collect();
        page.push_str(&svg::line_chart(
            &format!("{} ({})", c.title, c.figure),
            &lines,
            CHART_WIDTH,
            CHART_HEIGHT,
        ));
        if c.series.len() > 1 || c.omitted_series > 0 {
            page.push_str("<div class=\"legend\">");
            for (i, (s, name)) in c.series.iter().zip(&names).enumerate() {
                let last = s
                    .points
                    .last()
                    .map(|p| format_number(p.1))
                    .unwrap_or_else(|| "-".into());
                let _ = write!(
                    page,
                    "<span><i style=\"background:{}\"></i>{} {last}</span>",
                    PALETTE[i % PALETTE.len()],
                    escape(name)
                );
            }
            if c.omitted_series > 0 {
                let _ = write!(page, "<span>and {} more not drawn</span>", c.omitted_series);
            }
            page.push_str("</div>");
        }
        page.push_str("</figure>\n");
    }
    page.push_str("</div></section>\n");
}

fn cell(page: &mut String, v: &Value) {
    match v {
        Value::Number(n) => {
            let _ = write!(page, "<td class=\"n\">{}</td>", escape(&format_number(*n)));
        }
        Value::Text(t) => {
            let _ = write!(page, "<td>{}</td>", escape(t));
        }
    }
}

fn table(page: &mut String, t: &Table) {
    let _ = write!(
        page,
        "<section id=\"table-{}\"><h2>{}</h2>",
        id_part(&t.id),
        escape(&t.title)
    );
    if t.rows.is_empty() {
        let _ = writeln!(
            page,
            "<p class=\"empty\">{}</p></section>",
            escape(&t.empty)
        );
        return;
    }
    page.push_str("<table><thead><tr>");
    for c in &t.columns {
        let _ = write!(page, "<th>{}</th>", escape(c));
    }
    page.push_str("</tr></thead><tbody>\n");
    for r in &t.rows {
        let _ = write!(page, "<tr class=\"{}\">", state_class(r.state));
        for v in &r.cells {
            cell(page, v);
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</tbody></table>");
    if t.omitted_rows > 0 {
        let _ = write!(
            page,
            "<p class=\"empty\">and {} more rows not shown</p>",
            t.omitted_rows
        );
    }
    page.push_str("</section>\n");
}

fn recent_errors(page: &mut String, s: &Snapshot) {
    page.push_str("<section id=\"errors\"><h2>Recent warnings and errors</h2>");
    if s.recent_errors.is_empty() {
        page.push_str("<p class=\"empty\">none since start</p></section>\n");
        return;
    }
    page.push_str(
        "<table><thead><tr><th>time</th><th>level</th><th>message</th></tr></thead><tbody>\n",
    );
    for e in s.recent_errors.iter().rev() {
        let class = if e.level == "ERROR" { "error" } else { "warn" };
        let _ = writeln!(
            page,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&e.time),
            escape(&e.level),
            escape(&e.message)
        );
    }
    page.push_str("</tbody></table></section>\n");
}

fn figures(page: &mut String, s: &Snapshot) {
    let _ = writeln!(
        page,
        "<section id=\"figures\"><details><summary>All figures ({})</summary>\
         <table><thead><tr><th>figure</th><th>value</th><th>what it is</th></tr></thead><tbody>",
        s.figures.len()
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
            format_number(f.value),
            escape(&f.help)
        );
    }
    page.push_str("</tbody></table></details></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::history::SeriesData;
    use crate::status::page::Row;
    use crate::status::Kind;

    const HOSTILE: &str = "<script>alert(\"x\")</script> & 'q' \" onmouseover=\"alert(1)";

    fn snapshot() -> Snapshot {
        Snapshot {
            daemon: "d<1>".into(),
            version: "0.1.0".into(),
            pid: 42,
            started_at: "2024-01-01 00:00:00 UTC".into(),
            uptime_seconds: 90061,
            config_file: "/etc/\"x\".cf".into(),
            config: Vec::new(),
            figures: Vec::new(),
            cards: Vec::new(),
            tables: Vec::new(),
            charts: Vec::new(),
            sample_seconds: 10,
            history_seconds: 3600,
            recent_errors: Vec::new(),
        }
    }

    #[test]
    fn every_text_is_escaped() {
        let mut s = snapshot();
        s.cards = vec![Card::text(HOSTILE, HOSTILE).unit(HOSTILE).help(HOSTILE)];
        s.tables = vec![Table::new(HOSTILE, HOSTILE, &[HOSTILE])
            .row(Row::new(vec![HOSTILE.into()]).state(State::Error))];
        s.charts = vec![ChartData {
            figure: HOSTILE.into(),
            title: HOSTILE.into(),
            unit: HOSTILE.into(),
            kind: Some(Kind::Gauge),
            rate: false,
            series: vec![
                SeriesData {
                    labels: vec![("r".into(), HOSTILE.into())],
                    points: vec![(0.0, 1.0), (10.0, 2.0)],
                };
                2
            ],
            omitted_series: 0,
        }];
        s.recent_errors = vec![crate::logging::RecentEntry {
            time: HOSTILE.into(),
            level: "ERROR".into(),
            message: HOSTILE.into(),
            at: chrono::Utc::now(),
        }];
        s.figures =
            vec![crate::status::Figure::gauge(HOSTILE, HOSTILE, 1.0).with_label(HOSTILE, HOSTILE)];
        let page = html(&s);
        assert!(
            !page.contains("<script") && !page.contains("\" onmouseover"),
            "{page}"
        );
        assert!(!page.contains("'q'"), "single quotes escaped too");
        let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39; &quot; onmouseover=&quot;alert(1)";
        // Card label, value, unit, help twice; table id, title, column, cell; chart title
        // (caption and SVG), unit, legend twice; the error's time and message; the figure.
        assert!(page.matches(escaped).count() >= 15, "{page}");
        assert!(page.contains("<h1>d&lt;1&gt;</h1>"));
        assert!(page.contains("/etc/&quot;x&quot;.cf"));
        assert!(page.contains("<tr class=\"error\">"));
        for prefix in ["id=\"table-", "id=\"chart-"] {
            let at = page.find(prefix).unwrap() + prefix.len();
            let id = &page[at..at + page[at..].find('"').unwrap()];
            assert!(
                id.len() > 10
                    && id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)),
                "{id}"
            );
        }
    }

    #[test]
    fn the_page_has_its_parts_in_order() {
        let mut s = snapshot();
        s.cards = vec![Card::number("queue", 12.5).unit("URLs").state(State::Warn)];
        s.tables = vec![Table::new("cycles", "Last cycles", &["n"]).empty("no cycle yet")];
        s.charts = vec![ChartData {
            figure: "lines_total".into(),
            title: "Lines".into(),
            unit: "lines/s".into(),
            kind: Some(Kind::Counter),
            rate: true,
            series: vec![SeriesData {
                labels: Vec::new(),
                points: vec![(0.0, 1.0), (10.0, 3.0)],
            }],
            omitted_series: 0,
        }];
        let page = html(&s);
        assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
        assert!(page.contains("<b id=\"uptime\">1d 1h 1m</b>"));
        assert!(page.contains("<div class=\"card warn\""));
        assert!(page.contains("<div class=\"value\">12.5 <span class=\"unit\">URLs</span>"));
        assert!(
            page.contains("now 3 lines/s"),
            "the last point in the caption"
        );
        assert!(page.contains("sampled every 10 s"));
        assert!(page.contains("<p class=\"empty\">no cycle yet</p>"));
        assert!(page.contains("none since start"));
        let order = [
            "id=\"cards\"",
            "id=\"charts\"",
            "id=\"table-cycles\"",
            "id=\"errors\"",
            "id=\"figures\"",
        ];
        let at: Vec<usize> = order.iter().map(|o| page.find(o).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
        // No script, nothing fetched from elsewhere: the only URL is the SVG namespace.
        assert!(!page.contains("<script") && !page.contains("src=") && !page.contains("href="));
        assert_eq!(
            page.matches("://").count(),
            page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        assert_eq!(page.matches("<svg").count(), 1);
    }

    #[test]
    fn long_tables_and_crowded_charts_say_what_they_leave_out() {
        let mut s = snapshot();
        let mut t = Table::new("t", "T", &["n"]);
        t.omitted_rows = 7;
        t.push(Row::new(vec![1.into()]));
        s.tables = vec![t];
        s.charts = vec![ChartData {
            figure: "lag".into(),
            title: "Lag".into(),
            unit: String::new(),
            kind: None,
            rate: false,
            series: Vec::new(),
            omitted_series: 3,
        }];
        let page = html(&s);
        assert!(page.contains("and 7 more rows not shown"));
        assert!(page.contains("and 3 more not drawn"));
        assert!(page.contains("no samples yet"));
    }
}
