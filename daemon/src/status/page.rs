//! What a daemon declares for its status page, besides its flat figures: a headline row of
//! [`Card`]s, [`Table`]s of rows it supplies, and which figures get a [`Chart`] of the last
//! hour. The same values go to `/status.json`, so the page can be checked against it.

use serde::Serialize;

/// How a card or a table row should catch the eye.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    #[default]
    Ok,
    Warn,
    Error,
}

/// A card's value or a table cell: a number (shown with [`format_number`]) or text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    Number(f64),
    Text(String),
}

impl Value {
    /// The value as the page shows it.
    pub fn display(&self) -> String {
        match self {
            Value::Number(n) => format_number(*n),
            Value::Text(t) => t.clone(),
        }
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Number(v)
    }
}

macro_rules! value_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::Number(v as f64)
            }
        }
    )*};
}
value_from_int!(u8, u16, u32, u64, usize, i32, i64);

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

/// Numbers as the page shows them: whole numbers as they are (`1234`), others with at most
/// three decimals (`0.25`, `12.346`), very large or very small ones in scientific notation
/// (`1.5e18`, `2.5e-5`), `n/a` for NaN and infinities.
pub fn format_number(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    if a >= 1e15 || (a > 0.0 && a < 1e-3) {
        let s = format!("{v:.3e}");
        return match s.split_once('e') {
            Some((mantissa, exp)) => format!("{}e{exp}", trim_zeros(mantissa)),
            None => s,
        };
    }
    if v.fract() == 0.0 {
        return format!("{}", v as i64);
    }
    let s = trim_zeros(&format!("{v:.3}")).to_string();
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// One key figure in the headline row: `Card::number("queue", 1200.0).unit("URLs")`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Card {
    pub label: String,
    pub value: Value,
    /// Shown after the value (`URLs`, `s`, `items/s`); may be empty.
    pub unit: String,
    pub state: State,
    /// A line of explanation under the card (and its tooltip); may be empty.
    pub help: String,
}

impl Card {
    pub fn new(label: &str, value: impl Into<Value>) -> Card {
        Card {
            label: label.into(),
            value: value.into(),
            unit: String::new(),
            state: State::Ok,
            help: String::new(),
        }
    }

    pub fn number(label: &str, value: f64) -> Card {
        Card::new(label, value)
    }

    pub fn text(label: &str, value: &str) -> Card {
        Card::new(label, value)
    }

    pub fn unit(mut self, unit: &str) -> Card {
        self.unit = unit.into();
        self
    }

    pub fn help(mut self, help: &str) -> Card {
        self.help = help.into();
        self
    }

    pub fn state(mut self, state: State) -> Card {
        self.state = state;
        self
    }

    /// Raises the state to `Warn` when `condition` holds (never lowers it).
    pub fn warn_if(mut self, condition: bool) -> Card {
        if condition {
            self.state = self.state.max(State::Warn);
        }
        self
    }

    /// Raises the state to `Error` when `condition` holds.
    pub fn error_if(mut self, condition: bool) -> Card {
        if condition {
            self.state = State::Error;
        }
        self
    }
}

/// A row of a [`Table`]: one cell per column, and how it should catch the eye.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub state: State,
    pub cells: Vec<Value>,
}

impl Row {
    pub fn new(cells: Vec<Value>) -> Row {
        Row {
            state: State::Ok,
            cells,
        }
    }

    pub fn state(mut self, state: State) -> Row {
        self.state = state;
        self
    }
}

/// A section of the page holding a table the daemon supplies (the master's last cycles,
/// yacobot's resources in error, the reader's receivers). Cells are text or numbers and are
/// always escaped: they may hold URLs and error text from the outside world.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Stable key in `/status.json` and the section's HTML id (`table-<id>`).
    pub id: String,
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
    /// Shown instead of the table when it has no rows (`no cycle yet`).
    pub empty: String,
    /// Rows left out because the table was longer than the page shows (see [`MAX_ROWS`]).
    pub omitted_rows: usize,
}

/// At most this many rows of one table reach the page and the JSON; keep tables short.
pub const MAX_ROWS: usize = 200;

