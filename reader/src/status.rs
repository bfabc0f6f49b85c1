//! The sender's status page, `/status.json` and `/metrics`: per receiver its position and
//! lag (the page's table and chart), the store, and the sendfile shippers.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use focuser_daemon::status::{Card, Chart, Figure, Row, State, StatusSource, Table};

use crate::sender::lag::{lag, Lag};
use crate::sender::resend::Resends;
use crate::sender::SenderState;
use crate::sendfile::FileShipper;

/// A sender whose oldest unacknowledged item is older than this is shown in amber.
const LAG_WARN_SECONDS: f64 = 60.0;

/// What retention deleted since start.
#[derive(Default)]
pub struct RetentionTotals {
    /// Retention checks run.
    pub checks: u64,
    pub deleted: u64,
    pub overflowed: u64,
    pub lost_items: u64,
    /// Checks that deleted nothing because the owner's floor file could not be read.
    pub floor_errors: u64,
}

/// The sender daemon's figures: the store, each sender, each sendfile shipper.
pub struct SenderFigures {
    pub store: PathBuf,
    pub senders: Vec<Arc<SenderState>>,
    pub shippers: Vec<Arc<FileShipper>>,
    pub retention: std::sync::Mutex<RetentionTotals>,
    pub resends: Arc<Resends>,
}

impl StatusSource for SenderFigures {
    fn figures(&self) -> Vec<Figure> {
        let now = focuser_daemon::clock::unix_millis();
        let mut f = vec![
            Figure::gauge(
                "reader_store_bytes",
                "bytes of the segment store",
                focuser_formats::segment::store_bytes(&self.store).unwrap_or(0) as f64,
            ),
            Figure::gauge(
                "reader_store_segments",
                "segments in the store",
                focuser_formats::segment::list_segments(&self.store)
                    .map(|v| v.len())
                    .unwrap_or(0) as f64,
            ),
        ];
        if let Ok(t) = self.retention.lock() {
            f.push(Figure::counter(
                "reader_retention_checks_total",
                "retention checks run (every Store.CheckInterval s)",
                t.checks as f64,
            ));
            f.push(Figure::counter(
                "reader_segments_deleted_total",
                "segments deleted by retention",
                t.deleted as f64,
            ));
            f.push(Figure::counter(
                "reader_segments_overflowed_total",
                "segments deleted past Store.MaxBytes while a sender needed them",
                t.overflowed as f64,
            ));
            f.push(Figure::counter(
                "reader_retention_floor_errors_total",
                "retention checks that kept everything: Store.FloorFile unreadable, missing or a symlink",
                t.floor_errors as f64,
            ));
        }
        for s in &self.senders {
            f.extend(self.sender_figures(s, now));
        }
        f.extend(resend_figures(&self.resends));
        for sh in &self.shippers {
            f.extend(shipper_figures(sh));
        }
        f
    }

