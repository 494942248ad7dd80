//! The figures of runs side by side, as a plain-text table, and the column layout every
//! table of the report shares.

use planwave_loadtest::LoadReport;

fn ms(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3} ms"))
        .unwrap_or_else(|| "-".into())
}

fn ratio(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.4}")).unwrap_or_else(|| "-".into())
}

fn bytes(v: Option<u64>) -> String {
    match v {
        None => "-".into(),
        Some(b) if b >= 10 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        Some(b) => format!("{:.1} KiB", b as f64 / 1024.0),
    }
}

/// A plain-text table, one column per run.
pub(crate) fn render_load_table(runs: &[LoadReport]) -> String {
    let row = |label: &'static str, cell: &dyn Fn(&LoadReport) -> String| {
        (label, runs.iter().map(cell).collect::<Vec<String>>())
    };
    let rows: Vec<(&str, Vec<String>)> = vec![
        row("schedule", &|r| r.schedule.clone()),
        row("tasks", &|r| {
            format!(
                "{} ({} completed, {} failed, {} blocked)",
                r.tasks, r.completed, r.failed, r.blocked
            )
        }),
        row("makespan", &|r| format!("{:.1} ms", r.makespan_ms)),
        row("total (with report)", &|r| format!("{:.1} ms", r.total_ms)),
        row("critical-path bound", &|r| {
            format!("{:.1} ms ({})", r.critical_path_bound_ms, r.bound_source)
        }),
        row("makespan / critical path", &|r| {
            ratio(r.critical_path_ratio)
        }),
        row("wave-barrier bound", &|r| {
            format!("{:.1} ms", r.wave_barrier_bound_ms)
        }),
        row("makespan / wave barrier", &|r| ratio(r.wave_barrier_ratio)),
        row("tasks/s (end to end)", &|r| {
            format!("{:.0}", r.tasks_per_sec)
        }),
        row("dispatch p50", &|r| ms(r.dispatch_ms.p50)),
        row("dispatch p99", &|r| ms(r.dispatch_ms.p99)),
        row("dispatch max", &|r| ms(r.dispatch_ms.max)),
        row("peak RSS", &|r| bytes(r.peak_rss_bytes)),
        row("max in flight", &|r| r.max_in_flight.to_string()),
        row("RSS per in-flight call", &|r| {
            bytes(r.rss_per_in_flight_bytes)
        }),
        row("model calls/s", &|r| {
            format!("{:.0} ({} calls)", r.model_calls_per_sec, r.model_calls)
        }),
        row("integrator calls", &|r| {
            if r.integrator_answered_locally > 0 {
                format!(
                    "{} sent, {} answered locally (not sent)",
                    r.integrator_calls, r.integrator_answered_locally
                )
            } else {
                format!("{} sent", r.integrator_calls)
            }
        }),
        row("errors", &|r| r.errors.to_string()),
        row("retries", &|r| r.retries.to_string()),
    ];
    layout(&rows)
}

/// Rows of label and one value per run, in aligned columns.
pub(crate) fn layout(rows: &[(&str, Vec<String>)]) -> String {
    let label_w = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let cols = rows.first().map_or(0, |(_, v)| v.len());
    let col_w: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|(_, v)| v[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (label, values) in rows {
        out.push_str(&format!("{label:<label_w$}"));
        for (c, v) in values.iter().enumerate() {
            out.push_str(&format!("  {v:<w$}", w = col_w[c]));
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    }
    out
}
