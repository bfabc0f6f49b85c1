//! The receiver's status page, `/status.json` and `/metrics`: what it stored, what it
//! refused, and each sender stream's last item.

use std::sync::atomic::{AtomicU64, Ordering};

use focuser_daemon::status::{Card, Chart, Figure, Row, State, StatusSource, Table};

use super::admit::Refusal;
use super::RecvShared;

impl StatusSource for RecvShared {
    fn figures(&self) -> Vec<Figure> {
        let c = &self.counts;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
        let mut f = vec![
            Figure::gauge(
                "reader_recv_connections",
                "senders connected now",
                c.connections.load(Ordering::Relaxed) as f64,
            ),
            Figure::counter(
                "reader_recv_batches_total",
                "batches stored and acknowledged",
                n(&c.batches),
            ),
            Figure::counter("reader_recv_items_total", "items stored", n(&c.stored)),
            Figure::counter(
                "reader_recv_duplicates_total",
                "resent items acknowledged and not stored again",
                n(&c.duplicates),
            ),
            Figure::counter("reader_recv_bytes_total", "item bytes stored", n(&c.bytes)),
            Figure::counter(
                "reader_recv_files_total",
                "files taken into the inbox",
                n(&c.files),
            ),
            Figure::counter(
                "reader_recv_file_bytes_total",
                "bytes of files taken in",
                n(&c.file_bytes),
            ),
        ];
        for r in Refusal::ALL {
            f.push(
                Figure::counter(
                    "reader_recv_refused_total",
                    "connections refused or closed, by reason",
                    c.refused.get(r) as f64,
                )
                .with_label("reason", r.label()),
            );
        }
        if let Ok(store) = self.store.lock() {
            for (name, last) in store.streams() {
                f.push(
                    Figure::gauge(
                        "reader_recv_stream_file",
                        "segment of the last item of each stream",
                        last.file_id as f64,
                    )
                    .with_label("stream", &name),
                );
                f.push(
                    Figure::gauge(
                        "reader_recv_stream_item",
                        "index of the last item of each stream",
                        last.item_idx as f64,
                    )
                    .with_label("stream", &name),
                );
            }
        }
        f
    }

    fn cards(&self) -> Vec<Card> {
        let c = &self.counts;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
        let refused = c.refused.total() as f64;
        let mut cards = vec![
            Card::number(
                "senders connected",
                c.connections.load(Ordering::Relaxed) as f64,
            )
            .unit("connections"),
            Card::number("items stored", n(&c.stored))
                .unit("items")
                .help("since start"),
            Card::number("duplicates dropped", n(&c.duplicates))
                .unit("items")
                .help("resent items acknowledged and not stored again"),
            Card::number("files received", n(&c.files))
                .unit("files")
                .help("sendfile: into Recv.InboxDir/<inbox>/"),
            Card::number("refused", refused)
                .unit("connections")
                .warn_if(refused > 0.0)
                .help("not in allowdb, too many, handshake too slow, wrong secret, bad frames, names or files: see the log and reader_recv_refused_total"),
        ];
        if let Ok(store) = self.store.lock() {
            let bytes = focuser_formats::segment::store_bytes(store.dir()).unwrap_or(0);
            cards.push(Card::number("store", (bytes as f64 / 1e5).round() / 10.0).unit("MB"));
        }
        cards
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new("streams", "Sender streams", &["stream", "last item stored"])
            .empty("no sender has sent anything yet");
        if let Ok(store) = self.store.lock() {
            for (name, last) in store.streams() {
                t.push(
                    Row::new(vec![
                        name.into(),
                        format!("{}:{}", last.file_id, last.item_idx).into(),
                    ])
                    .state(State::Ok),
                );
            }
        }
        vec![t]
    }

    fn charts(&self) -> Vec<Chart> {
        vec![
            Chart::of("reader_recv_items_total", "Items stored").unit("items"),
            Chart::of("reader_recv_bytes_total", "Bytes stored").unit("bytes"),
            Chart::of("reader_recv_connections", "Senders connected").unit("connections"),
        ]
    }
}
