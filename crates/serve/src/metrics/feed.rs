//! From a run's events to the series: the sinks the front ends tee their events into, and
//! the one task that counts them.
//!
//! A sink's `emit` runs on the engine's actors, so it only picks the few fields a series
//! needs into an [`Obs`] and sends it (a lock-free channel push); everything that takes a
//! lock or keeps state (labelled families, histograms, which task became ready when) happens
//! in [`aggregate`], on its own task.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use planwave_llm::{PriceTable, Usage};
use planwave_plan::{TaskId, ValidatedPlan};
use planwave_record::{Event, EventKind, EventSink};
use planwave_runner::{Watch, Watcher};
use tokio::sync::{mpsc, oneshot};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;

use super::{Call, Currency, Metrics, Outcome, Role, Series, Tokens};

/// What one event contributes to the series.
pub(crate) enum Obs {
    Ready {
        run: u64,
        task: TaskId,
        ts: DateTime<Utc>,
    },
    Started {
        run: u64,
        task: TaskId,
        ts: DateTime<Utc>,
        subagent: bool,
    },
    Ended {
        run: u64,
        task: TaskId,
        outcome: &'static str,
    },
    Retried,
    Blocked,
    Call(Box<CallObs>),
    /// The execution is over: whatever it still had running is not running any more.
    RunEnded {
        run: u64,
    },
    /// Timing the events do not carry, from [`super::MeteredProvider`].
    Timing {
        ttft: Option<f64>,
        limiter_wait: f64,
    },
    Flush(oneshot::Sender<()>),
}

pub(crate) struct CallObs {
    role: String,
    model: String,
    seconds: f64,
    usage: Usage,
    error: Option<String>,
    prices: Option<Arc<PriceTable>>,
}

/// Executions (and batch jobs) are told apart by a number of their own.
static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

/// The [`Obs`] of one event, if it counts for anything.
fn observe(run: u64, event: &Event, prices: &Option<Arc<PriceTable>>) -> Option<Obs> {
    Some(match &event.kind {
        EventKind::TaskReady { task, .. } => Obs::Ready {
            run,
            task: task.clone(),
            ts: event.ts,
        },
        EventKind::TaskStarted { task, tool, .. } => Obs::Started {
            run,
            task: task.clone(),
            ts: event.ts,
            subagent: tool.is_none(),
        },
        EventKind::TaskCompleted { task, .. } => Obs::Ended {
            run,
            task: task.clone(),
            outcome: "completed",
        },
        EventKind::TaskFailed { task, .. } => Obs::Ended {
            run,
            task: task.clone(),
            outcome: "failed",
        },
        EventKind::TaskRetry { .. } => Obs::Retried,
        EventKind::TaskBlocked { .. } => Obs::Blocked,
        EventKind::LlmCall {
            role,
            model,
            duration_ms,
            usage,
            error,
            ..
        } => Obs::Call(Box::new(CallObs {
            role: role.clone(),
            model: model.clone(),
            seconds: duration_ms / 1000.0,
            usage: *usage,
            error: error.clone(),
            prices: prices.clone(),
        })),
        EventKind::RunFinished { .. } => Obs::RunEnded { run },
        _ => return None,
    })
}

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

/// The aggregator: counts every observation, in order, until every sender is gone.
pub(crate) async fn aggregate(series: Series, mut rx: mpsc::UnboundedReceiver<Obs>) {
    // aHash, not SipHash: hashing task ids was the largest cost metrics added to a run
    // (docs/benchmarks.md, issue 39); its key is random, so a plan's ids cannot be chosen to
    // collide.
    let mut ready: ahash::HashMap<(u64, TaskId), DateTime<Utc>> = ahash::HashMap::default();
    let mut running: ahash::HashSet<(u64, TaskId)> = ahash::HashSet::default();
    let mut handles = Handles::default();
    while let Some(obs) = rx.recv().await {
        match obs {
            Obs::Ready { run, task, ts } => {
                ready.insert((run, task), ts);
            }
            Obs::Started {
                run,
                task,
                ts,
                subagent,
            } => {
                let key = (run, task);
                if let Some(at) = ready.remove(&key) {
                    let waited = (ts - at).num_microseconds().unwrap_or(0).max(0);
                    series.dispatch.observe(waited as f64 / 1e6);
                }
                if subagent {
                    running.insert(key);
                }
            }
            Obs::Ended { run, task, outcome } => {
                running.remove(&(run, task));
                handles.task(&series, outcome).inc();
            }
            Obs::Retried => {
                handles.task(&series, "retried").inc();
            }
            Obs::Blocked => {
                handles.task(&series, "blocked").inc();
            }
            Obs::Call(call) => count_call(&series, &mut handles, &call),
            Obs::RunEnded { run } => {
                running.retain(|(r, _)| *r != run);
                ready.retain(|(r, _), _| *r != run);
            }
            Obs::Timing { ttft, limiter_wait } => {
                if let Some(t) = ttft {
                    series.ttft.observe(t);
                }
                series.limiter_wait.observe(limiter_wait);
            }
            Obs::Flush(done) => {
                let _ = done.send(());
            }
        }
        series
            .subagents
            .set(i64::try_from(running.len()).unwrap_or(i64::MAX));
    }
}

