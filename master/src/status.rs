//! The master's status page, `/status.json` and `/metrics`: running totals, the last cycle's
//! figures, the last cycles as a table, and charts of lines read and URLs forwarded.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use focuser_daemon::status::{Card, Chart, Figure, Row, State, StatusSource, Table};

use crate::cycle::CycleStats;

/// Cycles kept for the page's table.
const KEPT_CYCLES: usize = 20;

/// The last cycle and running totals, for `/`, `/status.json` and `/metrics`.
#[derive(Default)]
pub struct CycleFigures {
    inner: Mutex<Totals>,
}

#[derive(Default)]
struct Totals {
    last: Option<CycleStats>,
    cycles: u64,
    failures: u64,
    /// The last attempt failed (cleared by the next cycle that commits).
    failing: bool,
    lines: u64,
    rejected: BTreeMap<&'static str, u64>,
    forwarded: [u64; 3],
    /// Inputs set aside to bad_dir.
    set_aside: u64,
    /// Newest first: committed cycles and failed attempts.
    recent: VecDeque<Recent>,
}

enum Recent {
    Done { at: String, stats: CycleStats },
    Failed { at: String, why: String },
}

fn utc_now() -> String {
    focuser_daemon::clock::db_now()
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

impl Totals {
    fn keep(&mut self, r: Recent) {
        if self.recent.len() == KEPT_CYCLES {
            self.recent.pop_back();
        }
        self.recent.push_front(r);
    }
}

impl CycleFigures {
    pub fn record(&self, s: &CycleStats) {
        if let Ok(mut t) = self.inner.lock() {
            t.cycles += 1;
            t.failing = false;
            t.lines += s.ingest.lines;
            for (k, v) in &s.ingest.rejected {
                *t.rejected.entry(k).or_insert(0) += v;
            }
            t.forwarded[0] += s.join.forwarded_new;
            t.forwarded[1] += s.join.forwarded_window;
            t.forwarded[2] += s.join.forwarded_updatetag;
            t.last = Some(s.clone());
            t.keep(Recent::Done {
                at: utc_now(),
                stats: s.clone(),
            });
        }
    }

    /// Counts `n` inputs set aside.
    pub fn set_aside(&self, n: u64) {
        if let Ok(mut t) = self.inner.lock() {
            t.set_aside += n;
        }
    }

    pub fn failed(&self, why: &str) {
        if let Ok(mut t) = self.inner.lock() {
            t.failures += 1;
            t.failing = true;
            t.keep(Recent::Failed {
                at: utc_now(),
                why: why.to_string(),
            });
        }
    }
}

fn per_node(s: &CycleStats) -> String {
    if s.per_node.is_empty() {
        return "-".into();
    }
    let parts: Vec<String> = s.per_node.iter().map(|(n, c)| format!("{n}:{c}")).collect();
    parts.join(" ")
}

/// The last cycle's figures.
fn last_cycle_figures(s: &CycleStats) -> Vec<Figure> {
    let g = |name: &str, help: &str, v: u64| Figure::gauge(name, help, v as f64);
    let mut f = vec![
        g("master_last_cycle", "number of the last cycle", s.seq),
        g(
            "master_last_cycle_files",
            "reflog files in the last cycle",
            s.ingest.files,
        ),
        g(
            "master_last_cycle_lines",
            "lines read in the last cycle",
            s.ingest.lines,
        ),
        g(
            "master_last_cycle_rejected",
            "lines rejected in the last cycle",
            s.ingest.rejected_total(),
        ),
        g(
            "master_last_cycle_unique_urls",
            "distinct URLs in the last cycle",
            s.join.unique_urls,
        ),
        g(
            "master_last_cycle_forwarded",
            "URLs forwarded in the last cycle",
            s.forwarded(),
        ),
        g(
            "master_last_cycle_kept",
            "URLs held back (within the window) in the last cycle",
            s.join.kept,
        ),
        g(
            "master_last_cycle_expired",
            "URLs that left current_log in the last cycle",
            s.join.expired,
        ),
        g(
            "master_last_cycle_new_domains",
            "domains assigned to a node in the last cycle",
            s.new_domains,
        ),
        g(
            "master_current_log_entries",
            "URLs in current_log",
            s.current_log_entries,
        ),
    ];
    f.push(Figure::gauge(
        "master_last_cycle_seconds",
        "duration of the last cycle",
        s.seconds,
    ));
    for (node, n) in &s.per_node {
        f.push(
            Figure::gauge(
                "master_last_cycle_node_urls",
                "URLs queued per node in the last cycle",
                *n as f64,
            )
            .with_label("node", &node.to_string()),
        );
    }
    f
}

impl StatusSource for CycleFigures {
    fn figures(&self) -> Vec<Figure> {
        let Ok(t) = self.inner.lock() else {
            return Vec::new();
        };
        let mut f = vec![
            Figure::counter("master_cycles_total", "cycles committed", t.cycles as f64),
            Figure::counter(
                "master_cycle_failures_total",
                "cycles that failed and will be redone",
                t.failures as f64,
            ),
            Figure::counter("master_lines_total", "reflog lines read", t.lines as f64),
            Figure::counter(
                "master_inputs_set_aside_total",
                "inputs that could not be processed, moved to bad_dir",
                t.set_aside as f64,
            ),
        ];
        for (reason, n) in &t.rejected {
            f.push(
                Figure::counter(
                    "master_rejected_total",
                    "reflog lines rejected, by reason",
                    *n as f64,
                )
                .with_label("reason", reason),
            );
        }
        for (i, reason) in ["new", "window", "updatetag"].iter().enumerate() {
            f.push(
                Figure::counter(
                    "master_forwarded_total",
                    "URLs forwarded to nodes, by reason",
                    t.forwarded[i] as f64,
                )
                .with_label("reason", reason),
            );
        }
        if let Some(s) = &t.last {
            f.extend(last_cycle_figures(s));
        }
        f
    }

    fn cards(&self) -> Vec<Card> {
        let Ok(t) = self.inner.lock() else {
            return Vec::new();
        };
        let forwarded: u64 = t.forwarded.iter().sum();
        let rejected: u64 = t.rejected.values().sum();
        let mut cards = vec![
            Card::number("cycles", t.cycles as f64)
                .unit("cycles")
                .help("committed since start"),
            Card::number("failed cycles", t.failures as f64)
                .unit("cycles")
                .warn_if(t.failures > 0)
                .error_if(t.failing)
                .help("red while the last attempt failed: it is redone (see the log)"),
            Card::number("lines read", t.lines as f64).unit("lines"),
            Card::number("lines rejected", rejected as f64)
                .unit("lines")
                .help("in rejects_dir/<reflog>.rej, with the reason"),
            Card::number("URLs forwarded", forwarded as f64).unit("URLs"),
            Card::number("inputs set aside", t.set_aside as f64)
                .unit("files")
                .warn_if(t.set_aside > 0)
                .help("could not be processed: in bad_dir, each with <name>.why"),
        ];
        if let Some(s) = &t.last {
            cards.extend([
                Card::number("last cycle", s.seq as f64).help(&format!(
                    "{} lines, {} URLs forwarded",
                    s.ingest.lines,
                    s.forwarded()
                )),
                Card::number("last cycle took", s.seconds).unit("s"),
                Card::number("current_log", s.current_log_entries as f64)
                    .unit("URLs")
                    .help("URLs seen within Filter.Retention"),
            ]);
        }
        cards
    }

    fn tables(&self) -> Vec<Table> {
        let mut table = Table::new(
            "cycles",
            "Last cycles",
            &[
                "cycle",
                "finished (UTC)",
                "files",
                "lines",
                "rejected",
                "URLs",
                "forwarded",
                "kept",
                "expired",
                "new domains",
                "per node",
                "seconds",
            ],
        )
        .empty("no cycle yet");
        if let Ok(t) = self.inner.lock() {
            for r in &t.recent {
                table.push(match r {
                    Recent::Done { at, stats: s } => Row::new(vec![
                        s.seq.into(),
                        at.as_str().into(),
                        s.ingest.files.into(),
                        s.ingest.lines.into(),
                        s.ingest.rejected_total().into(),
                        s.join.unique_urls.into(),
                        s.forwarded().into(),
                        s.join.kept.into(),
                        s.join.expired.into(),
                        s.new_domains.into(),
                        per_node(s).into(),
                        s.seconds.into(),
                    ]),
                    Recent::Failed { at, why } => {
                        let mut cells = vec!["failed".into(), at.as_str().into()];
                        cells.push(why.as_str().into());
                        cells.resize(12, "".into());
                        Row::new(cells).state(State::Error)
                    }
                });
            }
        }
        vec![table]
    }

    fn charts(&self) -> Vec<Chart> {
        vec![
            Chart::of("master_lines_total", "Reflog lines read").unit("lines"),
            Chart::of("master_forwarded_total", "URLs forwarded, by reason").unit("URLs"),
            Chart::of("master_current_log_entries", "URLs in current_log").unit("URLs"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_the_last_cycles_newest_first_and_a_failure_in_red() {
        let f = CycleFigures::default();
        assert_eq!(f.tables()[0].rows.len(), 0);
        let mut s = CycleStats {
            seq: 1,
            ..Default::default()
        };
        s.per_node.insert(2, 7);
        f.record(&s);
        f.failed("no enabled yacobot node");
        let t = &f.tables()[0];
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].state, State::Error);
        assert_eq!(t.rows[1].cells[0].display(), "1");
        assert_eq!(t.rows[1].cells[10].display(), "2:7");
        let failed = f.cards().into_iter().find(|c| c.label == "failed cycles");
        assert_eq!(failed.map(|c| c.state), Some(State::Error));
        s.seq = 2;
        f.record(&s);
        let failed = f.cards().into_iter().find(|c| c.label == "failed cycles");
        assert_eq!(failed.map(|c| c.state), Some(State::Warn));
        for _ in 0..KEPT_CYCLES + 3 {
            f.record(&s);
        }
        assert_eq!(f.tables()[0].rows.len(), KEPT_CYCLES);
    }
}
