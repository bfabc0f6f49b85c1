//! Does a status page, as a browser rendered it, hold what the daemon's `/status.json` says?
//! A daemon at work changes its figures while the page is being looked at, so the page is
//! compared with two snapshots taken before and after it: whatever both agree on must be on
//! the page, shown the way the page shows it.

use focuser_daemon::status::format_number;
use serde_json::Value;

/// A card's value or a table cell as the page shows it.
pub fn shown(v: &Value) -> String {
    match v {
        Value::Number(n) => format_number(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What the page `text` lacks of the cards, tables and charts `before` and `after` agree on
/// (an empty list: it holds all of it), and how many cards and cells were compared.
pub fn missing(text: &str, before: &Value, after: &Value) -> (Vec<String>, usize) {
    let mut missing = Vec::new();
    let mut compared = 0;
    let list = |v: &Value, key: &str| v[key].as_array().cloned().unwrap_or_default();
    let (cards0, cards1) = (list(before, "cards"), list(after, "cards"));
    for card in &cards1 {
        if !cards0.contains(card) {
            continue; // it changed meanwhile
        }
        compared += 1;
        let mut expected = format!(
            "{} {}",
            card["label"].as_str().unwrap_or(""),
            shown(&card["value"])
        );
        let unit = card["unit"].as_str().unwrap_or("");
        if !unit.is_empty() {
            expected = format!("{expected} {unit}");
        }
        if !text.contains(&expected) {
            missing.push(format!("card {expected:?}"));
        }
    }
    let (tables0, tables1) = (list(before, "tables"), list(after, "tables"));
    for table in &tables1 {
        let title = table["title"].as_str().unwrap_or("");
        if !text.contains(title) {
            missing.push(format!("table title {title:?}"));
        }
        let Some(old) = tables0.iter().find(|t| t["id"] == table["id"]) else {
            continue;
        };
        let rows = table["rows"].as_array().cloned().unwrap_or_default();
        if rows.is_empty() && old == table {
            let empty = table["empty"].as_str().unwrap_or("");
            if !text.contains(empty) {
                missing.push(format!("{title}: {empty:?}"));
            }
        }
        let old_rows = old["rows"].as_array().cloned().unwrap_or_default();
        for row in rows.iter().filter(|r| old_rows.contains(r)) {
            let cells: Vec<String> = row["cells"]
                .as_array()
                .map(|c| c.iter().map(shown).collect())
                .unwrap_or_default();
            compared += cells.len();
            // A row reads as its cells in order, each a word apart.
            let line = cells
                .iter()
                .filter(|c| !c.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join(" ");
            if !text.contains(&line) {
                missing.push(format!("{title}: row {line:?}"));
            }
        }
    }
    for chart in list(after, "charts") {
        let title = chart["title"].as_str().unwrap_or("");
        if !text.contains(title) {
            missing.push(format!("chart {title:?}"));
        }
    }
    (missing, compared)
}