    fn cards(&self) -> Vec<Card> {
        let now = focuser_daemon::clock::unix_millis();
        let lags: Vec<Lag> = self.senders.iter().map(|s| self.lag_of(s)).collect();
        let connected = self
            .senders
            .iter()
            .filter(|s| s.connected.load(Ordering::Relaxed))
            .count();
        let lag_items: u64 = lags.iter().map(|l| l.items).sum();
        let oldest = lags.iter().map(|l| l.seconds(now)).fold(0.0, f64::max);
        let sum = |f: fn(&SenderState) -> u64| -> f64 {
            self.senders.iter().map(|s| f(s)).sum::<u64>() as f64
        };
        let lost = sum(|s| s.lost_items.load(Ordering::Relaxed));
        let mismatched = self.senders.iter().filter(|s| s.in_mismatch()).count();
        let mut cards = vec![
            Card::text(
                "receivers connected",
                &format!("{connected} of {}", self.senders.len()),
            )
            .error_if(connected < self.senders.len())
            .help("a receiver that is down is retried with backoff; the others go on"),
            Card::number("lag", lag_items as f64)
                .unit("items")
                .help("items of the store not yet acknowledged, all receivers"),
            Card::number("oldest unacknowledged", (oldest * 10.0).round() / 10.0)
                .unit("s")
                .warn_if(oldest > LAG_WARN_SECONDS),
            Card::number(
                "items acknowledged",
                sum(|s| s.acked_items.load(Ordering::Relaxed)),
            )
            .unit("items")
            .help("since start"),
            Card::number("lost items", lost)
                .unit("items")
                .error_if(lost > 0.0)
                .help("deleted past Store.MaxBytes before they were sent"),
            Card::number("stream mismatches", mismatched as f64)
                .unit("receivers")
                .error_if(mismatched > 0)
                .help("receivers whose position cannot be this store's: nothing is sent to them; see the log and docs/operations.md"),
            Card::number(
                "store",
                (focuser_formats::segment::store_bytes(&self.store).unwrap_or(0) as f64 / 1e5)
                    .round()
                    / 10.0,
            )
            .unit("MB"),
        ];
        if !self.shippers.is_empty() {
            let shipped: u64 = self
                .shippers
                .iter()
                .map(|s| s.shipped.load(Ordering::Relaxed))
                .sum();
            let failures: u64 = self
                .shippers
                .iter()
                .map(|s| s.failures.load(Ordering::Relaxed))
                .sum();
            cards.push(
                Card::number("files shipped", shipped as f64)
                    .unit("files")
                    .warn_if(failures > 0)
                    .help("sendfile: whole files to a receiver's inbox"),
            );
        }
        cards
    }

    fn tables(&self) -> Vec<Table> {
        let now = focuser_daemon::clock::unix_millis();
        let mut receivers = Table::new(
            "receivers",
            "Receivers",
            &[
                "group",
                "receiver",
                "partition",
                "connected",
                "position",
                "lag items",
                "lag s",
                "acknowledged",
                "failures",
                "lost",
                "last error",
            ],
        )
        .empty("no receiver group configured");
        for s in &self.senders {
            receivers.push(self.receiver_row(s, now));
        }
        let mut tables = vec![receivers];
        if !self.shippers.is_empty() {
            tables.push(self.sendfile_table());
        }
        tables
    }

    fn charts(&self) -> Vec<Chart> {
        vec![
            Chart::of("reader_sender_lag_items", "Lag per receiver").unit("items"),
            Chart::of(
                "reader_sender_acked_items_total",
                "Items acknowledged per receiver",
            )
            .unit("items"),
            Chart::of("reader_sender_sent_bytes_total", "Bytes sent per receiver").unit("bytes"),
        ]
    }
}

/// One sendfile shipper's figures, labelled with its inbox and receiver.
/// `reader resend`: requests taken up, finished and refused, and what the running ones sent.
fn resend_figures(r: &Resends) -> Vec<Figure> {
    let running = r.running();
    let sent: u64 = running
        .iter()
        .map(|s| s.acked_items.load(Ordering::Relaxed))
        .sum();
    vec![
        Figure::counter(
            "reader_resends_started_total",
            "resends to a receiver taken up (reader resend)",
            r.started.load(Ordering::Relaxed) as f64,
        ),
        Figure::counter(
            "reader_resends_done_total",
            "resends that sent a receiver the whole live set",
            r.done.load(Ordering::Relaxed) as f64,
        ),
        Figure::counter(
            "reader_resend_bad_requests_total",
            "resend request files refused (moved aside as .req.bad)",
            r.bad_requests.load(Ordering::Relaxed) as f64,
        ),
        Figure::counter(
            "reader_resend_bad_snapshots_total",
            "owner's snapshots refused (not whole; moved aside as .bad, their requests too)",
            r.bad_snapshots.load(Ordering::Relaxed) as f64,
        ),
        Figure::gauge(
            "reader_resends_running",
            "resends running",
            running.len() as f64,
        ),
        Figure::gauge(
            "reader_resend_items",
            "items the running resends had acknowledged, since they started or the daemon did",
            sent as f64,
        ),
    ]
}

