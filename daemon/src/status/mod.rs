//! The status endpoint (`status_listen`): `GET /` for people, `GET /status.json`, `GET /metrics`
//! (Prometheus text format), `POST /reload` and `POST /rotate` for operators with a password.
//!
//! A daemon supplies its own figures through [`StatusSource`]; [`Figures`] is a ready-made
//! registry it can simply set values in.

mod render;
pub(crate) mod server;

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

pub use server::{StatusServer, StatusShared};

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

/// What a daemon shows on its status page and in its metrics.
pub trait StatusSource: Send + Sync {
    fn figures(&self) -> Vec<Figure>;
}

/// A figure's identity: its name and labels.
type FigureKey = (String, Vec<(String, String)>);

/// A registry of figures a daemon sets as it works.
#[derive(Debug, Default)]
pub struct Figures {
    values: Mutex<BTreeMap<FigureKey, Figure>>,
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
}

impl StatusSource for Figures {
    fn figures(&self) -> Vec<Figure> {
        self.values
            .lock()
            .map(|v| v.values().cloned().collect())
            .unwrap_or_default()
    }
}
