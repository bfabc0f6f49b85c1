//! yacobot's figures, cards, tables and charts (status page, `/status.json`, `/metrics`).

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use focuser_daemon::status::{Card, Chart, Figure, Row, State, StatusSource, Table};

/// Rows kept for each of the page's tables.
const KEPT_ROWS: usize = 20;
/// The fetch rate card is the rate over this long.
const RATE_WINDOW: Duration = Duration::from_secs(60);

/// A queue file the loader finished with, for the page's table.
#[derive(Debug, Clone)]
pub struct FileRow {
    pub time: String,
    pub inbox: String,
    pub file: String,
    pub records: u64,
    pub seconds: f64,
    /// `applied`, `already applied`, or why it is bad.
    pub result: String,
    pub bad: bool,
}

/// A fetch that failed, for the page's table.
#[derive(Debug, Clone)]
pub struct ErrorRow {
    pub time: String,
    pub url: String,
    pub kind: String,
    pub reason: String,
}

/// A partner feed whose last run failed, for the page's table.
#[derive(Debug, Clone)]
pub struct ResourceRow {
    pub id: u32,
    pub name: String,
    pub last_run: String,
    pub detail: String,
}

/// Counters the workers add to and gauges they set; read when the page is asked for.
#[derive(Default)]
pub struct Stats {
    pub files_applied: AtomicU64,
    pub files_already: AtomicU64,
    pub files_bad: AtomicU64,
    pub urls_loaded: AtomicU64,
    pub args_dropped: AtomicU64,
    pub args_kept: AtomicU64,
    pub rules_new: AtomicU64,
    pub imports: AtomicU64,
    pub rules_imported: AtomicU64,
    pub due: AtomicU64,
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
    pub errors: Mutex<BTreeMap<String, u64>>,
    pub archive_dir: Mutex<Option<PathBuf>>,
    recent_files: Mutex<VecDeque<FileRow>>,
    recent_errors: Mutex<VecDeque<ErrorRow>>,
    /// Pages fetched at each look of the main loop over the last minute (the fetch rate).
    page_samples: Mutex<VecDeque<(Instant, u64)>>,
    /// Set by the main loop from `vr_resource` (`None` until it first looked).
    pub resources_in_error: Mutex<Option<Vec<ResourceRow>>>,
}

pub fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

fn get(counter: &AtomicU64) -> f64 {
    counter.load(Ordering::Relaxed) as f64
}

fn keep<T>(list: &Mutex<VecDeque<T>>, row: T) {
    if let Ok(mut l) = list.lock() {
        if l.len() == KEPT_ROWS {
            l.pop_back();
        }
        l.push_front(row);
    }
}

impl Stats {
    pub fn file_done(&self, row: FileRow) {
        keep(&self.recent_files, row);
    }

    /// Counts a failed fetch by kind and keeps it for the page.
    pub fn fetch_error(&self, row: ErrorRow) {
        if let Ok(mut e) = self.errors.lock() {
            *e.entry(row.kind.clone()).or_insert(0) += 1;
        }
        keep(&self.recent_errors, row);
    }

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

    /// Notes the pages fetched so far (the main loop, every few seconds).
    pub fn sample_pages(&self) {
        if let Ok(mut s) = self.page_samples.lock() {
            let now = Instant::now();
            s.push_back((now, self.pages.load(Ordering::Relaxed)));
            while s.len() > 2 && s.front().is_some_and(|(t, _)| now - *t > RATE_WINDOW) {
                s.pop_front();
            }
        }
    }

    /// Pages per second between the oldest and the newest sample (up to a minute apart).
    pub fn fetch_rate(&self) -> f64 {
        let Ok(s) = self.page_samples.lock() else {
            return 0.0;
        };
        match (s.front(), s.back()) {
            (Some((t0, p0)), Some((t1, p1))) if t1 > t0 => {
                let rate = p1.saturating_sub(*p0) as f64 / (*t1 - *t0).as_secs_f64();
                (rate * 10.0).round() / 10.0
            }
            _ => 0.0,
        }
    }

    fn archive_bytes(&self) -> Option<u64> {
        let dir = self.archive_dir.lock().ok()?.clone()?;
        focuser_formats::segment::store_bytes(&dir).ok()
    }
}

