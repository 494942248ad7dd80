//! [`execute`]: one run from a validated plan to a report and its records.

use std::sync::Arc;
use std::time::Instant;

use planwave_llm::LlmProvider;
use planwave_plan::ValidatedPlan;
use planwave_record::{CancelReason, EventKind, EventSink, Preset, RunResult, RunStatus};
use planwave_storage::{Journal, RunDir, section_files};
use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::config::RunConfig;
use crate::error::EngineError;
use crate::messages::SupervisorMsg;
use crate::shared::RunShared;
use crate::supervisor::{Supervisor, SupervisorArgs, SupervisorOutcome};
use planwave_prompts::PromptSet;
use planwave_record::timefmt;

/// Everything one run needs.
pub struct RunRequest {
    pub run_id: uuid::Uuid,
    pub plan: Arc<ValidatedPlan>,
    pub provider: Arc<dyn LlmProvider>,
    pub prompts: Arc<dyn PromptSet>,
    pub sink: Arc<dyn EventSink>,
    /// The durable journal (`events.jsonl`); `None` keeps no record (benchmarks, embedding).
    pub journal: Option<Arc<Journal>>,
    pub config: RunConfig,
    /// The whole run stops (like Ctrl-C, resumable) when this much time has passed.
    pub deadline: Option<std::time::Duration>,
    /// Subagent slots shared with other runs (a batch): a subagent holds one while it works.
    pub slots: Option<crate::Slots>,
    /// Where files go; `None` keeps everything in memory (benchmarks, embedding).
    pub output: Option<RunDir>,
    pub cancel: CancellationToken,
    /// Tasks already completed by an earlier attempt of this run.
    pub preset: Vec<Preset>,
    /// MCP tools for subagents and tool steps; started (and shut down) by the caller, so one
    /// registry can serve many runs.
    pub mcp: Option<Arc<planwave_mcp::McpRegistry>>,
}

impl RunRequest {
    /// A run held in memory: the built-in prompts, no event sink, journal, files, deadline,
    /// shared slots or MCP tools, default settings, a fresh id. For embedding, benchmarks and
    /// tests; set any field with struct update syntax (`RunRequest { sink, ..in_memory }`).
    pub fn in_memory(plan: Arc<ValidatedPlan>, provider: Arc<dyn LlmProvider>) -> Self {
        RunRequest {
            run_id: uuid::Uuid::new_v4(),
            plan,
            provider,
            prompts: Arc::new(planwave_prompts::Templates::builtin()),
            sink: Arc::new(planwave_record::NullSink),
            journal: None,
            config: RunConfig::default(),
            deadline: None,
            slots: None,
            output: None,
            cancel: CancellationToken::new(),
            preset: Vec::new(),
            mcp: None,
        }
    }
}

/// Runs a plan to the end (or until cancelled): every task ends completed, failed or blocked,
/// the report is written, and `run.json` records the outcome.
pub async fn execute(req: RunRequest) -> Result<RunResult, EngineError> {
    let started = Started::now(&req);
    let shared = start(&req)?;
    // Detaches when the run ends, however it ends.
    let _mcp_events = crate::mcp_events::attach(&shared);
    let run = spawn_supervisor(&shared, &req, req.preset.clone(), false, started.clock).await?;
    let watcher = watch_for_stop(req.cancel.clone(), req.deadline, &run.supervisor);
    let outcome = run.outcome().await;
    watcher.abort();
    match outcome {
        Ok(outcome) => conclude(&req, &shared, outcome, started),
        Err(e) => Err(lost(&req, e)),
    }
}

/// When and from what a run started, for its record.
pub(crate) struct Started {
    pub at: chrono::DateTime<chrono::Utc>,
    pub clock: Instant,
    pub retries_before: std::collections::BTreeMap<String, u64>,
}

impl Started {
    pub(crate) fn now(req: &RunRequest) -> Started {
        Started {
            at: timefmt::now(),
            clock: Instant::now(),
            retries_before: req.provider.retry_counts(),
        }
    }
}

