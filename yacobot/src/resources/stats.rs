//! The resources worker's figures (status page, `/status.json`, `/metrics`): runs, items
//! written, errors, and the last runs. The resources in error across all nodes are read from
//! `vr_resource` at each scan.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use focuser_daemon::status::{Card, Chart, Figure, Row, State, StatusSource, Table};

use crate::status::{add, get};

/// Runs kept for the page's table.
const KEPT_RUNS: usize = 20;

/// A finished run, for the page's table.
#[derive(Debug, Clone)]
pub struct RunRow {
    pub time: String,
    pub resource: String,
    pub ok: bool,
    pub inserted: u64,
    pub updated: u64,
    pub deleted: u64,
    pub seconds: f64,
    /// `fetch_detail`, on one line.
    pub detail: String,
}

#[derive(Default)]
pub struct ResourceStats {
    pub runs: AtomicU64,
    pub runs_failed: AtomicU64,
    pub inserted: AtomicU64,
    pub updated: AtomicU64,
    pub deleted: AtomicU64,
    pub unchanged: AtomicU64,
    pub failed_keys: AtomicU64,
    /// Items appended to the resources store, those of a recovery included.
    pub emitted: AtomicU64,
    pub feeds: AtomicU64,
    pub feed_errors: AtomicU64,
    pub sitemap_errors: AtomicU64,
    /// Runs that diffed against their item digest file; digest files refused as damaged.
    pub digest_files_used: AtomicU64,
    pub digest_files_refused: AtomicU64,
    /// Items written without a `loc_id`: the location list does not know their location.
    pub unknown_locations: AtomicU64,
    /// Unchanged items whose `loc_id` was dropped or changed (UPDATE2, UPDATE3).
    pub relocated: AtomicU64,
    /// Location files refused (a bad line): the list in force stayed.
    pub location_files_refused: AtomicU64,
    /// Pending rows whose `update_type` is no pending change's, met by a recovery.
    pub unknown_update_types: AtomicU64,
    /// Resources whose priority a run raised to 2 (large).
    pub raised_priority: AtomicU64,
    /// Customer database errors: unreachable, a query that failed, a row that is not GBK.
    pub customer_errors: AtomicU64,
    /// Customer rows written.
    pub customer_rows: AtomicU64,
    /// Resend snapshots written, their items, the attempts that failed, and asks refused
    /// ([`super::snapshot`]).
    pub snapshots: AtomicU64,
    pub snapshot_items: AtomicU64,
    pub snapshot_errors: AtomicU64,
    pub snapshot_asks_refused: AtomicU64,
    /// Gauges: runs claimed and not finished here; resources whose last run failed (all nodes,
    /// `None` until the first scan looked).
    pub running: AtomicU64,
    pub in_error: Mutex<Option<u64>>,
    recent: Mutex<VecDeque<RunRow>>,
}

impl ResourceStats {
    /// A run ended: its counts and its row.
    pub fn run_done(&self, row: RunRow, unchanged: u64, failed_keys: u64) {
        add(&self.runs, 1);
        if !row.ok {
            add(&self.runs_failed, 1);
        }
        add(&self.inserted, row.inserted);
        add(&self.updated, row.updated);
        add(&self.deleted, row.deleted);
        add(&self.unchanged, unchanged);
        add(&self.failed_keys, failed_keys);
        if let Ok(mut l) = self.recent.lock() {
            if l.len() == KEPT_RUNS {
                l.pop_back();
            }
            l.push_front(row);
        }
    }

    pub fn set_in_error(&self, n: u64) {
        if let Ok(mut e) = self.in_error.lock() {
            *e = Some(n);
        }
    }

    fn in_error(&self) -> Option<u64> {
        self.in_error.lock().ok().and_then(|e| *e)
    }
}

