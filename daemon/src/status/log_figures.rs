//! The log's card and figure on the status page: warnings and errors logged since start.

use std::sync::Arc;

use super::{Card, Figure, State, StatusSource};
use crate::logging::RecentErrors;

/// Warnings and errors logged since start, for the status page.
pub(crate) struct LogFigures(pub(crate) Arc<RecentErrors>);

/// A warning or error younger than this colours the log card.
const RECENT_PROBLEM: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

impl StatusSource for LogFigures {
    fn figures(&self) -> Vec<Figure> {
        vec![Figure::counter(
            "log_warnings_total",
            "warnings and errors logged since start",
            self.0.total() as f64,
        )]
    }

    fn cards(&self) -> Vec<Card> {
        let recent = self.0.snapshot();
        let since = chrono::Utc::now() - RECENT_PROBLEM;
        let level = recent
            .iter()
            .filter(|e| e.at >= since)
            .map(|e| {
                if e.level == "ERROR" {
                    State::Error
                } else {
                    State::Warn
                }
            })
            .max()
            .unwrap_or(State::Ok);
        vec![Card::number("warnings and errors", self.0.total() as f64)
            .help("logged since start; coloured for 10 minutes after one")
            .state(level)]
    }
}