/// A run that ended without its outcome: the journal still gets what it was given, so a
/// resume goes on from every completion it acknowledged.
pub(crate) fn lost(req: &RunRequest, e: EngineError) -> EngineError {
    if let Some(j) = &req.journal
        && let Err(sync) = j.sync()
    {
        tracing::warn!("events.jsonl: {sync}");
    }
    e
}

/// The run's record and `run.json`, from what its supervisor handed over.
pub(crate) fn conclude(
    req: &RunRequest,
    shared: &Arc<RunShared>,
    outcome: SupervisorOutcome,
    started: Started,
) -> Result<RunResult, EngineError> {
    let SupervisorOutcome {
        mut records,
        sections,
        mut stats,
        cancelled,
        warnings,
        calls,
        integration,
    } = outcome;
    let integration = integration.ok_or(EngineError::Lost("integrator"))?;
    for (i, rec) in records.iter_mut().enumerate() {
        if rec.status.has_section() && integration.written.get(i).copied().unwrap_or(false) {
            rec.section_file = Some(shared.section_files[i].clone());
        }
    }
    stats.usage += integration.summary_usage;
    stats.transport_retries = shared
        .provider
        .retry_counts()
        .into_iter()
        .map(|(cause, n)| {
            let before = started.retries_before.get(&cause).copied().unwrap_or(0);
            (cause, n.saturating_sub(before))
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    stats.cost = req
        .config
        .prices
        .estimate(calls.iter().map(|c| (c.model.as_str(), c.usage())));
    let status = if cancelled.is_some() {
        RunStatus::Cancelled
    } else {
        RunStatus::from_counts(
            stats.tasks - stats.optional_failed,
            stats.completed,
            stats.completed + stats.truncated,
        )
    };
    shared.emit(EventKind::RunFinished {
        run_id: req.run_id,
        status: status.as_str().into(),
        completed: stats.completed,
        failed: stats.failed,
        blocked: stats.blocked,
        duration_ms: started.clock.elapsed().as_secs_f64() * 1000.0,
        reason: cancelled,
    });
    let result = RunResult {
        run_id: req.run_id,
        status,
        stop_reason: cancelled,
        started_at: started.at,
        finished_at: timefmt::now(),
        topic: shared.plan.spec().topic.clone(),
        plan_fallback: shared.plan.spec().about.fallback().map(str::to_owned),
        plan_source: req.config.plan_source,
        llm: shared.provider.info().into(),
        answer: planwave_report::step_answer(&shared.plan, &records, &sections),
        stats,
        tasks: records,
        calls,
        sections,
        report: integration.report,
        warnings: warnings
            .into_iter()
            .chain(integration.write_errors)
            .chain(
                integration
                    .summary_error
                    .map(|e| format!("executive summary: {e}")),
            )
            .collect(),
    };
    finish(req, result)
}

/// The run's shared state, `plan.json` written and `run_started` emitted.
pub(crate) fn start(req: &RunRequest) -> Result<Arc<RunShared>, EngineError> {
    let shared = prepare(req, req.plan.clone());
    if let Some(out) = &req.output {
        out.write_json("plan.json", shared.plan.spec())?;
    }
    announce(req, &shared);
    Ok(shared)
}

/// The shared state of a run of `plan` (which is `req.plan`, or a streamed plan so far).
pub(crate) fn prepare(req: &RunRequest, plan: Arc<ValidatedPlan>) -> Arc<RunShared> {
    // File names only matter with a run directory: without one (load tests, embedding) the
    // per-task naming was 2 % of a zero-latency run, all before the first dispatch.
    let files = Arc::new(match &req.output {
        Some(_) => section_files(
            (0..plan.len())
                .map(|i| plan.id(i).key())
                .collect::<Vec<_>>()
                .iter()
                .map(|k| k.as_ref()),
        ),
        None => Vec::new(),
    });
    Arc::new(RunShared {
        plan,
        provider: req.provider.clone(),
        prompts: req.prompts.clone(),
        sink: req.sink.clone(),
        journal: req.journal.clone(),
        slots: req.slots.clone(),
        output: req.output.clone(),
        section_files: files,
        config: req.config.clone(),
        mcp: req.mcp.clone(),
        span: tracing::Span::current(),
    })
}

/// `run_started`, synced.
pub(crate) fn announce(req: &RunRequest, shared: &RunShared) {
    let plan = &shared.plan;
    let info = req.provider.info();
    shared.emit(EventKind::RunStarted {
        run_id: req.run_id,
        topic: plan.spec().topic.clone(),
        tasks: plan.len(),
        waves: plan.waves().len(),
        schedule: req.config.schedule.as_str().into(),
        concurrency: req.config.concurrency,
        provider: info.provider,
        model: info.model,
        simulated: info.simulated,
    });
    // The journal syncs only for events someone waits on (completions); the run's start is
    // one of them, so a crash before the first completion still leaves a resumable journal.
    if let Some(j) = &req.journal
        && let Err(e) = j.sync()
    {
        tracing::warn!("events.jsonl: {e}");
    }
}

/// A run's supervisor, the root of its actors.
pub(crate) struct Running {
    pub supervisor: ActorRef<SupervisorMsg>,
    join: ractor::concurrency::JoinHandle<()>,
    pub done: oneshot::Receiver<Result<SupervisorOutcome, EngineError>>,
}

impl Running {
    /// The run's outcome, once the supervisor has stopped.
    pub(crate) async fn outcome(self) -> Result<SupervisorOutcome, EngineError> {
        let outcome = self.done.await;
        let _ = self.join.await;
        // Dropped unanswered: the supervisor panicked.
        outcome.unwrap_or(Err(EngineError::Lost("supervisor")))
    }

    /// Waits for the supervisor to stop, once `done` has been read.
    pub(crate) async fn stopped(self) {
        let _ = self.join.await;
    }
}

/// The supervisor; `open` for a streamed plan (no integrator until the plan closes).
pub(crate) async fn spawn_supervisor(
    shared: &Arc<RunShared>,
    req: &RunRequest,
    preset: Vec<Preset>,
    open: bool,
    started: Instant,
) -> Result<Running, EngineError> {
    let (done_tx, done) = oneshot::channel();
    let args = SupervisorArgs {
        shared: shared.clone(),
        done: done_tx,
        preset,
        open,
        started,
        cancel: req.cancel.clone(),
    };
    let (supervisor, join) =
        Actor::spawn(None, Supervisor, args)
            .await
            .map_err(|e| EngineError::Spawn {
                actor: "supervisor",
                reason: e.to_string(),
            })?;
    Ok(Running {
        supervisor,
        join,
        done,
    })
}

/// Tells the supervisor to stop on the caller's cancellation or at the deadline.
pub(crate) fn watch_for_stop(
    cancel: CancellationToken,
    deadline: Option<std::time::Duration>,
    supervisor: &ActorRef<SupervisorMsg>,
) -> tokio::task::JoinHandle<()> {
    let supervisor = supervisor.clone();
    tokio::spawn(async move {
        let reason = tokio::select! {
            _ = cancel.cancelled() => CancelReason::Interrupted,
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            } => CancelReason::Deadline,
        };
        let _ = supervisor.send_message(SupervisorMsg::Cancel(reason));
    })
}

/// `run.json`, once the journal holds everything it claims.
fn finish(req: &RunRequest, mut result: RunResult) -> Result<RunResult, EngineError> {
    // run.json never claims more than the journal holds.
    if let Some(j) = &req.journal
        && let Err(e) = j.sync()
    {
        result.warnings.push(format!("events.jsonl: {e}"));
    }
    if let Some(out) = &req.output {
        // Section files were written without syncs (the journal holds their text); one
        // filesystem sync at the end makes them durable too, for readers of the directory.
        if out.is_durable()
            && let Err(e) = out.sync_written()
        {
            result
                .warnings
                .push(format!("syncing the run directory: {e}"));
        }
        out.write_run(&result)?;
    }
    Ok(result)
}