impl StatusSource for ResourceStats {
    fn figures(&self) -> Vec<Figure> {
        let c = |name: &str, help: &str, v: &AtomicU64| Figure::counter(name, help, get(v));
        let mut f = vec![
            c(
                "yacobot_resource_runs_total",
                "partner feed runs ended",
                &self.runs,
            ),
            c(
                "yacobot_resource_runs_failed_total",
                "partner feed runs ended in error (fetch_status 4)",
                &self.runs_failed,
            ),
            c(
                "yacobot_resource_items_inserted_total",
                "feed items inserted into vr_data",
                &self.inserted,
            ),
            c(
                "yacobot_resource_items_updated_total",
                "feed items changed in vr_data",
                &self.updated,
            ),
            c(
                "yacobot_resource_items_deleted_total",
                "feed items marked deleted in vr_data",
                &self.deleted,
            ),
            c(
                "yacobot_resource_items_unchanged_total",
                "feed items found unchanged",
                &self.unchanged,
            ),
            c(
                "yacobot_resource_failed_keys_total",
                "feed items without their key or a required field",
                &self.failed_keys,
            ),
            c(
                "yacobot_resource_snapshots_total",
                "resend snapshots written (the live items of a store, for a reader's resend)",
                &self.snapshots,
            ),
            c(
                "yacobot_resource_snapshot_items_total",
                "items written into resend snapshots",
                &self.snapshot_items,
            ),
            c(
                "yacobot_resource_snapshot_errors_total",
                "resend snapshots that failed to be written (tried again)",
                &self.snapshot_errors,
            ),
            c(
                "yacobot_resource_snapshot_asks_refused_total",
                "snapshot requests refused (moved aside as .ask.bad)",
                &self.snapshot_asks_refused,
            ),
            c(
                "yacobot_resource_items_emitted_total",
                "items appended to the resources store (UPDATE and DELETE)",
                &self.emitted,
            ),
            c(
                "yacobot_resource_feeds_total",
                "feed URLs fetched and parsed",
                &self.feeds,
            ),
            c(
                "yacobot_resource_feed_errors_total",
                "feed URLs that could not be fetched or parsed",
                &self.feed_errors,
            ),
            c(
                "yacobot_resource_sitemap_errors_total",
                "data sources whose sitemap failed",
                &self.sitemap_errors,
            ),
            c(
                "yacobot_resource_digest_files_used_total",
                "runs that diffed against their item digest file instead of reading vr_data",
                &self.digest_files_used,
            ),
            c(
                "yacobot_resource_digest_files_refused_total",
                "item digest files refused as damaged (vr_data read instead)",
                &self.digest_files_refused,
            ),
            c(
                "yacobot_resource_unknown_locations_total",
                "feed items whose location the location list does not know (written without a loc_id)",
                &self.unknown_locations,
            ),
            c(
                "yacobot_resource_items_relocated_total",
                "unchanged feed items whose loc_id was dropped or changed (UPDATE2, UPDATE3)",
                &self.relocated,
            ),
            c(
                "yacobot_resource_location_files_refused_total",
                "location files refused (a bad line): the list in force stayed",
                &self.location_files_refused,
            ),
            c(
                "yacobot_resource_unknown_update_types_total",
                "pending vr_data rows with an update_type no pending change has (emitted by their data_status)",
                &self.unknown_update_types,
            ),
            c(
                "yacobot_resource_priority_raised_total",
                "resources raised to priority 2 as large (Resources.LargeItems)",
                &self.raised_priority,
            ),
            c(
                "yacobot_resource_customer_errors_total",
                "customer database errors: unreachable, a failed query, a row that is not GBK",
                &self.customer_errors,
            ),
            c(
                "yacobot_resource_customer_rows_total",
                "customer_resource rows written with a run's outcome",
                &self.customer_rows,
            ),
            Figure::gauge(
                "yacobot_resource_runs_running",
                "partner feed runs claimed by this process and not finished",
                get(&self.running),
            ),
        ];
        if let Some(n) = self.in_error() {
            f.push(Figure::gauge(
                "yacobot_resources_in_error",
                "resources whose last run failed (fetch_status 4), on any node",
                n as f64,
            ));
        }
        f
    }

