//! The figures of one run, and the table that puts runs side by side.

use serde::Serialize;

use crate::percentiles::Distribution;

/// One run of a workload. Times in ms; ratios are makespan / bound (`None` for a zero bound).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoadReport {
    pub schedule: String,
    pub tasks: usize,
    pub completed: usize,
    pub failed: usize,
    pub blocked: usize,
    /// First dispatch to the last task settled (before integration).
    pub makespan_ms: f64,
    /// The whole run, integration and report included.
    pub total_ms: f64,
    /// `planned` (the workload's latencies) or `observed` (the calls' measured durations).
    pub bound_source: String,
    pub critical_path_bound_ms: f64,
    pub critical_path_ratio: Option<f64>,
    pub wave_barrier_bound_ms: f64,
    pub wave_barrier_ratio: Option<f64>,
    /// Completed tasks per second of `total_ms` (end to end).
    pub tasks_per_sec: f64,
    /// Last prerequisite's model call returned -> the task's first model call began; only
    /// tasks with prerequisites.
    pub dispatch_ms: Distribution,
    /// This run's peak resident memory (`None` where it cannot be measured per run).
    pub peak_rss_bytes: Option<u64>,
    pub baseline_rss_bytes: Option<u64>,
    /// Most model calls in flight at once.
    pub max_in_flight: u64,
    /// (peak - baseline) / max in flight.
    pub rss_per_in_flight_bytes: Option<u64>,
    /// Every model call, the integrator's included.
    pub model_calls: u64,
    pub model_calls_per_sec: f64,
    /// Model calls that returned an error.
    pub errors: u64,
    /// The report's integrator calls sent to the model (in `model_calls`).
    pub integrator_calls: u64,
    /// Integrator calls the load test answered itself, not sent and not in `model_calls`
    /// (an endpoint's workload is its tasks' requests unless asked otherwise).
    pub integrator_answered_locally: u64,
    /// Task retries after transient errors.
    pub retries: u64,
    /// The sweep point this run measured (`rate=20`, `concurrency=64`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// What the endpoint did (with `LoadRequest::serving`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serving: Option<crate::serving::ServingReport>,
    /// The target's Prometheus metrics scraped during the run (`--scrape-metrics`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<Vec<crate::scrape::MetricsSample>>,
    /// Multi-turn sessions: the figures of each turn number (how the context grows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<Vec<crate::sessions::TurnFigures>>,
    /// Every model call as the client saw it (with `LoadRequest::serving`), for pictures.
    #[serde(skip)]
    pub calls: Vec<crate::serving::CallRecord>,
    /// Every task's timestamps, when asked for (`LoadRequest::timeline`); written apart
    /// from the figures.
    #[serde(skip)]
    pub timeline: Option<crate::timeline::Timeline>,
}

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
pub fn render_load_table(runs: &[LoadReport]) -> String {
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
