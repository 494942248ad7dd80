//! Small inline-SVG charts (lines, bars, horizontal spans): no scripts, no fonts fetched, no
//! network, so a report opens anywhere and can be mailed around.

use std::fmt::Write;

/// Colours of series 0, 1, 2, ... (colour-blind safe, Okabe-Ito).
const COLOURS: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];

const W: f64 = 640.0;
const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 44.0;
/// Most points drawn per series (more only make the file heavier).
const MAX_POINTS: usize = 600;

fn colour(i: usize) -> &'static str {
    COLOURS[i % COLOURS.len()]
}

/// Text safe inside SVG/HTML.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) struct Series {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
}

pub(crate) struct Axes<'a> {
    pub(crate) title: &'a str,
    pub(crate) x: &'a str,
    pub(crate) y: &'a str,
}

struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Frame {
    fn of<'a>(points: impl Iterator<Item = &'a (f64, f64)>) -> Frame {
        let mut f = Frame {
            x0: f64::INFINITY,
            x1: f64::NEG_INFINITY,
            y0: 0.0,
            y1: f64::NEG_INFINITY,
        };
        for &(x, y) in points.filter(|(x, y)| x.is_finite() && y.is_finite()) {
            f.x0 = f.x0.min(x);
            f.x1 = f.x1.max(x);
            f.y0 = f.y0.min(y);
            f.y1 = f.y1.max(y);
        }
        if !f.x0.is_finite() {
            (f.x0, f.x1, f.y1) = (0.0, 1.0, 1.0);
        }
        if f.x1 <= f.x0 {
            f.x1 = f.x0 + 1.0;
        }
        if f.y1 <= f.y0 {
            f.y1 = f.y0 + 1.0;
        }
        f
    }
    fn px(&self, x: f64) -> f64 {
        LEFT + (x - self.x0) / (self.x1 - self.x0) * (W - LEFT - RIGHT)
    }
    fn py(&self, y: f64) -> f64 {
        H - BOTTOM - (y - self.y0) / (self.y1 - self.y0) * (H - TOP - BOTTOM)
    }
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The frame, ticks, labels and legend of a chart.
fn open(out: &mut String, axes: &Axes, f: &Frame, names: &[&str]) {
    let _ = write!(
        out,
        r#"<svg viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" font-family="sans-serif" font-size="11"><title>{t}</title><text x="{LEFT}" y="16" font-size="13" font-weight="bold">{t}</text>"#,
        t = esc(axes.title)
    );
    let (bx, by) = (H - BOTTOM, W - RIGHT);
    let _ = write!(
        out,
        r##"<line x1="{LEFT}" y1="{bx}" x2="{by}" y2="{bx}" stroke="#444"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bx}" stroke="#444"/>"##
    );
    for k in 0..=4 {
        let fx = f.x0 + (f.x1 - f.x0) * f64::from(k) / 4.0;
        let fy = f.y0 + (f.y1 - f.y0) * f64::from(k) / 4.0;
        let (px, py) = (f.px(fx), f.py(fy));
        let _ = write!(
            out,
            r##"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><line x1="{LEFT}" y1="{py:.1}" x2="{by}" y2="{py:.1}" stroke="#eee"/>"##,
            bx + 14.0,
            num(fx),
            LEFT - 4.0,
            py + 4.0,
            num(fy)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="12" y="{:.1}" transform="rotate(-90 12 {:.1})" text-anchor="middle">{}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 8.0,
        esc(axes.x),
        (TOP + H - BOTTOM) / 2.0,
        (TOP + H - BOTTOM) / 2.0,
        esc(axes.y)
    );
    for (i, name) in names.iter().enumerate() {
        let y = TOP + 4.0 + 14.0 * i as f64;
        let _ = write!(
            out,
            r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            W - RIGHT - 150.0,
            y,
            colour(i),
            W - RIGHT - 136.0,
            y + 9.0,
            esc(name)
        );
    }
}

fn thin(points: &[(f64, f64)]) -> impl Iterator<Item = &(f64, f64)> {
    let step = points.len().div_ceil(MAX_POINTS).max(1);
    let last = points.len().saturating_sub(1);
    points
        .iter()
        .enumerate()
        .filter(move |(i, _)| i % step == 0 || *i == last)
        .map(|(_, p)| p)
}

/// A line per series.
pub(crate) fn lines(axes: &Axes, series: &[Series]) -> String {
    lines_in(axes, series, None)
}

/// A line per series, over `x_span` when given: charts of one time axis then line up.
pub(crate) fn lines_in(axes: &Axes, series: &[Series], x_span: Option<(f64, f64)>) -> String {
    let mut f = Frame::of(series.iter().flat_map(|s| s.points.iter()));
    if let Some((x0, x1)) = x_span.filter(|(a, b)| a.is_finite() && b.is_finite()) {
        f.x0 = x0;
        f.x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
    }
    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    let mut out = String::new();
    open(&mut out, axes, &f, &names);
    for (i, s) in series.iter().enumerate() {
        let path: Vec<String> = thin(&s.points)
            .map(|&(x, y)| format!("{:.1},{:.1}", f.px(x), f.py(y)))
            .collect();
        let _ = write!(
            out,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>"#,
            colour(i),
            path.join(" ")
        );
        if s.points.len() <= 12 {
            for &(x, y) in &s.points {
                let _ = write!(
                    out,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                    f.px(x),
                    f.py(y),
                    colour(i)
                );
            }
        }
    }
    out.push_str("</svg>");
    out
}

/// The empirical CDF of a sample: (value, share at or below it).
pub(crate) fn cdf(mut v: Vec<f64>) -> Vec<(f64, f64)> {
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect()
}

/// A histogram of `v` in `bins` equal bins, as bars.
pub(crate) fn histogram(axes: &Axes, v: &[f64], bins: usize) -> String {
    let max = v.iter().copied().fold(0.0, f64::max);
    let width = if max > 0.0 { max / bins as f64 } else { 1.0 };
    let mut counts = vec![0u64; bins];
    for &x in v {
        counts[((x / width) as usize).min(bins - 1)] += 1;
    }
    let pts: Vec<(f64, f64)> = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| (i as f64 * width, c as f64))
        .chain(std::iter::once((max.max(width), 0.0)))
        .collect();
    let f = Frame::of(pts.iter());
    let mut out = String::new();
    open(&mut out, axes, &f, &[]);
    for (i, &c) in counts.iter().enumerate() {
        let (x0, x1) = (f.px(i as f64 * width), f.px((i + 1) as f64 * width));
        let (y0, y1) = (f.py(c as f64), f.py(0.0));
        let _ = write!(
            out,
            r#"<rect x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
            (x1 - x0 - 1.0).max(0.5),
            (y1 - y0).max(0.0),
            colour(0)
        );
    }
    out.push_str("</svg>");
    out
}

