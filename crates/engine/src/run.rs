//! [`execute`]: one run from a validated plan to a report and its records.

use std::sync::Arc;
use std::time::Instant;

use planwave_llm::LlmProvider;
use planwave_plan::ValidatedPlan;
use ractor::Actor;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::config::RunConfig;
use crate::event::{EventKind, EventSink};
use crate::integrator::{FinishRequest, Integrator, IntegratorArgs, IntegratorMsg};
use crate::journal::Journal;
use crate::outcome::CancelReason;
use crate::outcome::{RunResult, RunStats, RunStatus, TaskStatus};
use crate::rundir::{RunDir, RunDirError, section_files};
use crate::shared::RunShared;
use crate::supervisor::{Preset, Supervisor, SupervisorArgs};
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
    pub slots: Option<Arc<tokio::sync::Semaphore>>,
    /// Where files go; `None` keeps everything in memory (benchmarks, embedding).
    pub output: Option<RunDir>,
    pub cancel: CancellationToken,
    /// Tasks already completed by an earlier attempt of this run.
    pub preset: Vec<Preset>,
    /// MCP tools for subagents and tool steps; started (and shut down) by the caller, so one
    /// registry can serve many runs.
    pub mcp: Option<Arc<planwave_mcp::McpRegistry>>,
}

/// Runs a plan to the end (or until cancelled): every task ends completed, failed or blocked,
/// the report is written, and `run.json` records the outcome.
pub async fn execute(req: RunRequest) -> Result<RunResult, EngineError> {
    let started_at = timefmt::now();
    let clock = Instant::now();
    let plan = req.plan.clone();
    let info = req.provider.info();
    let retries_before = req.provider.retry_counts();
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
        provider: req.provider,
        prompts: req.prompts,
        sink: req.sink,
        journal: req.journal.clone(),
        slots: req.slots.clone(),
        output: req.output.clone(),
        section_files: files.clone(),
        config: req.config.clone(),
        // One call per task and the summary, unless retries or tools add more.
        calls: std::sync::Mutex::new(Vec::with_capacity(plan.len() + 1)),
        mcp: req.mcp.clone(),
        results: crate::results::Results::for_plan(&plan),
        span: tracing::Span::current(),
    });
    for p in &req.preset {
        shared.results.keep(p.index, || {
            serde_json::from_str(&p.section)
                .unwrap_or_else(|_| serde_json::Value::String(p.section.to_string()))
        });
    }
    if let Some(out) = &req.output {
        out.write_json("plan.json", plan.spec())?;
    }
    shared.emit(EventKind::RunStarted {
        run_id: req.run_id,
        topic: plan.spec().topic.clone(),
        tasks: plan.len(),
        waves: plan.waves().len(),
        schedule: req.config.schedule.as_str().into(),
        concurrency: req.config.concurrency,
        provider: info.provider.clone(),
        model: info.model.clone(),
        simulated: info.simulated,
    });
    // Detaches when the run ends, however it ends.
    let _mcp_events = crate::mcp_events::attach(&shared);

    let (integrator, integrator_join) = Actor::spawn(
        None,
        Integrator,
        IntegratorArgs {
            shared: shared.clone(),
            output: req.output.clone(),
            section_files: files.clone(),
        },
    )
    .await
    .map_err(|e| EngineError::Spawn {
        actor: "integrator",
        reason: e.to_string(),
    })?;
    let (done_tx, done_rx) = oneshot::channel();
    let spawned = Actor::spawn(
        None,
        Supervisor,
        SupervisorArgs {
            shared: shared.clone(),
            integrator: integrator.clone(),
            done: done_tx,
            preset: req.preset,
        },
    )
    .await;
    let (supervisor, supervisor_join) = match spawned {
        Ok(s) => s,
        Err(e) => {
            integrator.stop(None);
            return Err(EngineError::Spawn {
                actor: "supervisor",
                reason: e.to_string(),
            });
        }
    };
    let watcher = {
        let cancel = req.cancel.clone();
        let supervisor = supervisor.clone();
        let deadline = req.deadline;
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
            let _ = supervisor.send_message(crate::supervisor::SupervisorMsg::Cancel(reason));
        })
    };
    let outcome = done_rx.await;
    watcher.abort();
    let Ok(outcome) = outcome else {
        integrator.stop(None);
        return Err(EngineError::Lost("supervisor"));
    };
    let _ = supervisor_join.await;
    // The scheduling makespan: first dispatch to last task settled, before integration.
    let makespan_ms = clock.elapsed().as_secs_f64() * 1000.0;

    // Shared with the integrator for the report, not deep-copied (10,000 records are a few MB).
    let records = Arc::new(outcome.records);
    let count = |s: TaskStatus| records.iter().filter(|r| r.status == s).count();
    let (completed, failed, blocked) = (
        count(TaskStatus::Completed),
        count(TaskStatus::Failed),
        count(TaskStatus::Blocked),
    );
    let mut usage = planwave_llm::Usage::default();
    for r in records.iter() {
        usage += r.usage;
    }
    let mut stats = RunStats {
        tasks: plan.len(),
        completed,
        failed,
        blocked,
        waves: plan.waves().len(),
        critical_path: plan
            .critical_path()
            .iter()
            .map(|&i| plan.id(i as usize).clone())
            .collect(),
        makespan_ms,
        schedule: Some(req.config.schedule),
        concurrency: req.config.concurrency,
        retries: outcome.retries,
        transport_retries: std::collections::BTreeMap::new(),
        usage,
        cost: None,
    };
    let integration = integrator
        .call(
            |reply| {
                IntegratorMsg::Finish(
                    Box::new(FinishRequest {
                        records: records.clone(),
                        stats: stats.clone(),
                        span: tracing::info_span!(target: "planwave::engine", parent: &shared.span, "integrate"),
                    }),
                    reply,
                )
            },
            None,
        )
        .await;
    integrator.stop(None);
    let _ = integrator_join.await;
    let integration = match integration {
        Ok(ractor::rpc::CallResult::Success(i)) => i,
        _ => return Err(EngineError::Lost("integrator")),
    };
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
        RunStatus::from_counts(plan.len(), completed)
    };
    let finished_at = timefmt::now();
    shared.emit(EventKind::RunFinished {
        run_id: req.run_id,
        status: status.as_str().into(),
        completed,
        failed,
        blocked,
        duration_ms: clock.elapsed().as_secs_f64() * 1000.0,
        reason: outcome.cancelled,
    });
    let mut result = RunResult {
        run_id: req.run_id,
        status,
        stop_reason: outcome.cancelled,
        started_at,
        finished_at,
        topic: plan.spec().topic.clone(),
        llm: info.into(),
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
    // run.json never claims more than the journal holds.
    if let Some(j) = &req.journal
        && let Err(e) = j.sync()
    {
        result.warnings.push(format!("events.jsonl: {e}"));
    }
    if let Some(out) = &req.output {
        out.write_run(&result)?;
    }
    Ok(result)
}
