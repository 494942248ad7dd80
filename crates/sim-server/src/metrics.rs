//! `GET /metrics`: the server's figures in the Prometheus format under the names and meanings
//! vLLM's server uses (`vllm:num_requests_running`, `vllm:time_to_first_token_seconds`, ...),
//! so a load tester that scrapes vLLM is tested against the simulator unchanged.
//!
//! Counters and histograms are updated as answers complete; the two gauges are read from the
//! concurrency limit's own counts when scraped, so requests pay nothing for them.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::server::AppState;

/// vLLM's buckets for time to first token, in seconds.
const TTFT_BUCKETS: [f64; 16] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// vLLM's buckets for the time between output tokens, in seconds.
const TOKEN_GAP_BUCKETS: [f64; 15] = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
];
/// vLLM's buckets for whole-request latencies, in seconds.
const REQUEST_BUCKETS: [f64; 13] = [
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
];

/// One answer as the metrics count it, times in seconds.
pub(crate) struct Answered {
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    pub queue_s: f64,
    pub ttft_s: f64,
    pub e2e_s: f64,
}

pub(crate) struct Metrics {
    registry: Registry,
    running: Gauge,
    waiting: Gauge,
    kv_usage: Gauge<f64, AtomicU64>,
    prompt_tokens: Counter,
    generation_tokens: Counter,
    success: Counter,
    ttft: Histogram,
    inter_token: Histogram,
    per_output_token: Histogram,
    e2e: Histogram,
    queue: Histogram,
    /// The concurrency limit, for the KV cache usage stand-in (0: none).
    limit: u64,
}

impl Metrics {
    pub(crate) fn new(model: &str, limit: Option<usize>) -> Metrics {
        let label = (Cow::Borrowed("model_name"), Cow::Owned(model.to_owned()));
        let mut registry = Registry::with_labels(std::iter::once(label));
        let hist = |b: &[f64]| Histogram::new(b.iter().copied());
        let m = Metrics {
            running: Gauge::default(),
            waiting: Gauge::default(),
            kv_usage: Gauge::default(),
            prompt_tokens: Counter::default(),
            generation_tokens: Counter::default(),
            success: Counter::default(),
            ttft: hist(&TTFT_BUCKETS),
            inter_token: hist(&TOKEN_GAP_BUCKETS),
            per_output_token: hist(&TOKEN_GAP_BUCKETS),
            e2e: hist(&REQUEST_BUCKETS),
            queue: hist(&REQUEST_BUCKETS),
            limit: limit.map_or(0, |l| l.max(1) as u64),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "vllm:num_requests_running",
            "Number of requests in model execution batches",
            m.running.clone(),
        );
        r.register(
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed",
            m.waiting.clone(),
        );
        r.register(
            "vllm:kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage (simulated: running / concurrency limit)",
            m.kv_usage.clone(),
        );
        r.register(
            "vllm:prompt_tokens",
            "Number of prefill tokens processed",
            m.prompt_tokens.clone(),
        );
        r.register(
            "vllm:generation_tokens",
            "Number of generation tokens processed",
            m.generation_tokens.clone(),
        );
        r.register(
            "vllm:request_success",
            "Count of successfully processed requests",
            m.success.clone(),
        );
        r.register(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds",
            m.ttft.clone(),
        );
        r.register(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds",
            m.inter_token.clone(),
        );
        r.register(
            "vllm:time_per_output_token_seconds",
            "Histogram of time per output token in seconds (per request)",
            m.per_output_token.clone(),
        );
        r.register(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds",
            m.e2e.clone(),
        );
        r.register(
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request",
            m.queue.clone(),
        );
        Metrics { registry, ..m }
    }

    /// A completed answer: its tokens, and its times in the histograms.
    pub(crate) fn answered(&self, a: &Answered) {
        self.prompt_tokens.inc_by(a.prompt_tokens);
        self.generation_tokens.inc_by(a.output_tokens);
        self.success.inc();
        self.ttft.observe(a.ttft_s);
        self.e2e.observe(a.e2e_s);
        self.queue.observe(a.queue_s);
        if a.output_tokens > 1 {
            let tpot = (a.e2e_s - a.ttft_s).max(0.0) / (a.output_tokens - 1) as f64;
            self.per_output_token.observe(tpot);
        }
    }

    /// The gap between two consecutive pieces of a streamed answer.
    pub(crate) fn token_gap(&self, seconds: f64) {
        self.inter_token.observe(seconds);
    }

    /// The text served at `/metrics`, with the gauges read now.
    pub(crate) fn render(&self, running: u64, waiting: u64) -> String {
        self.running.set(running.min(i64::MAX as u64) as i64);
        self.waiting.set(waiting.min(i64::MAX as u64) as i64);
        if self.limit > 0 {
            self.kv_usage.set(running as f64 / self.limit as f64);
        }
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// `GET /metrics`.
pub(crate) async fn serve(State(st): State<Arc<AppState>>) -> impl IntoResponse {
    let text = st.metrics.render(st.slots.running(), st.slots.waiting());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
}

/// `GET /health`: 200 with an empty body once the server answers, as vLLM's.
pub(crate) async fn health() -> StatusCode {
    StatusCode::OK
}

/// Requests waiting for a slot: counted up before the wait, down when it ends (or the
/// request goes away while waiting).
pub(crate) struct Waiting<'a>(&'a AtomicU64);

impl<'a> Waiting<'a> {
    pub(crate) fn enter(count: &'a AtomicU64) -> Waiting<'a> {
        count.fetch_add(1, Ordering::Relaxed);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_vllm_series_names_with_the_model_label() {
        let m = Metrics::new("sim-1", Some(4));
        m.answered(&Answered {
            prompt_tokens: 12,
            output_tokens: 5,
            queue_s: 0.0,
            ttft_s: 0.02,
            e2e_s: 0.1,
        });
        let text = m.render(2, 3);
        for line in [
            "vllm:num_requests_running{model_name=\"sim-1\"} 2",
            "vllm:num_requests_waiting{model_name=\"sim-1\"} 3",
            "vllm:prompt_tokens_total{model_name=\"sim-1\"} 12",
            "vllm:generation_tokens_total{model_name=\"sim-1\"} 5",
            "vllm:kv_cache_usage_perc{model_name=\"sim-1\"} 0.5",
            "vllm:time_to_first_token_seconds_count{model_name=\"sim-1\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