fn shipper_figures(sh: &FileShipper) -> Vec<Figure> {
    let label = |fig: Figure| {
        fig.with_label("inbox", &sh.cfg.inbox)
            .with_label("receiver", &sh.cfg.address)
    };
    vec![
        label(Figure::counter(
            "reader_sendfile_files_total",
            "files shipped",
            sh.shipped.load(Ordering::Relaxed) as f64,
        )),
        label(Figure::counter(
            "reader_sendfile_failures_total",
            "sendfile attempts failed",
            sh.failures.load(Ordering::Relaxed) as f64,
        )),
        label(Figure::gauge(
            "reader_sendfile_pending",
            "files waiting to be shipped",
            sh.ready().map(|r| r.len()).unwrap_or(0) as f64,
        )),
    ]
}

impl SenderFigures {
    /// One sender's figures, labelled with its group and receiver.
    fn sender_figures(&self, s: &SenderState, now: u64) -> Vec<Figure> {
        let pos = s.saved();
        let l = lag(&self.store, pos, s.spec.partition).unwrap_or_default();
        let label = |fig: Figure| {
            fig.with_label("group", &s.spec.group)
                .with_label("receiver", &s.spec.address)
        };
        let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
        vec![
            label(Figure::gauge(
                "reader_sender_connected",
                "1 while connected",
                s.connected.load(Ordering::Relaxed) as u8 as f64,
            )),
            label(Figure::gauge(
                "reader_sender_position_file",
                "segment of the saved position",
                pos.file_id as f64,
            )),
            label(Figure::gauge(
                "reader_sender_position_item",
                "item of the saved position",
                pos.item_idx as f64,
            )),
            label(Figure::gauge(
                "reader_sender_lag_items",
                "items of its partition not yet acknowledged",
                l.items as f64,
            )),
            label(Figure::gauge(
                "reader_sender_lag_seconds",
                "age of the oldest item not yet acknowledged",
                l.seconds(now),
            )),
            label(Figure::counter(
                "reader_sender_acked_items_total",
                "items acknowledged",
                n(&s.acked_items),
            )),
            label(Figure::counter(
                "reader_sender_sent_bytes_total",
                "bytes sent",
                n(&s.sent_bytes),
            )),
            label(Figure::counter(
                "reader_sender_failures_total",
                "connections failed or refused",
                n(&s.failures),
            )),
            label(Figure::counter(
                "reader_sender_lost_items_total",
                "items deleted past Store.MaxBytes before they were sent",
                n(&s.lost_items),
            )),
            label(Figure::counter(
                "reader_sender_corrupt_items_total",
                "damaged items skipped",
                n(&s.corrupt_items),
            )),
            label(Figure::gauge(
                "reader_sender_stream_mismatch",
                "1 while the receiver's position (or the saved one) cannot be this store's",
                s.in_mismatch() as u8 as f64,
            )),
            label(Figure::counter(
                "reader_sender_stream_mismatches_total",
                "connections given up on a stream identity mismatch",
                n(&s.mismatches),
            )),
        ]
    }

