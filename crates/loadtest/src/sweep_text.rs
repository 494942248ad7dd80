//! A sweep's results as `planwave loadtest` shows them: the workload line, the figures'
//! table (and the endpoint's, and the knee of a sweep), or the HTML report's title.

use std::fmt::Write as _;

use crate::html::{HtmlInput, render_html};
use crate::knee::render_sweep_line;
use crate::report::render_load_table;
use crate::serving_table::render_serving_table;
use crate::sweep::{SweepOutcome, WorkloadInfo};

/// `workload: random (seed 0, fan-in 3), 500 tasks in 12 waves, latency ..., model: ...`
pub fn render_workload_line(w: &WorkloadInfo) -> String {
    format!(
        "workload: {}, {} tasks in {} waves, latency {}{}, model: {}",
        w.source,
        w.plan.len(),
        w.plan.waves().len(),
        if w.latency_by_server {
            "decided by the server".to_string()
        } else {
            w.latency.to_string()
        },
        w.latency_file
            .as_ref()
            .map(|p| format!(" (per-task from {})", p.display()))
            .unwrap_or_default(),
        w.model,
    )
}

/// The workload line, the table of every run, the endpoint's own table when it reported
/// one, and the sweep's knee when the runs were a sweep.
pub fn render_sweep_text(outcome: &SweepOutcome, w: &WorkloadInfo) -> String {
    let runs = &outcome.runs;
    let mut out = render_workload_line(w);
    out.push('\n');
    out.push_str(&render_load_table(runs));
    if runs.iter().any(|r| r.serving.is_some()) {
        out.push('\n');
        out.push_str(&render_serving_table(runs));
    }
    if let Some(sweep) = outcome.summary() {
        let _ = writeln!(out, "{}", render_sweep_line(&sweep));
    }
    if let Some(s) = &outcome.saturation {
        out.push('\n');
        out.push_str(&crate::saturation::render_saturation(s));
    }
    out
}

/// The self-contained HTML report of the sweep (`--html`).
pub fn render_sweep_html(outcome: &SweepOutcome, w: &WorkloadInfo) -> String {
    render_html(&HtmlInput {
        title: format!("planwave loadtest: {}, model {}", w.source, w.model),
        runs: &outcome.runs,
        plan: Some(&w.plan),
        saturation: outcome.saturation.as_ref(),
    })
}
