//! Small line charts as inline SVG, drawn on the server: no script, no external asset.
//!
//! The x axis runs from the oldest point to the newest (labelled with how long ago the oldest
//! was, and `now`); the y axis from the smaller of 0 and the lowest value to the highest
//! value, both labelled. Values that are not finite are left out.

use std::fmt::Write;

use super::html::escape;
use super::page::format_number;

/// Line colours, one per series in turn.
pub const PALETTE: [&str; 8] = [
    "#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563",
];

const LEFT: f64 = 58.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 8.0;
const BOTTOM: f64 = 20.0;

/// One line to draw: `(unix seconds, value)` points, oldest first.
pub struct Line<'a> {
    pub name: &'a str,
    pub points: &'a [(f64, f64)],
}

/// The y axis: its lowest and highest value.
fn y_range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let mut range: Option<(f64, f64)> = None;
    for v in values {
        range = Some(match range {
            None => (v, v),
            Some((lo, hi)) => (lo.min(v), hi.max(v)),
        });
    }
    range.map(|(lo, hi)| (lo.min(0.0), hi))
}

/// Where `v` falls between `lo` and `hi`, from 0 to 1, without overflowing on huge ranges.
fn fraction(v: f64, lo: f64, hi: f64) -> f64 {
    let span = hi - lo;
    let f = if span.is_finite() {
        (v - lo) / span
    } else {
        (v / 2.0 - lo / 2.0) / (hi / 2.0 - lo / 2.0)
    };
    if f.is_finite() {
        f.clamp(0.0, 1.0)
    } else {
        0.5
    }
}

/// `-45 s`, `-12 min`, `-1 h`: how far back the oldest point is.
pub fn span_label(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s < 120 {
        format!("-{s} s")
    } else if s < 7200 {
        format!("-{} min", (s + 30) / 60)
    } else {
        format!("-{} h", (s + 1800) / 3600)
    }
}

