//! One job of a batch: its run directory, its plan (given or planned), and its run, resumed
//! from its own journal when one exists.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use planwave_batch::{JobInput, JobState, JobSummary, ResolvedJob};
use planwave_config::Settings;
use planwave_engine::{
    Event, EventKind, EventSink, FanoutSink, Journal, Replay, RunConfig, RunDir, RunRequest,
    RunResult, RunStatus, execute,
};
use planwave_llm::LlmProvider;
use planwave_plan::ValidatedPlan;
use planwave_prompts::Templates;
use tokio_util::sync::CancellationToken;

use super::progress::BatchProgress;
use crate::cli::planning::plan_goal_reflected;
use crate::cli::run::open_events;

/// What every job of a batch shares.
pub struct JobContext {
    pub root: RunDir,
    pub provider: Arc<dyn LlmProvider>,
    pub templates: Arc<Templates>,
    pub settings: Settings,
    pub config: RunConfig,
    pub slots: Option<Arc<tokio::sync::Semaphore>>,
    /// The batch's MCP servers, shared by every job.
    pub mcp: Option<Arc<planwave_mcp::McpRegistry>>,
    pub cancel: CancellationToken,
    pub progress: Arc<BatchProgress>,
}

/// Runs one job to its end; never fails the batch: whatever goes wrong is the job's verdict.
pub async fn run_job(ctx: &JobContext, job: ResolvedJob) -> JobSummary {
    let clock = Instant::now();
    let mut summary = JobSummary {
        id: job.id.clone(),
        line: job.line,
        kind: job.kind.to_owned(),
        run_dir: format!("jobs/{}", job.dir),
        state: JobState::Failed,
        tasks: 0,
        completed: 0,
        failed: 0,
        blocked: 0,
        tokens: 0,
        cost: None,
        currency: None,
        wall_ms: 0.0,
        error: None,
    };
    if ctx.cancel.is_cancelled() {
        summary.state = JobState::Cancelled;
        return summary;
    }
    ctx.progress.job_started(&job.id);
    match run(ctx, &job).await {
        Ok(Some(r)) => {
            let s = &r.stats;
            summary.state = match r.status {
                RunStatus::Completed => JobState::Completed,
                RunStatus::Partial => JobState::Partial,
                RunStatus::Failed => JobState::Failed,
                RunStatus::Cancelled => JobState::Cancelled,
            };
            summary.tasks = s.tasks;
            summary.completed = s.completed;
            summary.failed = s.failed;
            summary.blocked = s.blocked;
            summary.tokens = s.usage.total();
            summary.cost = s.cost.as_ref().map(|c| c.total);
            summary.currency = s.cost.as_ref().map(|c| c.currency.clone());
        }
        Ok(None) => summary.state = JobState::Cancelled,
        Err(e) => summary.error = Some(format!("{e:#}")),
    }
    summary.wall_ms = clock.elapsed().as_secs_f64() * 1000.0;
    summary
}

/// `None` when interrupted before the run started.
async fn run(ctx: &JobContext, job: &ResolvedJob) -> anyhow::Result<Option<RunResult>> {
    let out = RunDir::create(ctx.root.root().join("jobs").join(&job.dir))
        .context("preparing the job's run directory")?
        .with_durable(true);
    // A run that ended before a crash (run.json written, batch.json not yet) is not redone.
    if let Some(done) = finished_run(&out) {
        return Ok(Some(done));
    }
    // A job that ran before (crash, Ctrl-C) goes on as the same run, from its journal.
    let replay = Replay::read(&out.root().join("events.jsonl"))
        .ok()
        .filter(|r| r.run_id.is_some());
    let run_id = replay
        .as_ref()
        .and_then(|r| r.run_id)
        .unwrap_or_else(uuid::Uuid::new_v4);
    let events = open_events(&out, run_id)?;
    let result = run_in(ctx, job, &out, &events, run_id, replay).await;
    let closed = events.close().context("writing events.jsonl");
    let result = result?;
    closed?;
    Ok(result)
}