/// The labelled series the aggregator touches on every event, looked up once: a family's
/// `get_or_create` hashes and clones every label, and at thousands of calls a second that
/// was most of what metrics cost (docs/benchmarks.md, issue 39). A handle is the same series
/// (an `Arc` inside), and there are a few of each kind (outcomes; roles × models), so a
/// short list searched in order beats a map.
#[derive(Default)]
struct Handles {
    tasks: Vec<(&'static str, Counter)>,
    calls: Vec<CallHandles>,
}

/// One role and model's series for its successful calls.
struct CallHandles {
    role: String,
    model: String,
    ok: Counter,
    seconds: Histogram,
    /// prompt, completion, reasoning, cached: the order of [`TOKEN_KINDS`].
    tokens: [Counter; 4],
}

const TOKEN_KINDS: [&str; 4] = ["prompt", "completion", "reasoning", "cached"];

impl Handles {
    fn task(&mut self, series: &Series, outcome: &'static str) -> &Counter {
        let at = match self.tasks.iter().position(|(o, _)| *o == outcome) {
            Some(at) => at,
            None => {
                let c = series
                    .tasks
                    .get_or_create(&Outcome {
                        outcome: outcome.to_owned(),
                    })
                    .clone();
                self.tasks.push((outcome, c));
                self.tasks.len() - 1
            }
        };
        &self.tasks[at].1
    }

    fn call(&mut self, series: &Series, role: &str, model: &str) -> &CallHandles {
        let at = match self
            .calls
            .iter()
            .position(|h| h.role == role && h.model == model)
        {
            Some(at) => at,
            None => {
                let tokens = TOKEN_KINDS.map(|kind| {
                    series
                        .tokens
                        .get_or_create(&Tokens {
                            role: role.to_owned(),
                            model: model.to_owned(),
                            r#type: kind.into(),
                        })
                        .clone()
                });
                self.calls.push(CallHandles {
                    role: role.to_owned(),
                    model: model.to_owned(),
                    ok: series
                        .calls
                        .get_or_create(&call_labels(role, model, None))
                        .clone(),
                    seconds: series
                        .call_seconds
                        .get_or_create(&Role {
                            role: role.to_owned(),
                        })
                        .clone(),
                    tokens,
                });
                self.calls.len() - 1
            }
        };
        &self.calls[at]
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

fn count_call(series: &Series, handles: &mut Handles, c: &CallObs) {
    let h = handles.call(series, &c.role, &c.model);
    match &c.error {
        None => h.ok.inc(),
        // Failed calls are few, and their class is part of the label: looked up each time.
        Some(e) => series
            .calls
            .get_or_create(&call_labels(&c.role, &c.model, Some(e)))
            .inc(),
    };
    h.seconds.observe(c.seconds);
    let u = &c.usage;
    let counts = [
        u.prompt_tokens,
        u.completion_tokens,
        u.reasoning_tokens,
        u.cached_tokens,
    ];
    for (counter, n) in h.tokens.iter().zip(counts) {
        counter.inc_by(n);
    }
    if let Some(prices) = &c.prices
        && let Some(price) = prices.price(&c.model)
    {
        let currency = prices.currency.clone().unwrap_or_else(|| "USD".into());
        series
            .cost
            .get_or_create(&Currency { currency })
            .inc_by(price.cost(u));
    }
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
    prices: Option<Arc<PriceTable>>,
    run: u64,
}

impl<S: ?Sized> MeteredSink<S> {
    pub fn new(inner: Arc<S>, metrics: Arc<Metrics>, prices: Option<Arc<PriceTable>>) -> Self {
        let prices = prices.filter(|p| !p.is_empty());
        MeteredSink {
            inner,
            metrics,
            prices,
            run: NEXT_RUN.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl<S: EventSink + ?Sized> EventSink for MeteredSink<S> {
    fn emit(&self, event: &Event) {
        if let Some(obs) = observe(self.run, event, &self.prices) {
            self.metrics.send(obs);
        }
        self.inner.emit(event);
    }
}

impl<S: Watcher + ?Sized> Watcher for MeteredSink<S> {
    fn finish(&self) {
        self.metrics.send(Obs::RunEnded { run: self.run });
        self.inner.finish();
    }
}

/// A batch's view (a queue worker's) with every job's events also counted (its jobs' starts
/// and ends are the queue worker's to say: it alone knows a job handed back).
pub struct MeteredBatch<'a> {
    pub inner: &'a dyn planwave_runner::batch::BatchWatch,
    pub metrics: Arc<Metrics>,
    /// The batch's prices (every job of a worker shares its settings).
    pub prices: Option<Arc<PriceTable>>,
}

impl planwave_runner::batch::BatchWatch for MeteredBatch<'_> {
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
