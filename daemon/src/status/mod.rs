//! The status endpoint (`status_listen`): `GET /` for people, `GET /status.json`, `GET /metrics`
//! (Prometheus text format), `POST /reload` and `POST /rotate` for operators with a password.
//!
//! A daemon supplies its own figures through [`StatusSource`]; [`Figures`] is a ready-made
//! registry it can simply set values in. Besides figures, a source may declare what the page
//! shows first: [`Card`]s (key figures), [`Table`]s (rows it supplies) and [`Chart`]s (figures
//! drawn over the last hour, sampled every `status_sample` seconds into a bounded
//! [`History`]). `/status.json` holds all of it; `/metrics` holds the figures only.
//!
//! ```
//! use focuser_daemon::status::{Card, Chart, Figure, Row, StatusSource, Table};
//!
//! struct Queue { urls: u64, failed: Vec<(String, String)> }
//!
//! impl StatusSource for Queue {
//!     fn figures(&self) -> Vec<Figure> {
//!         vec![Figure::gauge("queue_urls", "URLs due", self.urls as f64)]
//!     }
//!     fn cards(&self) -> Vec<Card> {
//!         vec![Card::number("queue", self.urls as f64).unit("URLs").warn_if(self.urls > 10_000)]
//!     }
//!     fn tables(&self) -> Vec<Table> {
//!         let mut t = Table::new("failed", "Resources in error", &["resource", "detail"])
//!             .empty("no resource in error");
//!         for (name, detail) in &self.failed {
//!             t.push(Row::new(vec![name.as_str().into(), detail.as_str().into()]));
//!         }
//!         vec![t]
//!     }
//!     fn charts(&self) -> Vec<Chart> {
//!         vec![Chart::of("queue_urls", "Queue").unit("URLs")]
//!     }
//! }
//! ```

mod guard;
mod history;
pub(crate) mod html;
mod http;
mod log_figures;
mod page;
mod render;
pub(crate) mod server;
mod svg;

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

pub use history::{ChartData, History, Ring, SeriesData, HISTORY_SECONDS, MAX_CHARTS, MAX_SERIES};
pub(crate) use log_figures::LogFigures;
pub use page::{format_number, Card, Chart, Row, State, Table, Value, MAX_ROWS};
pub use render::Snapshot;
pub use server::{StatusServer, StatusShared};
pub use svg::{line_chart, Line};

/// Whether a figure only grows (a counter) or goes up and down (a gauge).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Counter,
    Gauge,
}

/// One number the daemon reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// `snake_case`; exported to Prometheus as `focuser_<name>`.
    pub name: String,
    pub help: String,
    pub kind: Kind,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Figure {
    pub fn gauge(name: &str, help: &str, value: f64) -> Figure {
        Figure {
            name: name.into(),
            help: help.into(),
            kind: Kind::Gauge,
            labels: Vec::new(),
            value,
        }
    }

    pub fn counter(name: &str, help: &str, value: f64) -> Figure {
        Figure {
            name: name.into(),
            help: help.into(),
            kind: Kind::Counter,
            labels: Vec::new(),
            value,
        }
    }

    pub fn with_label(mut self, key: &str, value: &str) -> Figure {
        self.labels.push((key.into(), value.into()));
        self
    }
}

/// What a daemon shows on its status page and in its metrics. Only `figures` is required;
/// the rest shape the page and default to nothing.
pub trait StatusSource: Send + Sync {
    /// Numbers for the page's figure list, `/status.json` and `/metrics`.
    fn figures(&self) -> Vec<Figure>;

    /// Key figures for the headline row of the page.
    fn cards(&self) -> Vec<Card> {
        Vec::new()
    }

    /// Sections of rows (at most [`MAX_ROWS`] of each are shown).
    fn tables(&self) -> Vec<Table> {
        Vec::new()
    }

    /// Which figures are drawn over the last hour.
    fn charts(&self) -> Vec<Chart> {
        Vec::new()
    }
}

/// A figure's identity: its name and labels.
type FigureKey = (String, Vec<(String, String)>);