impl Table {
    pub fn new(id: &str, title: &str, columns: &[&str]) -> Table {
        Table {
            id: id.into(),
            title: title.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
            empty: "none".into(),
            omitted_rows: 0,
        }
    }

    /// What the page says when there are no rows.
    pub fn empty(mut self, text: &str) -> Table {
        self.empty = text.into();
        self
    }

    pub fn row(mut self, row: Row) -> Table {
        self.push(row);
        self
    }

    pub fn push(&mut self, row: Row) {
        self.rows.push(row);
    }

    /// Cuts the table to [`MAX_ROWS`] rows, counting the rest.
    pub(crate) fn bounded(mut self) -> Table {
        if self.rows.len() > MAX_ROWS {
            self.omitted_rows += self.rows.len() - MAX_ROWS;
            self.rows.truncate(MAX_ROWS);
        }
        self
    }
}

/// A figure drawn as a line chart of the last hour. Every figure named `figure` that carries
/// all of `labels` is one line of the chart (so `Chart::of("reader_sender_lag_items", …)`
/// draws one line per receiver). Counters are drawn as their rate per second, gauges as they
/// are.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Chart {
    pub figure: String,
    pub labels: Vec<(String, String)>,
    pub title: String,
    /// The figure's unit (`lines`); a counter's chart shows it per second (`lines/s`).
    pub unit: String,
}

impl Chart {
    pub fn of(figure: &str, title: &str) -> Chart {
        Chart {
            figure: figure.into(),
            labels: Vec::new(),
            title: title.into(),
            unit: String::new(),
        }
    }

    pub fn unit(mut self, unit: &str) -> Chart {
        self.unit = unit.into();
        self
    }

    /// Only the figures that carry this label.
    pub fn with_label(mut self, key: &str, value: &str) -> Chart {
        self.labels.push((key.into(), value.into()));
        self
    }

    /// Whether `name`/`labels` is one of this chart's lines.
    pub(crate) fn selects(&self, name: &str, labels: &[(String, String)]) -> bool {
        self.figure == name && self.labels.iter().all(|l| labels.contains(l))
    }

    /// Charts are the same chart when they select the same figures.
    pub(crate) fn key(&self) -> (String, Vec<(String, String)>) {
        (self.figure.clone(), self.labels.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_shown_plainly() {
        assert_eq!(format_number(0.0), "0");
        assert_eq!(format_number(-0.0), "0");
        assert_eq!(format_number(1234.0), "1234");
        assert_eq!(format_number(-7.0), "-7");
        assert_eq!(format_number(0.25), "0.25");
        assert_eq!(format_number(12.345678), "12.346");
        assert_eq!(format_number(2.0004), "2");
        assert_eq!(format_number(-0.0001), "-1e-4");
        assert_eq!(format_number(0.000025), "2.5e-5");
        assert_eq!(format_number(1.5e18), "1.5e18");
        assert_eq!(format_number(f64::MAX), "1.798e308");
        assert_eq!(format_number(f64::NAN), "n/a");
        assert_eq!(format_number(f64::INFINITY), "n/a");
    }

    #[test]
    fn a_card_state_only_rises() {
        let c = Card::number("q", 5.0).error_if(true).warn_if(true);
        assert_eq!(c.state, State::Error);
        let c = Card::number("q", 5.0).warn_if(false);
        assert_eq!(c.state, State::Ok);
    }

    #[test]
    fn long_tables_are_cut_and_counted() {
        let mut t = Table::new("t", "T", &["n"]);
        for i in 0..MAX_ROWS + 5 {
            t.push(Row::new(vec![i.into()]));
        }
        let t = t.bounded();
        assert_eq!((t.rows.len(), t.omitted_rows), (MAX_ROWS, 5));
    }

    #[test]
    fn a_chart_selects_by_name_and_label_subset() {
        let c = Chart::of("lag", "lag").with_label("group", "index");
        let l = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(c.selects("lag", &l(&[("group", "index"), ("receiver", "a")])));
        assert!(!c.selects("lag", &l(&[("group", "summary")])));
        assert!(!c.selects("lags", &l(&[("group", "index")])));
    }
}
