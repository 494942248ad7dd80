//! One execution of a validated plan into its run directory: the journal, the front end's
//! progress view and `--events` stream as sinks, cancellation, and the root span's fields.

use std::sync::Arc;

use crate::error::Context;
use planwave_engine::{
    EventSink, FanoutSink, Journal, JsonlSink, Preset, RunConfig, RunDir, RunRequest, RunResult,
    RunStatus, execute,
};
use planwave_mcp::McpRegistry;
use planwave_plan::ValidatedPlan;
use tokio_util::sync::CancellationToken;

use crate::{Resources, record_run, record_status};

/// How a front end watches executions: a view made for each plan, told when it ends.
pub trait Watch: Send + Sync {
    fn open(&self, plan: &Arc<ValidatedPlan>) -> Arc<dyn Watcher>;
}

/// A front end's view of one execution (a progress bar, a live page).
pub trait Watcher: EventSink {
    /// The execution ended (after its last event).
    fn finish(&self) {}
}

/// Watches nothing.
pub struct Unwatched;

struct NoView;

impl EventSink for NoView {
    fn emit(&self, _event: &planwave_engine::Event) {}
}

impl Watcher for NoView {}

impl Watch for Unwatched {
    fn open(&self, _plan: &Arc<ValidatedPlan>) -> Arc<dyn Watcher> {
        Arc::new(NoView)
    }
}

pub struct Execution {
    pub plan: Arc<ValidatedPlan>,
    pub resources: Resources,
    pub config: RunConfig,
    pub deadline: Option<std::time::Duration>,
    pub out: RunDir,
    /// Closed (flushed) when the run ends.
    pub events: Arc<Journal>,
    /// A live copy of every event the journal gets (`--events`), if asked for.
    pub stream: Option<Arc<JsonlSink>>,
    pub run_id: uuid::Uuid,
    /// Tasks completed by an earlier attempt (resume, recovery passes).
    pub preset: Vec<Preset>,
    /// Subagent slots shared with other runs (a batch).
    pub slots: Option<Arc<tokio::sync::Semaphore>>,
    pub cancel: CancellationToken,
    /// This execution is the command's own run: its id, topic and status go on the root span
    /// (a batch's jobs are not).
    pub root_span: bool,
}

impl Execution {
    fn mcp(&self) -> Option<Arc<McpRegistry>> {
        self.resources.mcp.clone()
    }
}

/// Runs a plan into its run directory; the journal is closed when it ends.
pub async fn execute_plan(x: Execution, watch: &dyn Watch) -> crate::Result<RunResult> {
    let view = watch.open(&x.plan);
    let mut sinks: Vec<Arc<dyn EventSink>> = vec![view.clone()];
    if let Some(s) = &x.stream {
        sinks.push(s.clone());
    }
    if x.root_span {
        record_run(&x.run_id, &x.plan);
    }
    let mcp = x.mcp();
    let result = execute(RunRequest {
        run_id: x.run_id,
        plan: x.plan,
        provider: x.resources.provider.clone(),
        prompts: x.resources.templates.clone(),
        sink: Arc::new(FanoutSink(sinks)),
        journal: Some(x.events.clone()),
        config: x.config,
        deadline: x.deadline,
        slots: x.slots,
        output: Some(x.out.clone()),
        cancel: x.cancel,
        preset: x.preset,
        mcp,
    })
    .await;
    view.finish();
    x.events.close().context("writing events.jsonl")?;
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
    result.context("running the plan")
}