/// A `width` × `height` chart of `lines`, with `title` as its accessible name.
pub fn line_chart(title: &str, lines: &[Line], width: u32, height: u32) -> String {
    let (w, h) = (f64::from(width), f64::from(height));
    let (pw, ph) = ((w - LEFT - RIGHT).max(1.0), (h - TOP - BOTTOM).max(1.0));
    let finite: Vec<Vec<(f64, f64)>> = lines
        .iter()
        .map(|l| {
            l.points
                .iter()
                .copied()
                .filter(|(t, v)| t.is_finite() && v.is_finite())
                .collect()
        })
        .collect();
    let mut svg = String::with_capacity(1024);
    let _ = write!(
        svg,
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{t}\"><title>{t}</title>\
         <rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"#fafbfc\" stroke=\"#d8dde3\"/>",
        t = escape(title),
    );
    let times = finite.iter().flatten().map(|p| p.0);
    let (t0, t1) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
        (a.min(t), b.max(t))
    });
    let Some((lo, hi)) = y_range(finite.iter().flatten().map(|p| p.1)) else {
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"nodata\">no samples yet</text></svg>",
            LEFT + pw / 2.0,
            TOP + ph / 2.0 + 4.0
        );
        return svg;
    };
    // A flat line at zero still needs a y axis.
    let hi = if hi == lo { lo + 1.0 } else { hi };
    let x = |t: f64| {
        if t1 > t0 {
            LEFT + fraction(t, t0, t1) * pw
        } else {
            LEFT + pw
        }
    };
    let y = |v: f64| TOP + (1.0 - fraction(v, lo, hi)) * ph;
    let mid = TOP + ph / 2.0;
    let _ = write!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{mid}\" x2=\"{}\" y2=\"{mid}\" stroke=\"#eceff3\"/>\
         <text class=\"ymax\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
         <text class=\"ymin\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
         <text class=\"tspan\" x=\"{LEFT}\" y=\"{}\">{}</text>\
         <text class=\"tnow\" x=\"{}\" y=\"{}\" text-anchor=\"end\">now</text>",
        LEFT + pw,
        LEFT - 5.0,
        TOP + 10.0,
        format_number(hi),
        LEFT - 5.0,
        TOP + ph,
        format_number(lo),
        h - 5.0,
        span_label(t1 - t0),
        LEFT + pw,
        h - 5.0,
    );
    for (i, points) in finite.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let Some(&(lt, lv)) = points.last() else {
            continue;
        };
        if points.len() > 1 {
            let coords: Vec<String> = points
                .iter()
                .map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v)))
                .collect();
            let _ = write!(
                svg,
                "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" \
                 stroke-linejoin=\"round\" points=\"{}\"/>",
                coords.join(" ")
            );
        }
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{colour}\"><title>{}: {}</title></circle>",
            x(lt),
            y(lv),
            escape(lines[i].name),
            format_number(lv)
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: &[(f64, f64)]) -> String {
        line_chart("c", &[Line { name: "s", points }], 300, 120)
    }

    /// The polyline's points as numbers.
    fn coords(svg: &str) -> Vec<(f64, f64)> {
        let Some(start) = svg.find("points=\"") else {
            return Vec::new();
        };
        let rest = &svg[start + 8..];
        rest[..rest.find('"').unwrap()]
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    fn text_of(svg: &str, class: &str) -> String {
        let at = svg.find(&format!("class=\"{class}\"")).unwrap();
        let rest = &svg[at..];
        let open = rest.find('>').unwrap() + 1;
        rest[open..open + rest[open..].find('<').unwrap()].to_string()
    }

    #[test]
    fn an_empty_series_says_so() {
        let svg = chart(&[]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("no samples yet") && !svg.contains("polyline"));
        let svg = line_chart("none", &[], 300, 120);
        assert!(svg.contains("no samples yet"));
    }

    #[test]
    fn one_point_is_a_dot_at_the_right_edge() {
        let svg = chart(&[(100.0, 5.0)]);
        assert!(!svg.contains("polyline"), "{svg}");
        assert!(svg.contains("<circle cx=\"290.0\" cy=\"8.0\""), "{svg}");
        assert_eq!(text_of(&svg, "ymax"), "5");
        assert_eq!(text_of(&svg, "ymin"), "0");
        assert_eq!(text_of(&svg, "tspan"), "-0 s");
    }

    #[test]
    fn points_span_the_plot_from_the_oldest_to_now() {
        let svg = chart(&[(0.0, 0.0), (1800.0, 10.0), (3600.0, 5.0)]);
        let c = coords(&svg);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0], (58.0, 100.0));
        assert_eq!(c[1], (174.0, 8.0));
        assert_eq!(c[2], (290.0, 54.0));
        assert_eq!(text_of(&svg, "ymax"), "10");
        assert_eq!(text_of(&svg, "tspan"), "-60 min");
        assert!(svg.contains(">now<"));
    }

    #[test]
    fn a_flat_series_is_a_flat_line_inside_the_plot() {
        let svg = chart(&[(0.0, 7.0), (10.0, 7.0), (20.0, 7.0)]);
        let c = coords(&svg);
        assert_eq!(c.len(), 3);
        assert!(c.iter().all(|p| p.1 == 8.0), "at the top: {c:?}");
        let svg = chart(&[(0.0, 0.0), (10.0, 0.0)]);
        assert!(
            coords(&svg).iter().all(|p| p.1 == 100.0),
            "zero at the bottom"
        );
        assert_eq!(text_of(&svg, "ymax"), "1");
    }

    #[test]
    fn negative_values_move_the_bottom_below_zero() {
        let svg = chart(&[(0.0, -4.0), (10.0, 2.0)]);
        assert_eq!(text_of(&svg, "ymin"), "-4");
        assert_eq!(coords(&svg)[0].1, 100.0);
    }

    #[test]
    fn huge_and_non_finite_values_stay_inside_the_plot() {
        let svg = chart(&[
            (0.0, -f64::MAX),
            (10.0, f64::MAX),
            (20.0, f64::NAN),
            (30.0, f64::INFINITY),
            (40.0, 1e300),
        ]);
        let c = coords(&svg);
        assert_eq!(c.len(), 3, "NaN and infinity are left out: {svg}");
        for (x, y) in &c {
            assert!(
                (58.0..=290.0).contains(x) && (8.0..=100.0).contains(y),
                "{c:?}"
            );
        }
        assert_eq!(c[0].1, 100.0);
        assert_eq!(c[1].1, 8.0);
        assert_eq!(text_of(&svg, "ymax"), "1.798e308");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn several_lines_get_their_own_colour_and_names_are_escaped() {
        let a = [(0.0, 1.0), (10.0, 2.0)];
        let b = [(0.0, 3.0), (10.0, 1.0)];
        let svg = line_chart(
            "<lag>",
            &[
                Line {
                    name: "receiver=<a>",
                    points: &a,
                },
                Line {
                    name: "b",
                    points: &b,
                },
            ],
            300,
            120,
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains(PALETTE[0]) && svg.contains(PALETTE[1]));
        assert!(svg.contains("<title>&lt;lag&gt;</title>"));
        assert!(svg.contains("receiver=&lt;a&gt;: 2") && !svg.contains("<a>"));
    }

    #[test]
    fn span_labels_read_naturally() {
        assert_eq!(span_label(45.0), "-45 s");
        assert_eq!(span_label(720.0), "-12 min");
        assert_eq!(span_label(3600.0), "-60 min");
        assert_eq!(span_label(10_800.0), "-3 h");
    }
}
