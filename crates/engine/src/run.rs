//! [`execute`]: one run from a validated plan to a report and its records.

use std::sync::Arc;
use std::time::Instant;

use planwave_llm::LlmProvider;
use planwave_plan::ValidatedPlan;
use planwave_record::{
    CancelReason, EventKind, EventSink, Preset, RunResult, RunStats, RunStatus, TaskRecord,
    TaskStatus,
};
use planwave_storage::{Journal, RunDir, RunDirError, section_files};
use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::RunConfig;
use crate::integrator::{FinishRequest, Integration, Integrator, IntegratorArgs, IntegratorMsg};
use crate::shared::RunShared;
use crate::supervisor::{Supervisor, SupervisorArgs, SupervisorMsg, SupervisorOutcome};
use crate::timefmt;
use planwave_prompts::PromptSet;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("could not start the {actor} actor: {reason}")]
    Spawn { actor: &'static str, reason: String },
    #[error("the {0} actor stopped before the run finished")]
    Lost(&'static str),
    #[error(transparent)]
    Output(#[from] RunDirError),
}

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
    let started_at = timefmt::now();
    let clock = Instant::now();
    let retries_before = req.provider.retry_counts();
    let (shared, files) = start(&req)?;
    // Detaches when the run ends, however it ends.
    let _mcp_events = crate::mcp_events::attach(&shared);
    let actors = spawn_actors(&shared, &files, req.preset.clone()).await?;
    let watcher = watch_for_stop(req.cancel.clone(), req.deadline, &actors.supervisor);
    let outcome = actors.done.await;
    watcher.abort();
    let Ok(outcome) = outcome else {
        actors.integrator.stop(None);
        return Err(EngineError::Lost("supervisor"));
    };
    let _ = actors.supervisor_join.await;
    let ended = Ended {
        started_at,
        clock,
        retries_before,
        integrator: actors.integrator,
        integrator_join: actors.integrator_join,
    };
    conclude(&req, &shared, &files, outcome, ended).await
}

/// What [`conclude`] needs of a run whose tasks have all ended.
pub(crate) struct Ended {
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub clock: Instant,
    pub retries_before: std::collections::BTreeMap<String, u64>,
    pub integrator: ActorRef<IntegratorMsg>,
    pub integrator_join: JoinHandle<()>,
}

/// Integration, the run's record and `run.json`, once every task has ended.
pub(crate) async fn conclude(
    req: &RunRequest,
    shared: &Arc<RunShared>,
    files: &[String],
    outcome: SupervisorOutcome,
    ended: Ended,
) -> Result<RunResult, EngineError> {
    let Ended {
        started_at,
        clock,
        retries_before,
        integrator,
        integrator_join,
    } = ended;
    // The scheduling makespan: first dispatch to last task settled, before integration.
    let makespan_ms = clock.elapsed().as_secs_f64() * 1000.0;

    // Each completed record carries its section's quality warnings (checked by its subagent,
    // or when a resumed run's kept section was preset): the integrator's prompt and the
    // report's appendix name them.
    let records = outcome.records;
    // Shared with the integrator for the report, not deep-copied (10,000 records are a few MB).
    let records = Arc::new(records);
    let mut stats = run_stats(&shared.plan, &records, &req.config, makespan_ms);
    stats.retries = outcome.retries;
    let stop = Stop {
        reason: outcome.cancelled,
        cancel: req.cancel.clone(),
    };
    let integration =
        integrate(shared, integrator, integrator_join, &records, &stats, stop).await?;
    // The integrator dropped its handle when it answered; cloning is only a fallback.
    let mut records = Arc::try_unwrap(records).unwrap_or_else(|shared| (*shared).clone());
    for (i, rec) in records.iter_mut().enumerate() {
        if rec.status == TaskStatus::Completed
            && integration.written.get(i).copied().unwrap_or(false)
        {
            rec.section_file = Some(files[i].clone());
        }
    }
    stats.usage += integration.summary_usage;
    stats.transport_retries = shared
        .provider
        .retry_counts()
        .into_iter()
        .map(|(cause, n)| {
            let before = retries_before.get(&cause).copied().unwrap_or(0);
            (cause, n.saturating_sub(before))
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let calls = shared.take_calls();
    stats.cost = req
        .config
        .prices
        .estimate(calls.iter().map(|c| (c.model.as_str(), c.usage())));
    let status = if outcome.cancelled.is_some() {
        RunStatus::Cancelled
    } else {
        RunStatus::from_counts(stats.tasks - stats.optional_failed, stats.completed)
    };
    shared.emit(EventKind::RunFinished {
        run_id: req.run_id,
        status: status.as_str().into(),
        completed: stats.completed,
        failed: stats.failed,
        blocked: stats.blocked,
        duration_ms: clock.elapsed().as_secs_f64() * 1000.0,
        reason: outcome.cancelled,
    });
    let result = RunResult {
        run_id: req.run_id,
        status,
        stop_reason: outcome.cancelled,
        started_at,
        finished_at: timefmt::now(),
        topic: shared.plan.spec().topic.clone(),
        plan_fallback: shared.plan.spec().about.fallback().map(str::to_owned),
        plan_source: req.config.plan_source,
        llm: shared.provider.info().into(),
        answer: planwave_report::step_answer(&shared.plan, &records, &outcome.sections),
        stats,
        tasks: records,
        calls,
        sections: outcome.sections,
        report: integration.report,
        warnings: outcome
            .warnings
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

/// The run's shared state and section file names, its presets kept, `plan.json` written and
/// `run_started` emitted.
pub(crate) fn start(req: &RunRequest) -> Result<(Arc<RunShared>, Arc<Vec<String>>), EngineError> {
    // One call per task and the summary, unless retries or tools add more.
    let calls = Arc::new(std::sync::Mutex::new(Vec::with_capacity(
        req.plan.len() + 1,
    )));
    let (shared, files) = prepare(req, req.plan.clone(), calls);
    for p in &req.preset {
        // The result the step's first pass gave, when its record kept it (run directories
        // from before results were kept: read from the section).
        let kept = p.record.result.as_deref();
        shared
            .results
            .keep(p.index, || planwave_record::read_result(kept, &p.section));
    }
    if let Some(out) = &req.output {
        out.write_json("plan.json", shared.plan.spec())?;
    }
    announce(req, &shared);
    Ok((shared, files))
}

/// The shared state of a run of `plan` (which is `req.plan`, or a streamed plan so far) and
/// its section file names.
/// `calls` collects the model calls (shared by every plan of a streamed run).
pub(crate) fn prepare(
    req: &RunRequest,
    plan: Arc<ValidatedPlan>,
    calls: crate::shared::Calls,
) -> (Arc<RunShared>, Arc<Vec<String>>) {
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
    let shared = Arc::new(RunShared {
        plan: plan.clone(),
        provider: req.provider.clone(),
        prompts: req.prompts.clone(),
        sink: req.sink.clone(),
        journal: req.journal.clone(),
        slots: req.slots.clone(),
        output: req.output.clone(),
        section_files: files.clone(),
        config: req.config.clone(),
        calls,
        mcp: req.mcp.clone(),
        results: crate::results::Results::for_plan(&plan),
        span: tracing::Span::current(),
    });
    (shared, files)
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

/// The run's two long-lived actors.
struct Actors {
    integrator: ActorRef<IntegratorMsg>,
    integrator_join: JoinHandle<()>,
    supervisor: ActorRef<SupervisorMsg>,
    supervisor_join: JoinHandle<()>,
    /// The supervisor's outcome, once every task has ended.
    done: oneshot::Receiver<SupervisorOutcome>,
}

async fn spawn_actors(
    shared: &Arc<RunShared>,
    files: &Arc<Vec<String>>,
    preset: Vec<Preset>,
) -> Result<Actors, EngineError> {
    let (integrator, integrator_join) = spawn_integrator(shared, files).await?;
    match spawn_supervisor(shared, Some(integrator.clone()), preset, false).await {
        Ok((supervisor, supervisor_join, done)) => Ok(Actors {
            integrator,
            integrator_join,
            supervisor,
            supervisor_join,
            done,
        }),
        Err(e) => {
            integrator.stop(None);
            Err(e)
        }
    }
}

pub(crate) async fn spawn_integrator(
    shared: &Arc<RunShared>,
    files: &Arc<Vec<String>>,
) -> Result<(ActorRef<IntegratorMsg>, JoinHandle<()>), EngineError> {
    Actor::spawn(
        None,
        Integrator,
        IntegratorArgs {
            shared: shared.clone(),
            output: shared.output.clone(),
            section_files: files.clone(),
        },
    )
    .await
    .map_err(|e| EngineError::Spawn {
        actor: "integrator",
        reason: e.to_string(),
    })
}

/// The supervisor; `open` for a streamed plan (no integrator until the plan closes).
pub(crate) async fn spawn_supervisor(
    shared: &Arc<RunShared>,
    integrator: Option<ActorRef<IntegratorMsg>>,
    preset: Vec<Preset>,
    open: bool,
) -> Result<
    (
        ActorRef<SupervisorMsg>,
        JoinHandle<()>,
        oneshot::Receiver<SupervisorOutcome>,
    ),
    EngineError,
> {
    let (done_tx, done) = oneshot::channel();
    let (supervisor, join) = Actor::spawn(
        None,
        Supervisor,
        SupervisorArgs {
            shared: shared.clone(),
            integrator,
            done: done_tx,
            preset,
            open,
        },
    )
    .await
    .map_err(|e| EngineError::Spawn {
        actor: "supervisor",
        reason: e.to_string(),
    })?;
    Ok((supervisor, join, done))
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

/// Counts, usage and the plan's shape, before integration adds the summary's usage.
fn run_stats(
    plan: &ValidatedPlan,
    records: &[TaskRecord],
    config: &RunConfig,
    makespan_ms: f64,
) -> RunStats {
    let count = |s: TaskStatus| records.iter().filter(|r| r.status == s).count();
    let mut usage = planwave_llm::Usage::default();
    for r in records {
        usage += r.usage;
    }
    RunStats {
        tasks: plan.len(),
        completed: count(TaskStatus::Completed),
        failed: count(TaskStatus::Failed),
        blocked: count(TaskStatus::Blocked),
        optional_failed: records
            .iter()
            .filter(|r| r.optional && r.status == TaskStatus::Failed)
            .count(),
        waves: plan.waves().len(),
        critical_path: plan
            .critical_path()
            .iter()
            .map(|&i| plan.id(i as usize).clone())
            .collect(),
        makespan_ms,
        schedule: Some(config.schedule),
        concurrency: config.concurrency,
        retries: 0,
        transport_retries: std::collections::BTreeMap::new(),
        usage,
        cost: None,
    }
}

/// Whether the run was stopped, and the caller's cancellation for a stop that comes during
/// integration: either way no model call starts after it.
struct Stop {
    reason: Option<CancelReason>,
    cancel: CancellationToken,
}

/// The integrator's summary and report, then the integrator stopped.
async fn integrate(
    shared: &RunShared,
    integrator: ActorRef<IntegratorMsg>,
    integrator_join: JoinHandle<()>,
    records: &Arc<Vec<TaskRecord>>,
    stats: &RunStats,
    stop: Stop,
) -> Result<Integration, EngineError> {
    let integration = integrator
        .call(
            |reply| {
                IntegratorMsg::Finish(
                    Box::new(FinishRequest {
                        records: records.clone(),
                        stats: stats.clone(),
                        span: tracing::info_span!(target: "planwave::engine", parent: &shared.span, "integrate"),
                        stopped: stop.reason,
                        cancel: stop.cancel,
                    }),
                    reply,
                )
            },
            None,
        )
        .await;
    integrator.stop(None);
    let _ = integrator_join.await;
    match integration {
        Ok(ractor::rpc::CallResult::Success(i)) => Ok(i),
        _ => Err(EngineError::Lost("integrator")),
    }
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
