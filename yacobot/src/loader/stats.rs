//! The loader's figures (status page, `/status.json`, `/metrics`): queue files applied, already
//! applied or bad, URLs loaded, query arguments, and the last files.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use focuser_daemon::status::{Card, Chart, Figure, Row, State, StatusSource, Table};

use crate::status::{add, get, keep};

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

#[derive(Default)]
pub struct LoaderStats {
    pub files_applied: AtomicU64,
    pub files_already: AtomicU64,
    pub files_bad: AtomicU64,
    /// Duplicate mode: files recorded as skipped, files held in this pass, and records left
    /// out because another master's files had counted their hits.
    pub files_skipped: AtomicU64,
    pub files_held: AtomicU64,
    pub urls_counted_elsewhere: AtomicU64,
    pub urls_loaded: AtomicU64,
    pub args_dropped: AtomicU64,
    pub args_kept: AtomicU64,
    pub rules_new: AtomicU64,
    /// `Url.StartFile`'s lines by what became of them.
    start_added: AtomicU64,
    start_known: AtomicU64,
    start_excluded: AtomicU64,
    start_refused: AtomicU64,
    start_bad: AtomicU64,
    recent_files: Mutex<VecDeque<FileRow>>,
}

impl LoaderStats {
    pub fn start_file(&self, c: &crate::start::file::Counts) {
        add(&self.start_added, c.added);
        add(&self.start_known, c.known);
        add(&self.start_excluded, c.excluded);
        add(&self.start_refused, c.refused);
        add(&self.start_bad, c.bad);
    }

    pub fn file_done(&self, row: FileRow) {
        keep(&self.recent_files, row);
    }
}

impl StatusSource for LoaderStats {
    fn charts(&self) -> Vec<Chart> {
        vec![Chart::of("yacobot_urls_loaded_total", "URLs loaded").unit("URLs")]
    }

    fn figures(&self) -> Vec<Figure> {
        let c = |name: &str, help: &str, v: &AtomicU64| Figure::counter(name, help, get(v));
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
                "yacobot_queue_files_skipped_total",
                "queue files skipped: another master's files had counted their period (Loader.Mode = duplicate)",
                &self.files_skipped,
            ),
            Figure::gauge(
                "yacobot_queue_files_held",
                "queue files of another master than the primary held while it keeps up (Loader.Mode = duplicate)",
                get(&self.files_held),
            ),
            c(
                "yacobot_queue_urls_counted_elsewhere_total",
                "queue records left out: another master's files had counted their hits (Loader.Mode = duplicate)",
                &self.urls_counted_elsewhere,
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
        ];
        for (result, v) in [
            ("added", &self.start_added),
            ("known", &self.start_known),
            ("excluded", &self.start_excluded),
            ("refused", &self.start_refused),
            ("bad", &self.start_bad),
        ] {
            f.push(
                Figure::counter(
                    "yacobot_start_urls_total",
                    "lines of Url.StartFile: added, known already, excluded, of another node's domain, bad",
                    get(v),
                )
                .with_label("result", result),
            );
        }
        f
    }

    fn cards(&self) -> Vec<Card> {
        vec![
            Card::number("queue files applied", get(&self.files_applied)).unit("files"),
            Card::number("bad queue files", get(&self.files_bad))
                .unit("files")
                .error_if(self.files_bad.load(Ordering::Relaxed) > 0)
                .help("moved to bad/ with a .why file beside them"),
            Card::number("URLs loaded", get(&self.urls_loaded)).unit("URLs"),
            Card::number("args dropped", get(&self.args_dropped)).unit("args"),
        ]
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
        vec![files]
    }
}
