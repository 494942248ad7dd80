//! From a run's events to the series: the sinks the front ends tee their events into.
//!
//! A sink's `emit` runs on the engine's actors, and counts right there: each event that
//! counts touches a few of the series' atomics, and at most one histogram (a short lock),
//! through handles looked up once ([`Handles`]). No channel, no task to wake, no map of tasks:
//! an event carries what its series need (`task_started` its wait since ready), and a sink
//! keeps one number, its tasks still running. This is what keeps metrics within a few percent
//! of a zero-latency run (docs/benchmarks.md, issue 39); an aggregator task fed by a channel
//! cost a third more on two cores.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use planwave_llm::PriceTable;
use planwave_plan::ValidatedPlan;
use planwave_record::Usage;
use planwave_record::{Event, EventKind, EventSink};
use planwave_runner::ops::{Watch, Watcher};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;

use super::{Call, Currency, Metrics, Outcome, Role, Series, Tokens};

/// An error message's class, for `planwave_model_calls_total{error_class}`: what an operator
/// alerts on (rate limits apart from outages apart from timeouts).
pub(crate) fn error_class(message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| m.contains(w));
    if has(&["429", "rate limit", "rate_limit", "too many requests"]) {
        "rate_limited"
    } else if has(&["timed out", "timeout", "deadline"]) {
        "timeout"
    } else if has(&["500", "502", "503", "504", "server error", "overloaded"]) {
        "server_error"
    } else if has(&["connect", "connection", "reset", "broken pipe"]) {
        "connection"
    } else if has(&["401", "403", "unauthorized", "forbidden", "api key"]) {
        "auth"
    } else if has(&["400", "404", "invalid", "malformed", "parse"]) {
        "invalid"
    } else {
        "other"
    }
}

/// The labelled series an event touches, looked up once: a family's `get_or_create` hashes
/// and clones every label. A handle is the same series (an `Arc` inside).
pub(crate) struct Handles {
    completed: Counter,
    failed: Counter,
    retried: Counter,
    blocked: Counter,
    /// Each role and model pair's series, set once and then only read: a call finds its
    /// pair without taking a lock or writing a shared word (a lock's reader count, written
    /// by every call on both cores, cost more than the counting). Pairs beyond the slots
    /// (never seen: a process has a few roles and models) are looked up in the families.
    calls: [OnceLock<CallHandles>; CALL_SLOTS],
    /// Taken only to fill a slot; the model names that have a label of their own.
    filling: Mutex<ModelLabels>,
}

const CALL_SLOTS: usize = 32;

/// Distinct `model` label values: the first this many names the answers report; later ones
/// are counted under [`OTHER_MODEL`]. The name comes from the server's answer, and a server
/// answering a new name each time would otherwise make a new series per call.
pub(crate) const MAX_MODEL_LABELS: usize = 16;
/// The `model` label of the calls whose model is not among the first [`MAX_MODEL_LABELS`]
/// (or whose name is longer than [`MAX_MODEL_NAME`]).
pub(crate) const OTHER_MODEL: &str = "other";
/// The longest model name kept as a label.
const MAX_MODEL_NAME: usize = 128;

/// The model names given a label of their own so far.
#[derive(Default)]
struct ModelLabels {
    kept: Vec<String>,
}

impl ModelLabels {
    /// `model`'s label: itself while there is room (or it already has one), else `other`.
    fn label(&mut self, model: &str) -> String {
        if self.kept.iter().any(|m| m == model) {
            return model.to_owned();
        }
        if self.kept.len() < MAX_MODEL_LABELS
            && model.len() <= MAX_MODEL_NAME
            && model != OTHER_MODEL
        {
            self.kept.push(model.to_owned());
            return model.to_owned();
        }
        OTHER_MODEL.to_owned()
    }
}

/// One role and model's series for its calls.
struct CallHandles {
    role: String,
    /// The model name the calls reported (what a call is matched on).
    model: String,
    /// Its label in the series: the name, or `other`.
    label: String,
    ok: Counter,
    seconds: Histogram,
    /// prompt, completion, reasoning, cached: the order of [`TOKEN_KINDS`].
    tokens: [Counter; 4],
}

const TOKEN_KINDS: [&str; 4] = ["prompt", "completion", "reasoning", "cached"];

impl Handles {
    pub(crate) fn new(series: &Series) -> Handles {
        let task = |outcome: &str| {
            series
                .tasks
                .get_or_create(&Outcome {
                    outcome: outcome.to_owned(),
                })
                .clone()
        };
        Handles {
            completed: task("completed"),
            failed: task("failed"),
            retried: task("retried"),
            blocked: task("blocked"),
            calls: std::array::from_fn(|_| OnceLock::new()),
            filling: Mutex::new(ModelLabels::default()),
        }
    }