/// Horizontal spans (start, end) stacked by row: a task timeline.
pub(crate) fn spans(axes: &Axes, rows: &[(f64, f64)]) -> String {
    let f = Frame::of(
        rows.iter()
            .enumerate()
            .flat_map(|(i, &(a, b))| [(a, i as f64), (b, i as f64 + 1.0)])
            .collect::<Vec<_>>()
            .iter(),
    );
    let mut out = String::new();
    open(&mut out, axes, &f, &[]);
    let h = ((H - TOP - BOTTOM) / rows.len().max(1) as f64).max(0.5);
    for (i, &(a, b)) in rows.iter().enumerate() {
        let _ = write!(
            out,
            r#"<rect x="{:.1}" y="{:.2}" width="{:.2}" height="{h:.2}" fill="{}"/>"#,
            f.px(a),
            f.py(i as f64 + 1.0),
            (f.px(b) - f.px(a)).max(0.5),
            colour(0)
        );
    }
    out.push_str("</svg>");
    out
}

/// One horizontal bar per (label, ratio), with a line at 1.0.
pub(crate) fn ratio_bars(title: &str, bars: &[(String, f64)]) -> String {
    let row = 18.0;
    let label_w = 230.0;
    let h = TOP + row * bars.len() as f64 + 24.0;
    let max = bars.iter().map(|b| b.1).fold(1.0, f64::max).min(100.0);
    let scale = (W - label_w - RIGHT - 50.0) / max;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg viewBox="0 0 {W} {h}" width="{W}" height="{h}" role="img" font-family="sans-serif" font-size="11"><title>{t}</title><text x="8" y="16" font-size="13" font-weight="bold">{t}</text>"#,
        t = esc(title)
    );
    for (i, (label, ratio)) in bars.iter().enumerate() {
        let y = TOP + row * i as f64;
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><rect x="{label_w}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"/><text x="{:.1}" y="{:.1}">{ratio:.3}</text>"#,
            label_w - 6.0,
            y + 12.0,
            esc(label),
            (ratio.min(max) * scale).max(0.5),
            row - 4.0,
            colour(usize::from(*ratio > 1.0)),
            label_w + ratio.min(max) * scale + 4.0,
            y + 12.0
        );
    }
    let one = label_w + scale;
    let _ = write!(
        out,
        r##"<line x1="{one:.1}" y1="{TOP}" x2="{one:.1}" y2="{:.1}" stroke="#444" stroke-dasharray="4 3"/><text x="{one:.1}" y="{:.1}" text-anchor="middle">1.0</text></svg>"##,
        h - 20.0,
        h - 6.0
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_self_contained_svg() {
        let s = lines(
            &Axes {
                title: "a <b>",
                x: "x",
                y: "y",
            },
            &[Series {
                name: "r&1".into(),
                points: (0..5000)
                    .map(|i| (f64::from(i), f64::from(i * i)))
                    .collect(),
            }],
        );
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("a &lt;b&gt;") && s.contains("r&amp;1"));
        // Thinned to at most MAX_POINTS (+ the last).
        let pts = s
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert!(pts.split(' ').count() <= MAX_POINTS + 1);
        let c = cdf(vec![3.0, 1.0, 2.0, 4.0]);
        assert_eq!(c, vec![(1.0, 0.25), (2.0, 0.5), (3.0, 0.75), (4.0, 1.0)]);
        let h = histogram(
            &Axes {
                title: "h",
                x: "",
                y: "",
            },
            &[0.1, 0.2, 5.0],
            10,
        );
        assert_eq!(h.matches("<rect").count(), 10);
    }
}