    fn cards(&self) -> Vec<Card> {
        let failed = self.runs_failed.load(Ordering::Relaxed);
        let written = get(&self.inserted) + get(&self.updated) + get(&self.deleted);
        vec![
            Card::number("resource runs", get(&self.runs))
                .unit("runs")
                .help("partner feed runs ended here"),
            Card::number("resource runs failed", failed as f64)
                .unit("runs")
                .warn_if(failed > 0)
                .help("fetch_status 4: see the resources in error"),
            Card::number("feed items written", written)
                .unit("items")
                .help("inserted, changed or deleted in vr_data"),
        ]
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "resource_runs",
            "Last resource runs",
            &[
                "ended (UTC)",
                "resource",
                "new",
                "changed",
                "deleted",
                "seconds",
                "detail",
            ],
        )
        .empty("no resource run yet");
        if let Ok(l) = self.recent.lock() {
            for r in l.iter() {
                let row = Row::new(vec![
                    r.time.as_str().into(),
                    r.resource.as_str().into(),
                    r.inserted.into(),
                    r.updated.into(),
                    r.deleted.into(),
                    r.seconds.into(),
                    r.detail.as_str().into(),
                ]);
                t.push(row.state(if r.ok { State::Ok } else { State::Error }));
            }
        }
        vec![t]
    }

    fn charts(&self) -> Vec<Chart> {
        vec![
            Chart::of(
                "yacobot_resource_items_inserted_total",
                "Feed items inserted",
            )
            .unit("items"),
            Chart::of("yacobot_resource_items_updated_total", "Feed items changed").unit("items"),
        ]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn row(ok: bool) -> RunRow {
        RunRow {
            time: "2026-11-24 10:00:00".into(),
            resource: "shop".into(),
            ok,
            inserted: 3,
            updated: 2,
            deleted: 1,
            seconds: 0.5,
            detail: "items: 3 new".into(),
        }
    }

    fn figure(s: &ResourceStats, name: &str) -> Option<f64> {
        s.figures()
            .into_iter()
            .find(|f| f.name == name)
            .map(|f| f.value)
    }

    #[test]
    fn runs_add_up_in_figures_cards_and_the_table() {
        let s = ResourceStats::default();
        assert_eq!(
            figure(&s, "yacobot_resources_in_error"),
            None,
            "not looked yet"
        );
        assert_eq!(s.tables()[0].rows.len(), 0);
        s.run_done(row(true), 10, 0);
        s.run_done(row(false), 0, 4);
        s.set_in_error(1);
        assert_eq!(figure(&s, "yacobot_resource_runs_total"), Some(2.0));
        assert_eq!(figure(&s, "yacobot_resource_runs_failed_total"), Some(1.0));
        assert_eq!(
            figure(&s, "yacobot_resource_items_inserted_total"),
            Some(6.0)
        );
        assert_eq!(
            figure(&s, "yacobot_resource_items_updated_total"),
            Some(4.0)
        );
        assert_eq!(
            figure(&s, "yacobot_resource_items_deleted_total"),
            Some(2.0)
        );
        assert_eq!(
            figure(&s, "yacobot_resource_items_unchanged_total"),
            Some(10.0)
        );
        assert_eq!(figure(&s, "yacobot_resource_failed_keys_total"), Some(4.0));
        assert_eq!(figure(&s, "yacobot_resources_in_error"), Some(1.0));
        let failed = s
            .cards()
            .into_iter()
            .find(|c| c.label == "resource runs failed")
            .unwrap();
        assert_eq!(failed.state, State::Warn);
        let t = &s.tables()[0];
        assert_eq!(t.rows.len(), 2);
        // The latest first.
        assert_eq!(t.rows[0].state, State::Error);
        assert_eq!(t.rows[1].state, State::Ok);
    }

    #[test]
    fn the_table_keeps_the_last_runs_only() {
        let s = ResourceStats::default();
        for _ in 0..KEPT_RUNS + 5 {
            s.run_done(row(true), 0, 0);
        }
        assert_eq!(s.tables()[0].rows.len(), KEPT_RUNS);
        assert_eq!(
            figure(&s, "yacobot_resource_runs_total"),
            Some((KEPT_RUNS + 5) as f64)
        );
    }
}