    /// A sender's row of the receivers table.
    fn receiver_row(&self, s: &SenderState, now: u64) -> Row {
        let l = self.lag_of(s);
        let pos = s.saved();
        let connected = s.connected.load(Ordering::Relaxed);
        let seconds = (l.seconds(now) * 10.0).round() / 10.0;
        let lost = s.lost_items.load(Ordering::Relaxed);
        let state = if !connected || lost > 0 || s.in_mismatch() {
            State::Error
        } else if seconds > LAG_WARN_SECONDS {
            State::Warn
        } else {
            State::Ok
        };
        // A mismatch is what matters while it lasts, whatever failed since.
        let last_error = s
            .mismatch
            .lock()
            .ok()
            .and_then(|m| m.clone())
            .or_else(|| s.last_error.lock().ok().and_then(|e| e.clone()))
            .unwrap_or_default();
        Row::new(vec![
            s.spec.group.as_str().into(),
            s.spec.address.as_str().into(),
            format!("{} of {}", s.spec.partition.index, s.spec.partition.count).into(),
            if connected { "yes" } else { "no" }.into(),
            format!("{}:{}", pos.file_id, pos.item_idx).into(),
            l.items.into(),
            seconds.into(),
            s.acked_items.load(Ordering::Relaxed).into(),
            s.failures.load(Ordering::Relaxed).into(),
            lost.into(),
            last_error.into(),
        ])
        .state(state)
    }

    /// The sendfile shippers' table.
    fn sendfile_table(&self) -> Table {
        let mut files = Table::new(
            "sendfile",
            "Files shipped (sendfile)",
            &[
                "inbox",
                "receiver",
                "directory",
                "shipped",
                "waiting",
                "failures",
                "last file",
            ],
        );
        for sh in &self.shippers {
            let waiting = sh.ready().map(|r| r.len()).unwrap_or(0);
            let last = sh
                .last
                .lock()
                .ok()
                .and_then(|l| l.clone())
                .unwrap_or_default();
            let failures = sh.failures.load(Ordering::Relaxed);
            files.push(
                Row::new(vec![
                    sh.cfg.inbox.as_str().into(),
                    sh.cfg.address.as_str().into(),
                    sh.dir.display().to_string().into(),
                    sh.shipped.load(Ordering::Relaxed).into(),
                    waiting.into(),
                    failures.into(),
                    last.into(),
                ])
                .state(if failures > 0 && waiting > 0 {
                    State::Warn
                } else {
                    State::Ok
                }),
            );
        }
        files
    }

    fn lag_of(&self, s: &SenderState) -> Lag {
        lag(&self.store, s.saved(), s.spec.partition).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use focuser_formats::segment::{Partition, Status};

    use crate::sender::SenderSpec;

    fn sender(dir: &std::path::Path, index: u32, connected: bool) -> Arc<SenderState> {
        let spec = SenderSpec {
            group: "Index.0".into(),
            address: format!("10.0.0.{index}:7301"),
            partition: Partition { count: 2, index },
            statuses: vec![Status::Update, Status::Delete],
            stream: "node1.Index.0".into(),
            position_file: dir.join(format!("pos{index}")),
            lost_file: dir.join(format!("lost{index}")),
        };
        let s = Arc::new(SenderState::new(spec));
        s.connected.store(connected, Ordering::Relaxed);
        s
    }

    #[test]
    fn a_receiver_that_is_down_is_red_on_the_card_and_in_its_row() {
        let dir = tempfile::tempdir().unwrap();
        let f = SenderFigures {
            store: dir.path().to_path_buf(),
            senders: vec![sender(dir.path(), 0, true), sender(dir.path(), 1, false)],
            shippers: Vec::new(),
            retention: Default::default(),
            resends: Default::default(),
        };
        let cards = f.cards();
        let connected = cards
            .iter()
            .find(|c| c.label == "receivers connected")
            .unwrap();
        assert_eq!(
            (connected.value.display(), connected.state),
            ("1 of 2".into(), State::Error)
        );
        let tables = f.tables();
        assert_eq!(tables.len(), 1, "no sendfile table without shippers");
        let rows = &tables[0].rows;
        let states: Vec<(String, State)> = rows
            .iter()
            .map(|r| (r.cells[3].display(), r.state))
            .collect();
        assert_eq!(
            states,
            [
                ("yes".to_string(), State::Ok),
                ("no".to_string(), State::Error)
            ]
        );
        assert_eq!(rows[1].cells[2].display(), "1 of 2");
    }
}