    /// Runs `f` with the series of `role` and `model`.
    fn with_call<R>(
        &self,
        series: &Series,
        role: &str,
        model: &str,
        f: impl Fn(&CallHandles) -> R,
    ) -> R {
        let is = |h: &CallHandles| h.role == role && h.model == model;
        let found = self.calls.iter().map_while(OnceLock::get).find(|h| is(h));
        if let Some(h) = found {
            return f(h);
        }
        // A poisoned lock only means a panic elsewhere while it was held; the slots are whole.
        let mut labels = self.filling.lock().unwrap_or_else(PoisonError::into_inner);
        for slot in &self.calls {
            match slot.get() {
                Some(h) if is(h) => return f(h),
                Some(_) => {}
                None => {
                    let label = labels.label(model);
                    return f(slot.get_or_init(|| CallHandles::new(series, role, model, label)));
                }
            }
        }
        let label = labels.label(model);
        f(&CallHandles::new(series, role, model, label))
    }
}

impl CallHandles {
    fn new(series: &Series, role: &str, model: &str, label: String) -> CallHandles {
        let tokens = TOKEN_KINDS.map(|kind| {
            series
                .tokens
                .get_or_create(&Tokens {
                    role: role.to_owned(),
                    model: label.clone(),
                    r#type: kind.into(),
                })
                .clone()
        });
        CallHandles {
            role: role.to_owned(),
            model: model.to_owned(),
            ok: series
                .calls
                .get_or_create(&call_labels(role, &label, None))
                .clone(),
            seconds: series
                .call_seconds
                .get_or_create(&Role {
                    role: role.to_owned(),
                })
                .clone(),
            tokens,
            label,
        }
    }
}

fn call_labels(role: &str, model: &str, error: Option<&str>) -> Call {
    let (outcome, class) = match error {
        None => ("ok", ""),
        Some(e) => ("error", error_class(e)),
    };
    Call {
        role: role.to_owned(),
        model: model.to_owned(),
        outcome: outcome.into(),
        error_class: class.into(),
    }
}

/// One model call, as its event gives it.
struct CallSeen<'a> {
    role: &'a str,
    model: &'a str,
    seconds: f64,
    usage: &'a Usage,
    error: Option<&'a str>,
}

/// A job's prices, with the series their cost adds to.
struct Priced {
    table: Arc<PriceTable>,
    cost: Counter<f64, std::sync::atomic::AtomicU64>,
}

/// A front end's [`Watch`] with every execution's events also counted.
pub struct MeteredWatch<'a> {
    pub inner: &'a dyn Watch,
    pub metrics: Arc<Metrics>,
    /// The job's prices (`None`, or an empty table: no cost is counted).
    pub prices: Option<Arc<PriceTable>>,
}

impl Watch for MeteredWatch<'_> {
    fn open(&self, plan: &Arc<ValidatedPlan>) -> Arc<dyn Watcher> {
        Arc::new(MeteredSink::new(
            self.inner.open(plan),
            self.metrics.clone(),
            self.prices.clone(),
        ))
    }

    fn resumed(&self, run_id: uuid::Uuid, completed: usize, tasks: usize) {
        self.inner.resumed(run_id, completed, tasks);
    }
}

/// A sink (or watcher) that passes every event on and counts it.
pub struct MeteredSink<S: ?Sized> {
    inner: Arc<S>,
    metrics: Arc<Metrics>,
    prices: Option<Priced>,
    /// Its tasks that started and have not ended: what the in-flight gauge gives back when
    /// an execution ends with tasks still running (a cancelled run's tasks end with no event).
    running: AtomicI64,
}

impl<S: ?Sized> MeteredSink<S> {
    pub fn new(inner: Arc<S>, metrics: Arc<Metrics>, prices: Option<Arc<PriceTable>>) -> Self {
        let prices = prices.filter(|p| !p.is_empty()).map(|table| {
            let currency = table.currency.clone().unwrap_or_else(|| "USD".into());
            let cost = metrics
                .series
                .cost
                .get_or_create(&Currency { currency })
                .clone();
            Priced { table, cost }
        });
        MeteredSink {
            inner,
            metrics,
            prices,
            running: AtomicI64::new(0),
        }
    }

