//! The crawl worker's figures (status page, `/status.json`, `/metrics`): the fetcher's
//! counters, pages fetched and archived, the fetch rate, fetch errors by kind and the last
//! ones, claims, the archive.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use focuser_daemon::status::{Card, Chart, Figure, Row, State, StatusSource, Table};

use crate::status::{get, keep, Rate};

/// A fetch that failed, for the page's table.
#[derive(Debug, Clone)]
pub struct ErrorRow {
    pub time: String,
    pub url: String,
    pub kind: String,
    pub reason: String,
}

/// Counters the crawl worker adds to and gauges it sets; read when the page is asked for.
#[derive(Default)]
pub struct CrawlStats {
    /// Transfers in flight (robots.txt included), and URLs claimed and not yet booked.
    pub in_flight: AtomicU64,
    pub pending: AtomicU64,
    /// The fetcher's counters: transfers (tries, redirect hops, robots.txt), retries, redirects,
    /// robots.txt fetches, times a host had work but waited for its delay and how long.
    pub transfers: AtomicU64,
    pub retries: AtomicU64,
    pub redirects: AtomicU64,
    pub robots_fetches: AtomicU64,
    pub host_waits: AtomicU64,
    /// The record per host: robots.txt taken from it instead of being fetched, hosts looked
    /// up there for it, rows written and the time their statements took (µs).
    pub robots_seeded: AtomicU64,
    pub hosts_looked_up: AtomicU64,
    pub host_rows: AtomicU64,
    pub host_record_us: AtomicU64,
    pub host_wait_ms: AtomicU64,
    /// Hosts the fetcher remembers.
    pub hosts: AtomicU64,
    pub pages: AtomicU64,
    pub bytes: AtomicU64,
    pub from_archive: AtomicU64,
    pub gone: AtomicU64,
    pub claims_taken_back: AtomicU64,
    pub claims_lost: AtomicU64,
    pub segments_sealed: AtomicU64,
    /// Withdrawal: URLs removed by reason, `DELETE` items appended, and items found already
    /// durable for a batch a crash interrupted.
    pub withdrawn_merged: AtomicU64,
    pub withdrawn_expired: AtomicU64,
    pub withdrawn_other: AtomicU64,
    pub withdraw_items: AtomicU64,
    pub withdraw_found: AtomicU64,
    /// qargfilter's probe URLs claimed.
    pub probes: AtomicU64,
    /// The oldest archive segment kept for re-indexing (the published retention floor).
    pub archive_floor: AtomicU64,
    pub errors: Mutex<BTreeMap<String, u64>>,
    pub archive_dir: Mutex<Option<PathBuf>>,
    recent_errors: Mutex<VecDeque<ErrorRow>>,
    /// Pages fetched at each sample over the last minute (the fetch rate).
    page_rate: Rate,
}

impl CrawlStats {
    /// Counts a failed fetch by kind and keeps it for the page.
    pub fn fetch_error(&self, row: ErrorRow) {
        if let Ok(mut e) = self.errors.lock() {
            *e.entry(row.kind.clone()).or_insert(0) += 1;
        }
        keep(&self.recent_errors, row);
    }

    /// Notes the pages fetched so far (every few seconds).
    pub fn sample_pages(&self) {
        self.page_rate.note(&self.pages);
    }

    /// Pages per second over the last minute.
    pub fn fetch_rate(&self) -> f64 {
        self.page_rate.per_second()
    }

    fn archive_bytes(&self) -> Option<u64> {
        let dir = self.archive_dir.lock().ok()?.clone()?;
        focuser_formats::segment::store_bytes(&dir).ok()
    }

    fn fetcher_figures(&self) -> Vec<Figure> {
        let c = |name: &str, help: &str, v: &AtomicU64| Figure::counter(name, help, get(v));
        let g = |name: &str, help: &str, v: &AtomicU64| Figure::gauge(name, help, get(v));
        vec![
            g(
                "yacobot_in_flight",
                "transfers in flight (robots.txt included)",
                &self.in_flight,
            ),
            g(
                "yacobot_pending_urls",
                "URLs claimed and handed to the fetcher, not booked yet",
                &self.pending,
            ),
            g(
                "yacobot_fetch_hosts",
                "hosts the fetcher remembers",
                &self.hosts,
            ),
            c(
                "yacobot_transfers_total",
                "transfers started: tries, redirect hops, robots.txt",
                &self.transfers,
            ),
            c(
                "yacobot_retries_total",
                "tries after the first (network errors, 5xx, 429)",
                &self.retries,
            ),
            c(
                "yacobot_redirects_total",
                "redirects followed",
                &self.redirects,
            ),
            c(
                "yacobot_robots_fetches_total",
                "robots.txt fetched",
                &self.robots_fetches,
            ),
            c(
                "yacobot_robots_seeded_total",
                "robots.txt taken from the record per host instead of being fetched",
                &self.robots_seeded,
            ),
            c(
                "yacobot_host_lookups_total",
                "hosts new to the fetcher looked up in the record per host for their robots.txt",
                &self.hosts_looked_up,
            ),
            c(
                "yacobot_host_rows_total",
                "rows of the record per host written (one a host a booking batch)",
                &self.host_rows,
            ),
            Figure::counter(
                "yacobot_host_record_seconds_total",
                "time the record per host's statements took, inside the booking transactions",
                get(&self.host_record_us) / 1e6,
            ),
            c(
                "yacobot_host_waits_total",
                "times a host had work but waited for its politeness delay",
                &self.host_waits,
            ),
            Figure::counter(
                "yacobot_host_wait_seconds_total",
                "time hosts waited for their politeness delay, added up",
                get(&self.host_wait_ms) / 1000.0,
            ),
        ]
    }
}

