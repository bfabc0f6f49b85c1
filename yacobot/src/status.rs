//! The node's own figures, which the daemon's main loop keeps (the due URLs, the resources in
//! error of every node), and the small helpers every worker's figures use. Each worker's
//! figures are its own: [`crate::loader::LoaderStats`], [`crate::qargfilter::QargStats`],
//! [`crate::crawl::CrawlStats`], [`crate::resources::ResourceStats`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use focuser_daemon::status::{Card, Chart, Figure, Row, State, StatusSource, Table};

/// Rows kept for each of the page's tables.
const KEPT_ROWS: usize = 20;

pub fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// A counter's value, as a figure holds it.
pub fn get(counter: &AtomicU64) -> f64 {
    counter.load(Ordering::Relaxed) as f64
}

/// A counter's rate over the last minute: the counter's value noted now and then
/// ([`Rate::note`]), the rate read between the oldest and the newest note ([`Rate::per_second`]).
#[derive(Debug, Default)]
pub struct Rate {
    notes: Mutex<VecDeque<(Instant, u64)>>,
}

impl Rate {
    /// The rate is over about this long.
    pub const WINDOW: Duration = Duration::from_secs(60);

    /// Notes the counter's value now.
    pub fn note(&self, counter: &AtomicU64) {
        if let Ok(mut s) = self.notes.lock() {
            let now = Instant::now();
            s.push_back((now, counter.load(Ordering::Relaxed)));
            while s.len() > 2 && s.front().is_some_and(|(t, _)| now - *t > Self::WINDOW) {
                s.pop_front();
            }
        }
    }

    /// Per second between the oldest and the newest note, to a tenth; 0 before two notes.
    pub fn per_second(&self) -> f64 {
        let Ok(s) = self.notes.lock() else {
            return 0.0;
        };
        match (s.front(), s.back()) {
            (Some((t0, n0)), Some((t1, n1))) if t1 > t0 => {
                let rate = n1.saturating_sub(*n0) as f64 / (*t1 - *t0).as_secs_f64();
                (rate * 10.0).round() / 10.0
            }
            _ => 0.0,
        }
    }
}

/// Keeps `row` first in a table's rows, the oldest dropped beyond [`KEPT_ROWS`].
pub fn keep<T>(list: &Mutex<VecDeque<T>>, row: T) {
    if let Ok(mut l) = list.lock() {
        if l.len() == KEPT_ROWS {
            l.pop_back();
        }
        l.push_front(row);
    }
}

/// A partner feed whose last run failed, for the page's table.
#[derive(Debug, Clone)]
pub struct ResourceRow {
    pub id: u32,
    pub name: String,
    pub last_run: String,
    pub detail: String,
}

/// What the main loop counts every few seconds, whichever workers run.
#[derive(Default)]
pub struct NodeStats {
    pub due: AtomicU64,
    /// Set by the main loop from `vr_resource` (`None` until it first looked).
    pub resources_in_error: Mutex<Option<Vec<ResourceRow>>>,
}

impl NodeStats {
    pub fn set_resources_in_error(&self, rows: &[focuser_schema::models::VrResource]) {
        let rows = rows
            .iter()
            .map(|r| ResourceRow {
                id: r.id,
                name: r.res_name.clone(),
                last_run: r
                    .last_fetch_time
                    .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                    .unwrap_or_default(),
                detail: r.fetch_detail.clone().unwrap_or_default(),
            })
            .collect();
        if let Ok(mut r) = self.resources_in_error.lock() {
            *r = Some(rows);
        }
    }
}

impl StatusSource for NodeStats {
    fn charts(&self) -> Vec<Chart> {
        vec![Chart::of("yacobot_due_urls", "Due URLs").unit("URLs")]
    }

    fn figures(&self) -> Vec<Figure> {
        vec![Figure::gauge(
            "yacobot_due_urls",
            "URLs due and not claimed",
            get(&self.due),
        )]
    }

    fn cards(&self) -> Vec<Card> {
        let mut cards = vec![Card::number("due URLs", get(&self.due)).unit("URLs")];
        if let Ok(Some(r)) = self.resources_in_error.lock().as_deref() {
            cards.push(
                Card::number("resources in error", r.len() as f64)
                    .unit("feeds")
                    .error_if(!r.is_empty())
                    .help("partner feeds whose last run failed (table below)"),
            );
        }
        cards
    }

    fn tables(&self) -> Vec<Table> {
        let mut resources = Table::new(
            "resources_in_error",
            "Resources in error",
            &["resource", "id", "last run (UTC)", "detail"],
        )
        .empty("no resource in error");
        if let Ok(Some(r)) = self.resources_in_error.lock().as_deref() {
            for r in r {
                resources.push(
                    Row::new(vec![
                        r.name.as_str().into(),
                        r.id.into(),
                        r.last_run.as_str().into(),
                        r.detail.as_str().into(),
                    ])
                    .state(State::Error),
                );
            }
        }
        vec![resources]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn resources_in_error_show() {
        let s = NodeStats::default();
        assert!(
            !s.cards().iter().any(|c| c.label == "resources in error"),
            "not looked yet"
        );
        *s.resources_in_error.lock().unwrap() = Some(vec![ResourceRow {
            id: 3,
            name: "weather".into(),
            last_run: "2026-11-24 10:00:00".into(),
            detail: "source \"main\": empty sitemap".into(),
        }]);
        let card = s
            .cards()
            .into_iter()
            .find(|c| c.label == "resources in error")
            .unwrap();
        assert_eq!(card.state, State::Error);
        let table = s
            .tables()
            .into_iter()
            .find(|t| t.id == "resources_in_error")
            .unwrap();
        assert_eq!(
            table.rows[0].cells[3].display(),
            "source \"main\": empty sitemap"
        );
    }
}