    fn count(&self, event: &Event) {
        let (series, handles) = (&self.metrics.series, &self.metrics.handles);
        match &event.kind {
            EventKind::TaskStarted { waited, .. } => {
                self.running.fetch_add(1, Ordering::Relaxed);
                series.subagents.inc();
                if let Some(waited) = waited {
                    series.dispatch.observe(waited.as_secs_f64());
                }
            }
            EventKind::TaskCompleted { .. } => self.ended(&handles.completed),
            EventKind::TaskFailed { .. } => self.ended(&handles.failed),
            EventKind::TaskRetry { .. } => {
                handles.retried.inc();
            }
            EventKind::TaskBlocked { .. } => {
                handles.blocked.inc();
            }
            EventKind::LlmCall {
                role,
                model,
                duration_ms,
                usage,
                error,
                ..
            } => self.call(&CallSeen {
                role,
                model,
                seconds: duration_ms / 1000.0,
                usage,
                error: error.as_deref(),
            }),
            EventKind::RunFinished { .. } => self.release(),
            _ => {}
        }
    }

    /// A task ended (the engine says so once, after its start).
    fn ended(&self, outcome: &Counter) {
        let was_running = self
            .running
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n > 0).then_some(n - 1)
            })
            .is_ok();
        if was_running {
            self.metrics.series.subagents.dec();
        }
        outcome.inc();
    }

    /// The execution is over: whatever it still had running is not running any more.
    fn release(&self) {
        let left = self.running.swap(0, Ordering::Relaxed);
        if left > 0 {
            self.metrics.series.subagents.dec_by(left);
        }
    }

    fn call(&self, c: &CallSeen) {
        let series = &self.metrics.series;
        self.metrics
            .handles
            .with_call(series, c.role, c.model, |h| {
                match c.error {
                    None => {
                        h.ok.inc();
                    }
                    // Failed calls are few, and their class is part of the label: looked up
                    // each time.
                    Some(e) => {
                        series
                            .calls
                            .get_or_create(&call_labels(c.role, &h.label, Some(e)))
                            .inc();
                    }
                }
                h.seconds.observe(c.seconds);
                let u = c.usage;
                let counts = [
                    u.prompt_tokens,
                    u.completion_tokens,
                    u.reasoning_tokens,
                    u.cached_tokens,
                ];
                for (counter, n) in h.tokens.iter().zip(counts) {
                    if n > 0 {
                        counter.inc_by(n);
                    }
                }
            });
        if let Some(p) = &self.prices
            && let Some(price) = p.table.price(c.model)
        {
            p.cost.inc_by(price.cost(c.usage));
        }
    }
}

impl<S: EventSink + ?Sized> EventSink for MeteredSink<S> {
    fn emit(&self, event: &Event) {
        self.count(event);
        self.inner.emit(event);
    }
}

impl<S: Watcher + ?Sized> Watcher for MeteredSink<S> {
    fn finish(&self) {
        self.release();
        self.inner.finish();
    }
}

/// A batch's view (a queue worker's) with every job's events also counted (its jobs' starts
/// and ends are the queue worker's to say: it alone knows a job handed back).
pub struct MeteredBatch<'a> {
    pub inner: &'a dyn planwave_runner::ops::BatchWatch,
    pub metrics: Arc<Metrics>,
    /// The batch's prices (every job of a worker shares its settings).
    pub prices: Option<Arc<PriceTable>>,
}

impl planwave_runner::ops::BatchWatch for MeteredBatch<'_> {
    fn job_started(&self, id: &str) {
        self.inner.job_started(id);
    }

    fn skipped(&self, id: &str) {
        self.inner.skipped(id);
    }

    fn add_tasks(&self, total: usize, done: usize) {
        self.inner.add_tasks(total, done);
    }

    fn job_finished(&self, summary: &planwave_batch::JobSummary) {
        self.inner.job_finished(summary);
    }

    fn for_job(&self, id: &str) -> Arc<dyn EventSink> {
        Arc::new(MeteredSink::new(
            self.inner.for_job(id),
            self.metrics.clone(),
            self.prices.clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_classes_tell_rate_limits_from_outages_and_timeouts() {
        assert_eq!(
            error_class("openai (m): HTTP 429 Too Many Requests"),
            "rate_limited"
        );
        assert_eq!(
            error_class("sim (m): request timed out after 30s"),
            "timeout"
        );
        assert_eq!(
            error_class("openai (m): HTTP 503 overloaded"),
            "server_error"
        );
        assert_eq!(error_class("openai (m): connection reset"), "connection");
        assert_eq!(error_class("openai (m): HTTP 401"), "auth");
        assert_eq!(error_class("something else"), "other");
    }
}
