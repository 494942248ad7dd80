//! The fleet's metrics in the Prometheus (OpenMetrics) text format, for `GET /metrics` of
//! `planwave serve` and of `planwave worker --metrics-addr`.
//!
//! Nothing here is called from the engine: the engine's events reach [`Metrics`] through the
//! front end's sinks ([`MeteredWatch`], [`MeteredSink`], [`MeteredBatch`]), which count each
//! event where it is emitted, with handles to its series looked up once (`feed`).
//! Model-call timings the events do not carry (time to first token, limiter wait) come from
//! [`MeteredProvider`], a wrapper around the model client; the journal's commit latency
//! from the queue worker's mirror ([`Metrics::journal_commit`]).
//! The names, units and their OpenTelemetry GenAI counterparts are listed in
//! docs/guide/fleet.md.

mod feed;
mod provider;

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

pub use feed::{MeteredBatch, MeteredSink, MeteredWatch};
pub use provider::MeteredProvider;

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Outcome {
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct State {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Call {
    pub role: String,
    pub model: String,
    pub outcome: String,
    pub error_class: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Tokens {
    pub role: String,
    pub model: String,
    /// `prompt`, `completion`, `reasoning` or `cached`.
    pub r#type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Role {
    pub role: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Currency {
    pub currency: String,
}

/// The series themselves (cheap handles: each is an `Arc` inside).
#[derive(Clone)]
pub(crate) struct Series {
    pub jobs_running: Gauge,
    pub jobs_finished: Family<State, Counter>,
    pub tasks: Family<Outcome, Counter>,
    pub calls: Family<Call, Counter>,
    pub tokens: Family<Tokens, Counter>,
    pub cost: Family<Currency, Counter<f64, std::sync::atomic::AtomicU64>>,
    pub call_seconds: Family<Role, Histogram>,
    pub ttft: Histogram,
    pub dispatch: Histogram,
    pub limiter_wait: Histogram,
    pub journal_commit: Histogram,
    pub subagents: Gauge,
    pub queue_jobs: Family<State, Gauge>,
    pub redeliveries: Gauge,
}

/// Seconds from 1 ms to about 9 minutes (20 buckets, doubling).
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 20))
}

/// Seconds from 100 µs up (dispatch and commits are fast; 20 buckets, doubling).
fn fast_seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

fn role_seconds() -> Histogram {
    seconds()
}

impl Series {
    fn register(r: &mut Registry) -> Series {
        let s = Series {
            jobs_running: Gauge::default(),
            jobs_finished: Family::default(),
            tasks: Family::default(),
            calls: Family::default(),
            tokens: Family::default(),
            cost: Family::default(),
            call_seconds: Family::new_with_constructor(role_seconds),
            ttft: seconds(),
            dispatch: fast_seconds(),
            limiter_wait: fast_seconds(),
            journal_commit: fast_seconds(),
            subagents: Gauge::default(),
            queue_jobs: Family::default(),
            redeliveries: Gauge::default(),
        };
        r.register(
            "planwave_jobs_running",
            "Jobs this process is running now",
            s.jobs_running.clone(),
        );
        r.register(
            "planwave_jobs_finished",
            "Jobs this process ran to an end, by final state",
            s.jobs_finished.clone(),
        );
        r.register(
            "planwave_tasks",
            "Task ends by outcome (completed, failed, blocked; retried counts each retry)",
            s.tasks.clone(),
        );
        r.register(
            "planwave_model_calls",
            "Model calls by role, model, outcome (ok, error) and error class",
            s.calls.clone(),
        );
        r.register(
            "planwave_model_tokens",
            "Tokens by role, model and type (prompt, completion, reasoning, cached)",
            s.tokens.clone(),
        );
        r.register(
            "planwave_estimated_cost",
            "Estimated cost of the model calls, from the job's price table",
            s.cost.clone(),
        );
        let secs = |r: &mut Registry, name: &str, help: &str, h: &Histogram| {
            r.register_with_unit(name, help, Unit::Seconds, h.clone());
        };
        r.register_with_unit(
            "planwave_model_call_duration",
            "Model call duration by role (one attempt, send to end)",
            Unit::Seconds,
            s.call_seconds.clone(),
        );
        secs(
            r,
            "planwave_model_time_to_first_token",
            "Send to the first token of an answer",
            &s.ttft,
        );
        secs(
            r,
            "planwave_task_dispatch_latency",
            "A task's ready to its start",
            &s.dispatch,
        );
        secs(
            r,
            "planwave_limiter_wait",
            "Wait at the model client's limiter before a call",
            &s.limiter_wait,
        );
        secs(
            r,
            "planwave_journal_commit",
            "A journal group commit reaching the queue (workers)",
            &s.journal_commit,
        );
        r.register(
            "planwave_subagents_in_flight",
            "Tasks running now, each in its subagent (tool steps included)",
            s.subagents.clone(),
        );
        r.register(
            "planwave_queue_jobs",
            "Jobs of the shared queue by state (pending, in_progress), as the workers' consumer counts them",
            s.queue_jobs.clone(),
        );
        r.register(
            "planwave_queue_redelivered_jobs",
            "Jobs of the shared queue delivered more than once and not yet acknowledged",
            s.redeliveries.clone(),
        );
        s
    }
}

/// A process's metrics: the registry, its series, and the handles events count through.
pub struct Metrics {
    registry: Registry,
    series: Series,
    handles: feed::Handles,
}

impl Metrics {
    /// A registry with every series.
    pub fn new() -> Arc<Metrics> {
        let mut registry = Registry::default();
        let series = Series::register(&mut registry);
        let handles = feed::Handles::new(&series);
        Arc::new(Metrics {
            registry,
            series,
            handles,
        })
    }

    /// Every series as OpenMetrics text ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// A job started in this process.
    pub fn job_started(&self) {
        self.series.jobs_running.inc();
    }

    /// A job this process ran ended in `state` (`completed`, `failed`, `cancelled`, ...).
    pub fn job_finished(&self, state: &str) {
        self.series.jobs_running.dec();
        self.series
            .jobs_finished
            .get_or_create(&State {
                state: state.to_owned(),
            })
            .inc();
    }

    /// A cost a finished job reports (the worker's: its summary's), when calls were not
    /// priced as they came.
    pub fn add_cost(&self, currency: &str, amount: f64) {
        if amount.is_finite() && amount > 0.0 {
            self.series
                .cost
                .get_or_create(&Currency {
                    currency: currency.to_owned(),
                })
                .inc_by(amount);
        }
    }

    /// One journal group commit reached the queue in `took`.
    pub fn journal_commit(&self, took: Duration) {
        self.series.journal_commit.observe(took.as_secs_f64());
    }

    /// The shared queue's depth as the workers' consumer reports it.
    pub fn queue_depth(&self, pending: u64, in_progress: u64, redelivered: u64) {
        let set = |state: &str, v: u64| {
            self.series
                .queue_jobs
                .get_or_create(&State {
                    state: state.to_owned(),
                })
                .set(i64::try_from(v).unwrap_or(i64::MAX));
        };
        set("pending", pending);
        set("in_progress", in_progress);
        self.series
            .redeliveries
            .set(i64::try_from(redelivered).unwrap_or(i64::MAX));
    }
}

#[cfg(test)]
mod tests;