impl StatusSource for CrawlStats {
    fn charts(&self) -> Vec<Chart> {
        vec![
            Chart::of("yacobot_pages_total", "Pages fetched").unit("pages"),
            Chart::of("yacobot_bytes_total", "Bytes fetched").unit("bytes"),
            Chart::of("yacobot_in_flight", "Transfers in flight").unit("transfers"),
            Chart::of("yacobot_host_waits_total", "Politeness waits").unit("waits"),
            Chart::of("yacobot_fetch_errors_total", "Fetch errors by kind").unit("errors"),
        ]
    }

    fn figures(&self) -> Vec<Figure> {
        let c = |name: &str, help: &str, v: &AtomicU64| Figure::counter(name, help, get(v));
        let mut f = self.fetcher_figures();
        f.extend([
            c(
                "yacobot_pages_total",
                "pages fetched and archived",
                &self.pages,
            ),
            c("yacobot_bytes_total", "bytes of pages fetched", &self.bytes),
            c(
                "yacobot_reindexed_from_archive_total",
                "URLs re-indexed from the archive without a download",
                &self.from_archive,
            ),
            c(
                "yacobot_gone_total",
                "URLs found gone (404, 410)",
                &self.gone,
            ),
            c(
                "yacobot_claims_taken_back_total",
                "expired claims of other crawlers taken back",
                &self.claims_taken_back,
            ),
            c(
                "yacobot_claims_lost_total",
                "fetches whose claim had lapsed and been taken by another crawler",
                &self.claims_lost,
            ),
            c(
                "yacobot_segments_sealed_total",
                "archive segments sealed",
                &self.segments_sealed,
            ),
            c(
                "yacobot_withdraw_items_total",
                "DELETE items appended for withdrawn URLs",
                &self.withdraw_items,
            ),
            c(
                "yacobot_probes_total",
                "qargfilter's probe URLs claimed (within Qargfilter.ProbeShare of the due ones)",
                &self.probes,
            ),
            c(
                "yacobot_withdraw_found_total",
                "DELETE items of an interrupted withdrawal found already in the archive",
                &self.withdraw_found,
            ),
        ]);
        for (reason, v) in [
            ("merged", &self.withdrawn_merged),
            ("expired", &self.withdrawn_expired),
            ("other", &self.withdrawn_other),
        ] {
            f.push(
                Figure::counter(
                    "yacobot_withdrawn_total",
                    "URLs withdrawn downstream and removed from the frontier, by reason",
                    get(v),
                )
                .with_label("reason", reason),
            );
        }
        if let Ok(e) = self.errors.lock() {
            for (kind, n) in e.iter() {
                f.push(
                    Figure::counter(
                        "yacobot_fetch_errors_total",
                        "failed fetches by kind",
                        *n as f64,
                    )
                    .with_label("kind", kind),
                );
            }
        }
        if let Some(bytes) = self.archive_bytes() {
            f.push(Figure::gauge(
                "yacobot_archive_bytes",
                "bytes of the archive's segments",
                bytes as f64,
            ));
            f.push(Figure::gauge(
                "yacobot_archive_floor_segment",
                "the oldest archive segment kept for re-indexing (retention.floor)",
                get(&self.archive_floor),
            ));
        }
        f
    }

    fn cards(&self) -> Vec<Card> {
        let errors: u64 = self.errors.lock().map(|e| e.values().sum()).unwrap_or(0);
        let mut cards = vec![
            Card::number("in flight", get(&self.in_flight)).unit("transfers"),
            Card::number("host waits", get(&self.host_waits))
                .unit("waits")
                .help("times a host had work but waited for Fetch.HostDelay"),
            Card::number("in the fetcher's hands", get(&self.pending))
                .unit("URLs")
                .help("claimed, not booked yet"),
            Card::number("pages fetched", get(&self.pages)).unit("pages"),
            Card::number("fetch rate", self.fetch_rate())
                .unit("pages/s")
                .help("over the last minute"),
            Card::number("fetch errors", errors as f64)
                .unit("errors")
                .warn_if(errors > 0),
        ];
        if let Some(bytes) = self.archive_bytes() {
            cards.push(Card::number("archive", bytes as f64 / 1e6).unit("MB"));
        }
        cards
    }

    fn tables(&self) -> Vec<Table> {
        let mut errors = Table::new(
            "fetch_errors",
            "Last fetch errors",
            &["time", "url", "kind", "reason"],
        )
        .empty("no fetch error");
        if let Ok(l) = self.recent_errors.lock() {
            for r in l.iter() {
                errors.push(
                    Row::new(vec![
                        r.time.as_str().into(),
                        r.url.as_str().into(),
                        r.kind.as_str().into(),
                        r.reason.as_str().into(),
                    ])
                    .state(State::Warn),
                );
            }
        }
        vec![errors]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    #[test]
    fn the_fetch_rate_is_pages_per_second_between_the_samples() {
        let s = CrawlStats::default();
        assert_eq!(s.fetch_rate(), 0.0, "no sample yet");
        s.sample_pages();
        s.pages.store(30, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(200));
        s.sample_pages();
        let rate = s.fetch_rate();
        // 30 pages in at least 0.2 s, however slow the machine.
        assert!(rate > 0.0 && rate <= 150.0, "{rate}");
    }
}