async fn run_in(
    ctx: &JobContext,
    job: &ResolvedJob,
    out: &RunDir,
    events: &Arc<Journal>,
    run_id: uuid::Uuid,
    replay: Option<Replay>,
) -> anyhow::Result<Option<RunResult>> {
    let resumable = out.root().join("plan.json").is_file();
    let plan = match plan_for(ctx, job, out, events).await? {
        Some(p) => Arc::new(p),
        None => return Ok(None),
    };
    let preset = match replay {
        Some(replay) if resumable => {
            let (preset, _notes) = replay.presets(&plan, out);
            events.emit(&Event::now(EventKind::RunResumed {
                run_id,
                completed: preset.len(),
                pending: plan.len() - preset.len(),
            }));
            preset
        }
        _ => Vec::new(),
    };
    ctx.progress.add_tasks(plan.len(), preset.len());
    let sink: Arc<dyn EventSink> = Arc::new(FanoutSink(vec![ctx.progress.for_job(&job.id)]));
    let result = execute(RunRequest {
        run_id,
        plan,
        provider: ctx.provider.clone(),
        prompts: ctx.templates.clone(),
        sink,
        journal: Some(events.clone()),
        config: ctx.config.clone(),
        deadline: None,
        slots: ctx.slots.clone(),
        output: Some(out.clone()),
        cancel: ctx.cancel.child_token(),
        preset,
        mcp: ctx.mcp.clone(),
    })
    .await
    .context("running the plan")?;
    Ok(Some(result))
}

/// The job's plan: given, or planned from its goal (once: a resumed job reuses plan.json).
async fn plan_for(
    ctx: &JobContext,
    job: &ResolvedJob,
    out: &RunDir,
    events: &Arc<Journal>,
) -> anyhow::Result<Option<ValidatedPlan>> {
    let goal = match &job.input {
        JobInput::Plan(p) => return Ok(Some((**p).clone())),
        JobInput::Goal(g) => g,
    };
    let saved = out.root().join("plan.json");
    if saved.is_file() {
        return Ok(Some(crate::cli::input::load_plan(&saved)?));
    }
    let events_for_attempts = events.clone();
    let mut on_attempt = move |a: &planwave_planner::PlanAttempt| {
        events_for_attempts.emit(&Event::now(EventKind::LlmCall {
            task: None,
            role: "planner".into(),
            model: a.model.clone(),
            attempt: a.attempt,
            duration_ms: a.duration_ms,
            usage: a.usage,
            error: a.error.clone(),
        }));
    };
    let planning = plan_goal_reflected(
        goal,
        None,
        crate::cli::mcp::planner_tools(ctx.mcp.as_deref()),
        ctx.provider.clone(),
        ctx.templates.clone(),
        &ctx.settings,
        true,
        &mut on_attempt,
    );
    let outcome = tokio::select! {
        r = planning => r?,
        _ = ctx.cancel.cancelled() => None,
    };
    let Some(outcome) = outcome else {
        return Ok(None);
    };
    std::fs::create_dir_all(out.root().join("planner")).context("creating planner/")?;
    out.write_json("planner/attempts.json", &outcome.attempts)?;
    match outcome.plan.clone() {
        Some(p) => Ok(Some(p)),
        None => Err(crate::cli::planning::no_plan_error(&outcome)).map_err(|e| {
            let detail = e
                .downcast_ref::<crate::cli::exit::InvalidInput>()
                .map(|i| i.problems.join("; "))
                .unwrap_or_else(|| e.to_string());
            anyhow::anyhow!("planning failed: {detail}")
        }),
    }
}

fn finished_run(out: &RunDir) -> Option<RunResult> {
    let text = std::fs::read_to_string(out.root().join("run.json")).ok()?;
    let r: RunResult = serde_json::from_str(&text).ok()?;
    (r.status != RunStatus::Cancelled).then_some(r)
}
