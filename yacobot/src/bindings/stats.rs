//! The bindings' figures, part of the page analysis worker's (status page, `/status.json`,
//! `/metrics`): pages bound and their rate, phrases per binding, the tragic share, changes
//! shipped, and the dictionaries in force.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use focuser_daemon::status::{Card, Figure};

use super::store::Shipment;
use crate::status::{add, get, Rate};

#[derive(Default)]
pub struct BindStats {
    /// `Bindings.Enable`: without it the figures are not shown.
    pub enabled: AtomicBool,
    pub bound: AtomicU64,
    pub phrases: AtomicU64,
    pub tragic: AtomicU64,
    pub shipped: AtomicU64,
    pub withdrawn: AtomicU64,
    pub unchanged: AtomicU64,
    /// The dictionaries in force, as the card shows them.
    dicts: Mutex<String>,
    rate: Rate,
}

impl BindStats {
    /// A committed batch's bindings.
    pub fn batch(&self, s: &Shipment) {
        add(&self.bound, s.bound);
        add(&self.phrases, s.phrases);
        add(&self.tragic, s.tragic);
        add(&self.shipped, s.appended);
        add(&self.withdrawn, s.withdrawn);
        add(&self.unchanged, s.unchanged);
        self.sample();
    }

    pub fn set_dicts(&self, what: String) {
        if let Ok(mut d) = self.dicts.lock() {
            *d = what;
        }
    }

    pub fn sample(&self) {
        self.rate.note(&self.bound);
    }

    /// Pages bound a second over the last minute.
    pub fn rate(&self) -> f64 {
        self.rate.per_second()
    }

    fn per_binding(&self) -> f64 {
        let n = get(&self.bound);
        if n > 0.0 {
            get(&self.phrases) / n
        } else {
            0.0
        }
    }

    fn tragic_share(&self) -> f64 {
        let n = get(&self.bound);
        if n > 0.0 {
            get(&self.tragic) / n
        } else {
            0.0
        }
    }

    pub fn figures(&self) -> Vec<Figure> {
        if !self.enabled.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let c = |name: &str, help: &str, v: &AtomicU64| Figure::counter(name, help, get(v));
        vec![
            c("yacobot_bindings_pages_total", "pages bound", &self.bound),
            c(
                "yacobot_bindings_phrases_total",
                "phrases bound, all types together (over pages_total: phrases per binding)",
                &self.phrases,
            ),
            c(
                "yacobot_bindings_tragic_total",
                "pages the tragic filter flagged (no phrases)",
                &self.tragic,
            ),
            c(
                "yacobot_bindings_shipped_total",
                "items appended to the bindings store: bindings changed or withdrawn",
                &self.shipped,
            ),
            c(
                "yacobot_bindings_withdrawn_total",
                "DELETE items appended: URLs gone or no longer analysable",
                &self.withdrawn,
            ),
            c(
                "yacobot_bindings_unchanged_total",
                "bindings equal to the one shipped last: not shipped again",
                &self.unchanged,
            ),
        ]
    }

    pub fn cards(&self) -> Vec<Card> {
        if !self.enabled.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        let dicts = self.dicts.lock().map(|d| d.clone()).unwrap_or_default();
        vec![
            Card::number("binding rate", round(self.rate()))
                .unit("pages/s")
                .help("over the last minute"),
            Card::number("phrases per binding", round(self.per_binding())),
            Card::number("tragic share", round(self.tragic_share()))
                .help("pages bound that the tragic filter flagged"),
            Card::text("dictionaries", &dicts),
        ]
    }
}