impl StatusSource for Stats {
    fn charts(&self) -> Vec<Chart> {
        vec![
            Chart::of("yacobot_urls_loaded_total", "URLs loaded").unit("URLs"),
            Chart::of("yacobot_pages_total", "Pages fetched").unit("pages"),
            Chart::of("yacobot_bytes_total", "Bytes fetched").unit("bytes"),
            Chart::of("yacobot_due_urls", "Due URLs").unit("URLs"),
            Chart::of("yacobot_in_flight", "Transfers in flight").unit("transfers"),
            Chart::of("yacobot_host_waits_total", "Politeness waits").unit("waits"),
            Chart::of("yacobot_fetch_errors_total", "Fetch errors by kind").unit("errors"),
        ]
    }

    fn figures(&self) -> Vec<Figure> {
        let c = |name: &str, help: &str, v: &AtomicU64| Figure::counter(name, help, get(v));
        let g = |name: &str, help: &str, v: &AtomicU64| Figure::gauge(name, help, get(v));
        let mut f = vec![
            c(
                "yacobot_queue_files_total",
                "queue files applied",
                &self.files_applied,
            ),
            c(
                "yacobot_queue_files_already_total",
                "queue files found already applied (recorded in queue_applied)",
                &self.files_already,
            ),
            c(
                "yacobot_queue_files_bad_total",
                "queue files moved to bad/",
                &self.files_bad,
            ),
            c(
                "yacobot_urls_loaded_total",
                "queue records loaded into url",
                &self.urls_loaded,
            ),
            c(
                "yacobot_args_dropped_total",
                "query arguments dropped as insignificant",
                &self.args_dropped,
            ),
            c(
                "yacobot_args_kept_total",
                "query arguments kept",
                &self.args_kept,
            ),
            c(
                "yacobot_arg_rules_new_total",
                "arguments met for the first time, recorded as significant",
                &self.rules_new,
            ),
            c(
                "yacobot_qarg_imports_total",
                "qargfilter imports run",
                &self.imports,
            ),
            c(
                "yacobot_qarg_rules_imported_total",
                "path_arg_name rows written by the qargfilter import",
                &self.rules_imported,
            ),
            g("yacobot_due_urls", "URLs due and not claimed", &self.due),
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
                "yacobot_host_waits_total",
                "times a host had work but waited for its politeness delay",
                &self.host_waits,
            ),
            Figure::counter(
                "yacobot_host_wait_seconds_total",
                "time hosts waited for their politeness delay, added up",
                get(&self.host_wait_ms) / 1000.0,
            ),
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
        ];
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
        }
        f
    }

    fn cards(&self) -> Vec<Card> {
        let errors: u64 = self.errors.lock().map(|e| e.values().sum()).unwrap_or(0);
        let mut cards = vec![
            Card::number("queue files applied", get(&self.files_applied)).unit("files"),
            Card::number("bad queue files", get(&self.files_bad))
                .unit("files")
                .error_if(self.files_bad.load(Ordering::Relaxed) > 0)
                .help("moved to bad/ with a .why file beside them"),
            Card::number("URLs loaded", get(&self.urls_loaded)).unit("URLs"),
            Card::number("args dropped", get(&self.args_dropped)).unit("args"),
            Card::number("due URLs", get(&self.due)).unit("URLs"),
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
        if let Ok(Some(r)) = self.resources_in_error.lock().as_deref() {
            cards.push(
                Card::number("resources in error", r.len() as f64)
                    .unit("feeds")
                    .error_if(!r.is_empty())
                    .help("partner feeds whose last run failed (table below)"),
            );
        }
        if let Some(bytes) = self.archive_bytes() {
            cards.push(Card::number("archive", bytes as f64 / 1e6).unit("MB"));
        }
        cards
    }

    fn tables(&self) -> Vec<Table> {
        let mut files = Table::new(
            "queue_files",
            "Last queue files",
            &["time", "inbox", "file", "records", "seconds", "result"],
        )
        .empty("no queue file yet");
        if let Ok(l) = self.recent_files.lock() {
            for r in l.iter() {
                let row = Row::new(vec![
                    r.time.as_str().into(),
                    r.inbox.as_str().into(),
                    r.file.as_str().into(),
                    r.records.into(),
                    r.seconds.into(),
                    r.result.as_str().into(),
                ]);
                files.push(row.state(if r.bad { State::Error } else { State::Ok }));
            }
        }
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
        vec![files, errors, resources]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_fetch_rate_is_pages_per_second_between_the_samples_and_resources_in_error_show() {
        let s = Stats::default();
        assert_eq!(s.fetch_rate(), 0.0, "no sample yet");
        s.sample_pages();
        s.pages.store(30, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(200));
        s.sample_pages();
        let rate = s.fetch_rate();
        // 30 pages in at least 0.2 s, however slow the machine.
        assert!(rate > 0.0 && rate <= 150.0, "{rate}");
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
