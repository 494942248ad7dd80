//! One execution of a validated plan into its run directory: the journal, the front end's
//! progress view and `--events` stream as sinks, cancellation, and the root span's fields.

use std::sync::Arc;

use crate::error::Context;
use planwave_engine::{RunRequest, execute};
use planwave_plan::ValidatedPlan;
use planwave_record::{EventSink, FanoutSink, RunResult, RunStatus};
use planwave_storage::JsonlSink;

use crate::{Resources, record_run, record_status};

/// How a front end watches executions: a view made for each plan, told when it ends.
pub trait Watch: Send + Sync {
    fn open(&self, plan: &Arc<ValidatedPlan>) -> Arc<dyn Watcher>;

    /// A run goes on from its journal: `completed` of `tasks` were done before.
    fn resumed(&self, _run_id: uuid::Uuid, _completed: usize, _tasks: usize) {}
}

/// A front end's view of one execution (a progress bar, a live page).
pub trait Watcher: EventSink {
    /// The execution ended (after its last event).
    fn finish(&self) {}
}

/// One execution: the engine's request, and what the runner does around it.
pub struct Execution {
    /// The run as the engine takes it (see [`Resources::request`]): its journal is the run's
    /// `events.jsonl`, closed when it ends; its sink is set here, to the front end's view,
    /// the `--events` stream and the Batch API's listener.
    pub run: RunRequest,
    /// What the request was made from: the Batch API client hears of its calls, the plan
    /// cache of their times.
    pub resources: Resources,
    /// A live copy of every event the journal gets (`--events`), if asked for.
    pub stream: Option<Arc<JsonlSink>>,
    /// This execution is the command's own run: its id, topic and status go on the root span
    /// (a batch's jobs are not).
    pub root_span: bool,
}

/// Runs a plan into its run directory; the journal is closed when it ends.
pub async fn execute_plan(x: Execution, watch: &dyn Watch) -> crate::Result<RunResult> {
    let started = unix_ms();
    let view = watch.open(&x.run.plan);
    let mut sinks: Vec<Arc<dyn EventSink>> = vec![view.clone()];
    if let Some(s) = &x.stream {
        sinks.push(s.clone());
    }
    if x.root_span {
        record_run(&x.run.run_id, &x.run.plan);
    }
    let listening = listen_to_batches(&x, &mut sinks);
    let events = x.run.journal.clone();
    let sink = Arc::new(FanoutSink(sinks));
    let result = execute(RunRequest { sink, ..x.run }).await;
    drop(listening);
    view.finish();
    if let Some(events) = events {
        events.close().context("writing events.jsonl")?;
    }
    // A stream still held elsewhere (the reflective loop's later passes) stays open; its
    // last holder closes it.
    if let Some(s) = &x.stream
        && Arc::strong_count(s) == 1
    {
        s.close().context("writing the --events stream")?;
    }
    if let Ok(r) = &result
        && x.root_span
    {
        record_outcome(r);
    }
    if let Ok(r) = &result {
        record_call_times(&x.resources, r, started);
    }
    result.context("running the plan")
}

/// The run's model-call times, kept beside the plan cache when there is one; a failure
/// costs the estimate a sample, never the run.
fn record_call_times(resources: &Resources, result: &RunResult, started_ms: i64) {
    let Some(cache) = &resources.call_times else {
        return;
    };
    if let Err(e) = cache.record_call_times(&result.calls, started_ms) {
        tracing::warn!(
            "plan cache: cannot record call times in {}: {e}",
            cache.call_times_path().display()
        );
    }
}

/// Now, in Unix milliseconds (call records' start times are compared with it).
fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A front end's view of an execution whose plan is still streaming: events wait here until
/// the final plan opens the view, then go to it in order.
pub(crate) struct DeferredView(std::sync::Mutex<Deferred>);

enum Deferred {
    Held(Vec<planwave_record::Event>),
    Open(Arc<dyn Watcher>),
}

impl DeferredView {
    pub(crate) fn new() -> Arc<DeferredView> {
        Arc::new(DeferredView(std::sync::Mutex::new(Deferred::Held(
            Vec::new(),
        ))))
    }

    /// Opens the view for the final plan and hands it the events so far.
    pub(crate) fn open(&self, view: Arc<dyn Watcher>) {
        let Ok(mut state) = self.0.lock() else {
            return;
        };
        if let Deferred::Held(held) = &*state {
            for e in held {
                view.emit(e);
            }
        }
        *state = Deferred::Open(view);
    }

    pub(crate) fn finish(&self) {
        if let Ok(state) = self.0.lock()
            && let Deferred::Open(view) = &*state
        {
            view.finish();
        }
    }
}

impl EventSink for DeferredView {
    fn emit(&self, event: &planwave_record::Event) {
        let Ok(mut state) = self.0.lock() else {
            return;
        };
        match &mut *state {
            Deferred::Held(held) => held.push(event.clone()),
            Deferred::Open(view) => view.emit(event),
        }
    }
}

/// [`execute_plan`] for a plan that streams: `x.plan` is the plan so far, `feed` the rest
/// (see `planwave_engine::execute_streaming`); `view` is opened by the caller when the plan
/// is final. `None`: the plan never closed (planning failed or was interrupted).
pub(crate) async fn execute_plan_streaming(
    x: Execution,
    feed: tokio::sync::mpsc::UnboundedReceiver<planwave_engine::PlanFeed>,
    view: Arc<DeferredView>,
) -> crate::Result<Option<RunResult>> {
    let started = unix_ms();
    let mut sinks: Vec<Arc<dyn EventSink>> = vec![view.clone()];
    if let Some(s) = &x.stream {
        sinks.push(s.clone());
    }
    let listening = listen_to_batches(&x, &mut sinks);
    let sink = Arc::new(FanoutSink(sinks));
    let result = planwave_engine::execute_streaming(RunRequest { sink, ..x.run }, feed).await;
    drop(listening);
    view.finish();
    if let Ok(Some(r)) = &result
        && x.root_span
    {
        record_outcome(r);
    }
    if let Ok(Some(r)) = &result {
        record_call_times(&x.resources, r, started);
    }
    result.context("running the plan")
}

/// With the Batch API, the execution's view, stream and journal hear of its job's batches'
/// states while it runs (the journal keeps them as `provider_batch` events), and the client
/// hears (from `sinks`, which gains its sink) which of its tasks are running.
fn listen_to_batches(
    x: &Execution,
    sinks: &mut Vec<Arc<dyn EventSink>>,
) -> Option<crate::provider_batches::Listening> {
    let mut all = sinks.clone();
    if let Some(events) = &x.run.journal {
        all.push(events.clone());
    }
    let listening = x.resources.listen_to_batches(Arc::new(FanoutSink(all)))?;
    sinks.push(listening.activity());
    Some(listening)
}

/// The run's outcome on its root span: the status, and for a run that did not complete, how
/// many tasks did.
fn record_outcome(r: &RunResult) {
    let s = &r.stats;
    record_status(
        r.status.as_str(),
        (r.status != RunStatus::Completed).then(|| {
            format!(
                "{} of {} tasks completed ({} failed, {} blocked)",
                s.completed, s.tasks, s.failed, s.blocked
            )
        }),
    );
}
