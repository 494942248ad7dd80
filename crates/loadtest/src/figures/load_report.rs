//! The figures of one run.

use serde::Serialize;

use super::percentiles::Distribution;
use super::serving::{CallRecord, ServingReport};
use super::turns::TurnFigures;
use crate::endpoint::scrape::{MetricsSample, ScrapeDropped};
use crate::probe::timeline::Timeline;

/// One run of a workload. Times in ms; ratios are makespan / bound (`None` for a zero bound).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoadReport {
    pub schedule: String,
    pub tasks: usize,
    /// Tasks that ended with an answer, those cut by the output cap included.
    pub completed: usize,
    /// Of `completed`, the tasks whose answer the output cap cut (`--output-tokens`).
    #[serde(default)]
    pub truncated: usize,
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
    pub serving: Option<ServingReport>,
    /// The target's Prometheus metrics scraped during the run (`--scrape-metrics`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<Vec<MetricsSample>>,
    /// What the scrapes left out (series not named or past the cap, bodies too large).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_metrics_dropped: Option<ScrapeDropped>,
    /// Multi-turn sessions: the figures of each turn number (how the context grows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<Vec<TurnFigures>>,
    /// Every model call as the client saw it (with `LoadRequest::serving`), for pictures.
    #[serde(skip)]
    pub calls: Vec<CallRecord>,
    /// Every task's timestamps, when asked for (`LoadRequest::timeline`); written apart
    /// from the figures.
    #[serde(skip)]
    pub timeline: Option<Timeline>,
}