/// A registry of figures a daemon sets as it works, and of the cards, tables and charts of
/// its page: each replaces the one set before it with the same name (label, id, figure).
#[derive(Debug, Default)]
pub struct Figures {
    values: Mutex<BTreeMap<FigureKey, Figure>>,
    page: Mutex<PageParts>,
}

/// What a [`Figures`] registry holds for the page, in the order first set.
#[derive(Debug, Default)]
struct PageParts {
    cards: Vec<Card>,
    tables: Vec<Table>,
    charts: Vec<Chart>,
}

/// Replaces the element `same` finds, or appends `new`.
fn replace_or_push<T>(list: &mut Vec<T>, new: T, same: impl Fn(&T, &T) -> bool) {
    match list.iter_mut().find(|old| same(old, &new)) {
        Some(old) => *old = new,
        None => list.push(new),
    }
}

impl Figures {
    pub fn set(&self, figure: Figure) {
        if let Ok(mut values) = self.values.lock() {
            values.insert((figure.name.clone(), figure.labels.clone()), figure);
        }
    }

    /// Adds `by` to a counter, creating it at `by`.
    pub fn add(&self, name: &str, help: &str, by: f64) {
        if let Ok(mut values) = self.values.lock() {
            values
                .entry((name.to_string(), Vec::new()))
                .and_modify(|f| f.value += by)
                .or_insert_with(|| Figure::counter(name, help, by));
        }
    }

    /// Sets the card with this card's label.
    pub fn set_card(&self, card: Card) {
        if let Ok(mut p) = self.page.lock() {
            replace_or_push(&mut p.cards, card, |a, b| a.label == b.label);
        }
    }

    /// Sets the table with this table's id.
    pub fn set_table(&self, table: Table) {
        if let Ok(mut p) = self.page.lock() {
            replace_or_push(&mut p.tables, table, |a, b| a.id == b.id);
        }
    }

    /// Draws a figure over the last hour (once; declaring it again changes its title).
    pub fn add_chart(&self, chart: Chart) {
        if let Ok(mut p) = self.page.lock() {
            replace_or_push(&mut p.charts, chart, |a, b| a.key() == b.key());
        }
    }
}

impl StatusSource for Figures {
    fn figures(&self) -> Vec<Figure> {
        self.values
            .lock()
            .map(|v| v.values().cloned().collect())
            .unwrap_or_default()
    }

    fn cards(&self) -> Vec<Card> {
        self.page
            .lock()
            .map(|p| p.cards.clone())
            .unwrap_or_default()
    }

    fn tables(&self) -> Vec<Table> {
        self.page
            .lock()
            .map(|p| p.tables.clone())
            .unwrap_or_default()
    }

    fn charts(&self) -> Vec<Chart> {
        self.page
            .lock()
            .map(|p| p.charts.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_replaces_page_parts_by_name() {
        let f = Figures::default();
        f.set_card(Card::number("queue", 1.0));
        f.set_card(Card::number("errors", 0.0));
        f.set_card(Card::number("queue", 2.0));
        f.set_table(Table::new("t", "first", &["a"]));
        f.set_table(Table::new("t", "second", &["a"]));
        f.add_chart(Chart::of("x", "X"));
        f.add_chart(Chart::of("x", "X again"));
        f.add_chart(Chart::of("x", "X of a").with_label("r", "a"));
        let cards = f.cards();
        assert_eq!(cards.len(), 2);
        assert_eq!(
            (cards[0].label.as_str(), &cards[0].value),
            ("queue", &Value::Number(2.0))
        );
        assert_eq!(f.tables().len(), 1);
        assert_eq!(f.tables()[0].title, "second");
        let charts = f.charts();
        assert_eq!(charts.len(), 2);
        assert_eq!(charts[0].title, "X again");
    }

    struct OnlyFigures;
    impl StatusSource for OnlyFigures {
        fn figures(&self) -> Vec<Figure> {
            vec![Figure::gauge("g", "", 1.0)]
        }
    }

    #[test]
    fn a_source_with_figures_only_declares_nothing_else() {
        let s = OnlyFigures;
        assert!(s.cards().is_empty() && s.tables().is_empty() && s.charts().is_empty());
        assert_eq!(s.figures().len(), 1);
    }
}
