//! The last hour of the charted figures: the status thread samples them every
//! `status_sample` seconds into one bounded ring per line of a chart. Counters are kept as
//! they are and turned into rates per second when the page asks; gauges are shown as kept.
//!
//! Memory is bounded by configuration alone: at most [`MAX_CHARTS`] charts of at most
//! [`MAX_SERIES`] lines, each a ring of `HISTORY_SECONDS / status_sample + 2` samples of 16
//! bytes (at the default 10 s: 362 samples, 5.8 KB a line, 740 KB at the very most).

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::page::Chart;
use super::{Figure, Kind};

/// How far back the charts go.
pub const HISTORY_SECONDS: u64 = 3600;
/// Charts beyond this many are not sampled (the page says so).
pub const MAX_CHARTS: usize = 16;
/// Lines of one chart beyond this many are not sampled (the page says so).
pub const MAX_SERIES: usize = 8;

/// One sample: unix time in milliseconds and the figure's value.
pub type Sample = (i64, f64);

/// The newest samples of one figure, oldest dropped first.
#[derive(Debug, Clone)]
pub struct Ring {
    samples: VecDeque<Sample>,
    capacity: usize,
}

impl Ring {
    pub fn new(capacity: usize) -> Ring {
        let capacity = capacity.max(2);
        Ring {
            samples: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    /// Adds a sample; a sample not newer than the last (the clock went back) replaces the
    /// history, since rates across a clock step mean nothing.
    pub fn push(&mut self, t_ms: i64, value: f64) {
        if self.samples.back().is_some_and(|&(t, _)| t >= t_ms) {
            self.samples.clear();
        }
        if self.samples.len() == self.capacity {
            self.samples.pop_front();
        }
        self.samples.push_back((t_ms, value));
    }

    /// Drops samples older than `oldest_ms`.
    pub fn prune(&mut self, oldest_ms: i64) {
        while self.samples.front().is_some_and(|&(t, _)| t < oldest_ms) {
            self.samples.pop_front();
        }
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    pub fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        self.samples.iter().copied()
    }

    /// The points to draw: `(unix seconds, value)`. For a counter, the rate per second
    /// between each sample and the one before it; a counter that went down was reset (the
    /// daemon restarted it) and counts from zero.
    pub fn points(&self, kind: Kind) -> Vec<(f64, f64)> {
        let secs = |t: i64| t as f64 / 1000.0;
        match kind {
            Kind::Gauge => self.samples.iter().map(|&(t, v)| (secs(t), v)).collect(),
            Kind::Counter => self
                .samples
                .iter()
                .zip(self.samples.iter().skip(1))
                .map(|(&(t0, v0), &(t1, v1))| {
                    let dt = (t1 - t0) as f64 / 1000.0;
                    let grown = if v1 >= v0 { v1 - v0 } else { v1 };
                    (secs(t1), grown / dt)
                })
                .collect(),
        }
    }
}

/// One line of a chart, as `/status.json` holds it and the page draws it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesData {
    /// The figure's labels (what tells the lines apart).
    pub labels: Vec<(String, String)>,
    /// `[unix seconds, value]`, oldest first; per second for a counter.
    pub points: Vec<(f64, f64)>,
}

impl SeriesData {
    /// The line's name in a legend: its labels, or the figure's name without any.
    pub fn name(&self, figure: &str) -> String {
        if self.labels.is_empty() {
            figure.to_string()
        } else {
            self.labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

/// A chart as `/status.json` holds it and the page draws it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChartData {
    pub figure: String,
    pub title: String,
    /// The unit of the points: a counter's unit per second (`lines/s`).
    pub unit: String,
    /// The charted figure's kind; `None` until it has been sampled once.
    pub kind: Option<Kind>,
    /// Whether the points are rates per second of a counter.
    pub rate: bool,
    pub series: Vec<SeriesData>,
    /// Lines the chart selects but does not keep (over [`MAX_SERIES`]).
    pub omitted_series: usize,
}

#[derive(Debug)]
struct ChartHistory {
    kind: Option<Kind>,
    series: BTreeMap<Vec<(String, String)>, Ring>,
    omitted: usize,
}

/// The charted figures' samples, for the last [`HISTORY_SECONDS`].
#[derive(Debug)]
pub struct History {
    sample_seconds: u64,
    capacity: usize,
    charts: BTreeMap<(String, Vec<(String, String)>), ChartHistory>,
}

impl History {
    pub fn new(sample_seconds: u64) -> History {
        let sample_seconds = sample_seconds.max(1);
        History {
            sample_seconds,
            capacity: (HISTORY_SECONDS / sample_seconds) as usize + 2,
            charts: BTreeMap::new(),
        }
    }

    pub fn sample_seconds(&self) -> u64 {
        self.sample_seconds
    }

    /// Samples per line at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Records the figures the declared `charts` select, taken at `now_ms`. Charts no
    /// longer declared are forgotten; lines no longer reported age out.
    pub fn record(&mut self, now_ms: i64, charts: &[Chart], figures: &[Figure]) {
        self.record_lines(now_ms, charts, figures, true);
    }

    /// Records only the lines that have no sample yet (a source the daemon has just added:
    /// its counters' starting values, so that the work it does before the next beat shows
    /// as a rate); the lines already sampled keep their beat.
    pub fn record_new(&mut self, now_ms: i64, charts: &[Chart], figures: &[Figure]) {
        self.record_lines(now_ms, charts, figures, false);
    }

    fn record_lines(&mut self, now_ms: i64, charts: &[Chart], figures: &[Figure], all: bool) {
        let charts = distinct(charts);
        let keys: Vec<_> = charts.iter().map(|c| c.key()).collect();
        self.charts.retain(|k, _| keys.contains(k));
        let oldest = now_ms - (HISTORY_SECONDS * 1000) as i64;
        for chart in charts {
            let history = self
                .charts
                .entry(chart.key())
                .or_insert_with(|| ChartHistory {
                    kind: None,
                    series: BTreeMap::new(),
                    omitted: 0,
                });
            let mut omitted = 0;
            for f in figures.iter().filter(|f| chart.selects(&f.name, &f.labels)) {
                history.kind.get_or_insert(f.kind);
                let full = history.series.len() >= MAX_SERIES;
                match history.series.get_mut(&f.labels) {
                    Some(ring) if all => ring.push(now_ms, f.value),
                    Some(_) => {}
                    None if full => omitted += 1,
                    None => {
                        let mut ring = Ring::new(self.capacity);
                        ring.push(now_ms, f.value);
                        history.series.insert(f.labels.clone(), ring);
                    }
                }
            }
            history.omitted = omitted;
            for ring in history.series.values_mut() {
                ring.prune(oldest);
            }
            history.series.retain(|_, r| !r.is_empty());
        }
    }

    /// The declared `charts` with what has been sampled of them.
    pub fn charts(&self, charts: &[Chart]) -> Vec<ChartData> {
        distinct(charts)
            .into_iter()
            .map(|chart| {
                let history = self.charts.get(&chart.key());
                let kind = history.and_then(|h| h.kind);
                let rate = kind == Some(Kind::Counter);
                let series = history
                    .map(|h| {
                        h.series
                            .iter()
                            .map(|(labels, ring)| SeriesData {
                                labels: labels.clone(),
                                points: ring.points(kind.unwrap_or(Kind::Gauge)),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let unit = match (rate, chart.unit.is_empty()) {
                    (true, true) => "per second".to_string(),
                    (true, false) => format!("{}/s", chart.unit),
                    (false, _) => chart.unit.clone(),
                };
                ChartData {
                    figure: chart.figure.clone(),
                    title: chart.title.clone(),
                    unit,
                    kind,
                    rate,
                    series,
                    omitted_series: history.map(|h| h.omitted).unwrap_or(0),
                }
            })
            .collect()
    }
}

/// The first declaration of each chart, at most [`MAX_CHARTS`] of them.
fn distinct(charts: &[Chart]) -> Vec<&Chart> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for c in charts {
        let key = c.key();
        if !seen.contains(&key) && out.len() < MAX_CHARTS {
            seen.push(key);
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_is_bounded_and_drops_the_oldest() {
        let mut r = Ring::new(3);
        for i in 0..5 {
            r.push(i * 1000, i as f64);
        }
        assert_eq!(r.len(), 3);
        let kept: Vec<_> = r.samples().collect();
        assert_eq!(kept, vec![(2000, 2.0), (3000, 3.0), (4000, 4.0)]);
    }

    #[test]
    fn a_ring_prunes_samples_older_than_the_window() {
        let mut r = Ring::new(10);
        for i in 0..5 {
            r.push(i * 1000, 1.0);
        }
        r.prune(2500);
        assert_eq!(r.samples().map(|s| s.0).collect::<Vec<_>>(), [3000, 4000]);
    }

    #[test]
    fn a_clock_that_goes_back_starts_the_ring_afresh() {
        let mut r = Ring::new(10);
        r.push(5000, 1.0);
        r.push(6000, 2.0);
        r.push(4000, 3.0);
        assert_eq!(r.samples().collect::<Vec<_>>(), [(4000, 3.0)]);
    }

    #[test]
    fn a_source_added_late_is_sampled_at_once_without_disturbing_the_others() {
        let mut h = History::new(10);
        let old = Chart::of("old_total", "Old");
        let new = Chart::of("new_total", "New");
        let f = |name: &str, v: f64| Figure::counter(name, "", v);
        h.record(0, std::slice::from_ref(&old), &[f("old_total", 1.0)]);
        // The daemon adds its source at 2 s (its counter still 0), works, the beat comes.
        let charts = [old.clone(), new.clone()];
        h.record_new(2_000, &charts, &[f("old_total", 2.0), f("new_total", 0.0)]);
        h.record(
            10_000,
            &charts,
            &[f("old_total", 11.0), f("new_total", 40.0)],
        );
        let data = h.charts(&charts);
        assert_eq!(
            data[0].series[0].points,
            [(10.0, 1.0)],
            "the old line keeps its beat"
        );
        assert_eq!(
            data[1].series[0].points,
            [(10.0, 5.0)],
            "40 in the 8 s since it was added"
        );
    }

    #[test]
    fn gauges_are_drawn_as_they_are() {
        let mut r = Ring::new(10);
        r.push(1000, 5.0);
        r.push(2000, -3.0);
        assert_eq!(r.points(Kind::Gauge), [(1.0, 5.0), (2.0, -3.0)]);
    }

    #[test]
    fn counters_become_rates_per_second() {
        let mut r = Ring::new(10);
        r.push(0, 100.0);
        r.push(10_000, 150.0); // 50 in 10 s
        r.push(20_000, 150.0); // nothing
        r.push(25_000, 175.0); // 25 in 5 s
        assert_eq!(
            r.points(Kind::Counter),
            [(10.0, 5.0), (20.0, 0.0), (25.0, 5.0)]
        );
    }

    #[test]
    fn a_counter_reset_counts_from_zero() {
        let mut r = Ring::new(10);
        r.push(0, 1000.0);
        r.push(10_000, 30.0); // restarted: 30 since
        r.push(20_000, 130.0);
        assert_eq!(r.points(Kind::Counter), [(10.0, 3.0), (20.0, 10.0)]);
    }

    #[test]
    fn a_counter_with_one_sample_has_no_rate_yet() {
        let mut r = Ring::new(10);
        r.push(0, 7.0);
        assert!(r.points(Kind::Counter).is_empty());
    }

    fn lag(receiver: &str, v: f64) -> Figure {
        Figure::gauge("lag", "lag", v).with_label("receiver", receiver)
    }

    #[test]
    fn history_keeps_an_hour_per_line_and_one_line_per_labelled_figure() {
        let mut h = History::new(10);
        assert_eq!(h.capacity(), 362);
        let charts = [Chart::of("lag", "Lag").unit("items")];
        let hours = 3 * HISTORY_SECONDS as i64;
        for i in 0..hours / 10 {
            let t = i * 10_000;
            h.record(t, &charts, &[lag("a", i as f64), lag("b", 1.0)]);
        }
        let data = h.charts(&charts);
        assert_eq!(data.len(), 1);
        let c = &data[0];
        assert_eq!(
            (c.kind, c.rate, c.unit.as_str()),
            (Some(Kind::Gauge), false, "items")
        );
        assert_eq!(c.series.len(), 2);
        assert_eq!(c.series[0].name("lag"), "receiver=a");
        // The window is one hour of 10 s samples, both ends included.
        assert_eq!(c.series[0].points.len(), 361);
        let last = (hours / 10 - 1) as f64;
        assert_eq!(c.series[0].points.last(), Some(&(last * 10.0, last)));
    }

    #[test]
    fn lines_beyond_the_limit_are_counted_not_kept() {
        let mut h = History::new(10);
        let charts = [Chart::of("lag", "Lag")];
        let figures: Vec<_> = (0..MAX_SERIES + 3)
            .map(|i| lag(&format!("r{i:02}"), 1.0))
            .collect();
        h.record(0, &charts, &figures);
        let c = &h.charts(&charts)[0];
        assert_eq!((c.series.len(), c.omitted_series), (MAX_SERIES, 3));
    }

    #[test]
    fn charts_beyond_the_limit_and_repeats_are_ignored() {
        let mut h = History::new(10);
        let mut charts: Vec<_> = (0..MAX_CHARTS + 4)
            .map(|i| Chart::of(&format!("f{i}"), "F"))
            .collect();
        charts.insert(1, Chart::of("f0", "again"));
        let figures: Vec<_> = (0..MAX_CHARTS + 4)
            .map(|i| Figure::gauge(&format!("f{i}"), "", 1.0))
            .collect();
        h.record(0, &charts, &figures);
        let data = h.charts(&charts);
        assert_eq!(data.len(), MAX_CHARTS);
        assert_eq!(data[0].title, "F");
        assert_eq!(h.charts.len(), MAX_CHARTS);
    }

    #[test]
    fn a_line_no_longer_reported_ages_out_and_an_undeclared_chart_is_forgotten() {
        let mut h = History::new(10);
        let charts = [Chart::of("lag", "Lag"), Chart::of("q", "Queue")];
        h.record(0, &charts, &[lag("a", 1.0), lag("b", 1.0)]);
        let later = (HISTORY_SECONDS as i64 + 10) * 1000;
        h.record(later, &charts, &[lag("a", 2.0)]);
        let data = h.charts(&charts);
        assert_eq!(data[0].series.len(), 1, "b has no sample in the last hour");
        assert_eq!(data[0].series[0].points, [(later as f64 / 1000.0, 2.0)]);
        assert!(data[1].series.is_empty() && data[1].kind.is_none());

        h.record(later + 10_000, &charts[1..], &[]);
        assert!(h.charts(&charts)[0].series.is_empty());
    }

    #[test]
    fn a_counter_chart_is_a_rate_with_a_per_second_unit() {
        let mut h = History::new(10);
        let charts = [
            Chart::of("lines", "Lines").unit("lines"),
            Chart::of("t", "T"),
        ];
        let f = |v| [Figure::counter("lines", "", v), Figure::counter("t", "", v)];
        h.record(0, &charts, &f(0.0));
        h.record(10_000, &charts, &f(100.0));
        let data = h.charts(&charts);
        assert_eq!((data[0].rate, data[0].unit.as_str()), (true, "lines/s"));
        assert_eq!(data[0].series[0].points, [(10.0, 10.0)]);
        assert_eq!(data[1].unit, "per second");
    }
}
