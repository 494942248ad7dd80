//! The report's DAG and timeline as inline SVG for `report.html` (the Markdown report has
//! them as Mermaid, which a browser draws only with a script). Every node names its task in
//! `data-task` and shows its status by colour and by a label, never by colour alone.

use std::fmt::Write as _;

use planwave_plan::{Lang, ValidatedPlan};

use planwave_record::{TaskRecord, TaskStatus};

use super::escape;

const NODE_W: usize = 190;
const NODE_H: usize = 46;
const COL_GAP: usize = 60;
const ROW_GAP: usize = 18;
const PAD: usize = 12;

/// The class and the visible label of a status.
fn status(lang: Lang, s: TaskStatus) -> (&'static str, &'static str) {
    match (s, lang) {
        (TaskStatus::Completed, Lang::En) => ("completed", "✓ completed"),
        (TaskStatus::Completed, Lang::Zh) => ("completed", "✓ 已完成"),
        (TaskStatus::Failed, Lang::En) => ("failed", "✗ failed"),
        (TaskStatus::Failed, Lang::Zh) => ("failed", "✗ 失败"),
        (TaskStatus::Blocked, Lang::En) => ("blocked", "⊘ blocked"),
        (TaskStatus::Blocked, Lang::Zh) => ("blocked", "⊘ 未执行"),
        (TaskStatus::Running, Lang::En) => ("running", "▶ running"),
        (TaskStatus::Running, Lang::Zh) => ("running", "▶ 运行中"),
        (TaskStatus::Pending, Lang::En) => ("pending", "… pending"),
        (TaskStatus::Pending, Lang::Zh) => ("pending", "… 等待"),
        (TaskStatus::Truncated, Lang::En) => ("truncated", "✂ truncated"),
        (TaskStatus::Truncated, Lang::Zh) => ("truncated", "✂ 已截断"),
    }
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// The plan laid out by waves: a column per wave, a node per task, an edge per dependency.
pub(super) fn dag(plan: &ValidatedPlan, records: &[TaskRecord]) -> String {
    let lang = plan.lang();
    let mut pos = vec![(0usize, 0usize); plan.len()];
    let mut rows = 0;
    for (w, wave) in plan.waves().iter().enumerate() {
        for (r, &i) in wave.iter().enumerate() {
            pos[i as usize] = (PAD + w * (NODE_W + COL_GAP), PAD + r * (NODE_H + ROW_GAP));
        }
        rows = rows.max(wave.len());
    }
    let width = PAD * 2 + plan.waves().len() * (NODE_W + COL_GAP) - COL_GAP;
    let height = PAD * 2 + rows * (NODE_H + ROW_GAP) - ROW_GAP;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"dag\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"DAG\">"
    );
    for (i, &(x, y)) in pos.iter().enumerate() {
        for &d in plan.deps(i) {
            let (dx, dy) = pos[d as usize];
            let _ = write!(
                out,
                "<path class=\"edge\" d=\"M{} {} C{} {} {} {} {} {}\"/>",
                dx + NODE_W,
                dy + NODE_H / 2,
                dx + NODE_W + COL_GAP / 2,
                dy + NODE_H / 2,
                x - COL_GAP / 2,
                y + NODE_H / 2,
                x,
                y + NODE_H / 2
            );
        }
    }
    for (i, &(x, y)) in pos.iter().enumerate() {
        let st = records.get(i).map_or(TaskStatus::Pending, |r| r.status);
        let (class, label) = status(lang, st);
        let id = escape(&plan.id(i).to_string());
        let title = escape(&cut(plan.task(i).title(), 26));
        let _ = write!(
            out,
            "<g class=\"node {class}\" data-task=\"{id}\"><title>{}</title>\
             <rect x=\"{x}\" y=\"{y}\" width=\"{NODE_W}\" height=\"{NODE_H}\" rx=\"6\"/>\
             <text x=\"{}\" y=\"{}\">{id} · {title}</text>\
             <text class=\"status\" x=\"{}\" y=\"{}\">{label}</text></g>",
            escape(plan.task(i).title()),
            x + 8,
            y + 18,
            x + 8,
            y + 36
        );
    }
    out.push_str("</svg>");
    out
}

const CHART_W: f64 = 640.0;
const LABEL_W: usize = 150;
const BAR_H: usize = 18;

/// One bar per task that ran, from its start to its end, grouped by wave; the axis is the
/// run's wall-clock time from its first start.
pub(super) fn gantt(plan: &ValidatedPlan, records: &[TaskRecord]) -> String {
    let mut bars: Vec<(u32, usize, i64, i64)> = records
        .iter()
        .enumerate()
        .take(plan.len())
        .filter_map(|(i, r)| {
            let (s, f) = (r.started_at?, r.finished_at?);
            let (s, f) = (s.timestamp_micros(), f.timestamp_micros());
            Some((r.wave, i, s, f.max(s)))
        })
        .collect();
    bars.sort_by_key(|&(wave, i, start, _)| (wave, start, i));
    let t0 = bars.iter().map(|b| b.2).min().unwrap_or(0);
    let t1 = bars.iter().map(|b| b.3).max().unwrap_or(t0).max(t0 + 1);
    let scale = CHART_W / (t1 - t0) as f64;
    let width = LABEL_W + CHART_W as usize + PAD * 2 + 60;
    let height = PAD * 2 + bars.len() * (BAR_H + 6) + 20;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"gantt\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"Timeline\">"
    );
    for (row, &(_, i, s, f)) in bars.iter().enumerate() {
        let y = PAD + row * (BAR_H + 6);
        let x = LABEL_W as f64 + (s - t0) as f64 * scale;
        let w = ((f - s) as f64 * scale).max(1.0);
        let class = match records[i].status {
            TaskStatus::Completed => "completed",
            TaskStatus::Truncated => "truncated",
            TaskStatus::Failed => "failed",
            _ => "other",
        };
        let id = escape(&plan.id(i).to_string());
        let secs = (f - s) as f64 / 1e6;
        let _ = write!(
            out,
            "<g data-task=\"{id}\"><text x=\"{PAD}\" y=\"{}\">{id} · {}</text>\
             <rect class=\"bar {class}\" x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{BAR_H}\"/>\
             <text x=\"{:.1}\" y=\"{}\">{secs:.2}s</text></g>",
            y + 13,
            escape(&cut(plan.task(i).title(), 18)),
            x + w + 4.0,
            y + 13
        );
    }
    let _ = write!(
        out,
        "<text x=\"{LABEL_W}\" y=\"{}\">0s</text><text x=\"{}\" y=\"{}\">{:.2}s</text></svg>",
        height - PAD,
        LABEL_W as f64 + CHART_W - 30.0,
        height - PAD,
        (t1 - t0) as f64 / 1e6
    );
    out
}
