//! Starting and resuming jobs: a request becomes a job spec (the server's own host options,
//! the request's [`RequestOptions`] for the rest), its settings are resolved by `planwave_config` as the
//! CLI's are, and the job runs through `planwave_runner::ops` exactly as the CLI's does
//! (recorded as the run's `invocation.json`, so `planwave resume DIR` works on it too), into
//! `DATA/<id>/`. Resuming goes through the runner's one resume for every kind of run
//! directory (a plain run, `run --recover`, a research).

use std::path::Path;
use std::sync::Arc;

use planwave_config::spec::{JobSpec, RequestOptions, ResearchOptions, Work};
use planwave_config::{ProcessEnv, Settings, SettingsError};
use planwave_plan::ValidatedPlan;
use planwave_runner::ops::{self, Job, JobIo, Resumable, ResumeKind};
use planwave_runner::ops::{
    Invocation, RunnerError, Silent, lock_run_dir, open_run_dir, validate_plan,
};
use planwave_storage::{JsonlOptions, JsonlSink};
use serde_json::Value;

use crate::error::ApiError;
use crate::ids::new_run_id;
use crate::live::{LiveRun, LiveWatch};
use crate::log::{EventLog, LogWriter};
use crate::state::AppState;

/// What a new job starts from.
pub enum Start {
    Plan(Value),
    Goal(String),
}

fn invalid(what: &str, e: &SettingsError) -> ApiError {
    let source = e.source_name().to_owned();
    ApiError::Unprocessable(
        what.into(),
        e.problems()
            .into_iter()
            .map(|p| format!("{source}: {p}"))
            .collect(),
    )
}

/// A spec's settings and simulator, resolved as the CLI resolves its flags; a plan the model
/// writes for the job has at most the server's `--max-tasks` tasks, as a posted one.
fn resolve(
    state: &AppState,
    spec: &JobSpec,
    what: &str,
) -> Result<(Settings, planwave_sim::SimConfig), ApiError> {
    let mut settings = spec.settings(&ProcessEnv).map_err(|e| invalid(what, &e))?;
    settings.planner.task_limit = settings.planner.task_limit.min(state.limits.max_tasks);
    let sim = spec
        .sim_config(settings.run.seed)
        .map_err(|e| invalid(what, &e))?;
    Ok((settings, sim))
}

/// A checked request: its id, spec, settings and (for a plan) the validated plan.
pub struct Prepared {
    pub id: String,
    pub dir: std::path::PathBuf,
    pub spec: JobSpec,
    pub settings: Settings,
    pub sim: planwave_sim::SimConfig,
    pub plan: Option<ValidatedPlan>,
}

/// Checks the request, prepares `DATA/<id>/` and starts the job; returns its id.
pub fn create(
    state: &Arc<AppState>,
    start: Start,
    options: RequestOptions,
    prefix: &str,
) -> Result<String, ApiError> {
    let p = prepare(state, start, options, prefix)?;
    spawn(state, p)
}

/// Checks the request as the CLI checks its flags and plan; nothing is created yet.
pub fn prepare(
    state: &AppState,
    start: Start,
    options: RequestOptions,
    prefix: &str,
) -> Result<Prepared, ApiError> {
    let id = new_run_id(prefix);
    let dir = state.data.join(&id);
    let work = match &start {
        Start::Plan(_) => Work::Plan {
            plan: dir.join("plan.json"),
            recover: false,
        },
        Start::Goal(goal) => Work::Goal {
            goal: goal.clone(),
            research: ResearchOptions::default(),
            stream_plan: true,
        },
    };
    let spec = options
        .job(work, dir.clone(), state.host.clone())
        .map_err(|p| ApiError::Unprocessable("invalid options".into(), p))?;
    let (settings, sim) = resolve(state, &spec, "invalid options")?;
    let plan = match &start {
        Start::Plan(value) => Some(check_plan(state, value, &settings)?),
        Start::Goal(g) if g.trim().is_empty() => {
            return Err(ApiError::Unprocessable(
                "invalid goal".into(),
                vec!["goal: empty".into()],
            ));
        }
        Start::Goal(_) => None,
    };
    Ok(Prepared {
        id,
        dir,
        spec,
        settings,
        sim,
        plan,
    })
}

/// Starts a prepared job here; returns its id.
fn spawn(state: &Arc<AppState>, p: Prepared) -> Result<String, ApiError> {
    let Prepared {
        id,
        dir,
        spec,
        settings,
        sim,
        plan,
    } = p;
    // The directory exists (and is listed) from the moment the id is returned.
    std::fs::create_dir_all(&dir).map_err(|e| ApiError::Internal(e.to_string()))?;
    let live = LiveRun::new(
        id.clone(),
        dir,
        plan.is_none(),
        EventLog::default(),
        state.shutdown.child_token(),
        settings.run.prices.clone(),
    );
    crate::queue::enqueue(&live);
    state.insert_live(live.clone());
    state.health.metrics.job_started();
    let state = state.clone();
    state.clone().jobs.spawn(async move {
        let Some(_turn) = crate::queue::wait_turn(&state, &live).await else {
            return;
        };
        let job = Job {
            spec: &spec,
            settings: &settings,
            resources: state.resources_for(&settings, sim),
            invocation: Invocation::job(&spec, state.data.clone()),
        };
        let live_watch = LiveWatch(live.clone());
        let watch = state.metered(&live_watch, &settings);
        let stream = |run_id| Ok(Some(stream_into(&live, run_id)));
        let io = io(&live, &watch, &stream);
        let result = match plan {
            Some(plan) => ops::run(job, plan, &io).await,
            None => ops::research(job, &io).await,
        };
        // The operation has unlocked the directory: anyone told it ended may resume it.
        let end = outcome(&live.dir, result.map(|_| ()));
        state.job_ended(&end);
        live.finish(end);
        state.retire(&live);
    });
    Ok(id)
}

/// Starts `spec` again as run `id` in its own directory: a `needs_input` run, answered.
pub fn restart(
    state: &Arc<AppState>,
    id: &str,
    dir: std::path::PathBuf,
    spec: JobSpec,
) -> Result<(), ApiError> {
    let (settings, sim) = resolve(state, &spec, "invalid answers")?;
    spawn(
        state,
        Prepared {
            id: id.to_owned(),
            dir,
            spec,
            settings,
            sim,
            plan: None,
        },
    )?;
    Ok(())
}

/// What a job lends the runner: the live view, no notes, its own cancellation, its log.
fn io<'a>(
    live: &LiveRun,
    watch: &'a dyn planwave_runner::ops::Watch,
    stream: ops::StreamFor<'a>,
) -> JobIo<'a> {
    JobIo {
        watch,
        notes: &Silent,
        cancel: live.cancel.clone(),
        stream,
        quiet: true,
        root_span: false,
    }
}

/// The plan as `validate` checks it: parsed leniently, validated with every problem.
fn check_plan(
    state: &AppState,
    value: &Value,
    settings: &Settings,
) -> Result<ValidatedPlan, ApiError> {
    let bytes = serde_json::to_vec(value).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let mut spec = planwave_plan::parse_plan(&bytes).map_err(|e| {
        ApiError::Unprocessable(
            "invalid plan".into(),
            e.to_string().lines().map(str::to_owned).collect(),
        )
    })?;
    let max = state.limits.max_tasks;
    if spec.tasks.len() > max {
        return Err(ApiError::Unprocessable(
            "invalid plan".into(),
            vec![format!(
                "the plan has {} tasks; this server runs at most {max} (--max-tasks {max})",
                spec.tasks.len()
            )],
        ));
    }
    spec.about.meta.extend(settings.planner.meta.clone());
    let plan = validate_plan("plan", spec, Some(&state.shared.catalog()), &Silent)
        .map_err(|e| ApiError::Unprocessable("invalid plan".into(), e.problems))?;
    Ok(plan)
}

/// Resumes the stopped run in `dir` as `planwave resume DIR` would: from its journal, or its
/// rounds (`research`, `run --recover`).
pub fn resume(state: &Arc<AppState>, id: &str, dir: &Path) -> Result<(), ApiError> {
    let r = Resumable::open(dir)?;
    r.invocation
        .origin
        .check_redacted(|k| std::env::var(k).ok())?;
    let (settings, sim) = resolve(state, &r.spec, "invalid invocation.json")?;
    // Held by another process (a `planwave resume` of the same directory): refused now,
    // not reported later as the job's failure. The job takes the lock itself.
    {
        let out = open_run_dir(&r.dir).map_err(|e| ApiError::Internal(e.to_string()))?;
        lock_run_dir(&out).map_err(|e| ApiError::Conflict(e.to_string()))?;
    }
    let earlier = read_lines(&r.dir);
    let live = LiveRun::new(
        id.into(),
        r.dir.clone(),
        r.kind != ResumeKind::Run,
        EventLog::seeded(earlier),
        state.shutdown.child_token(),
        settings.run.prices.clone(),
    );
    crate::queue::enqueue(&live);
    state.insert_live(live.clone());
    state.health.metrics.job_started();
    let state = state.clone();
    state.clone().jobs.spawn(async move {
        let Some(_turn) = crate::queue::wait_turn(&state, &live).await else {
            return;
        };
        let job = Job {
            spec: &r.spec,
            settings: &settings,
            resources: state.resources_for(&settings, sim),
            invocation: r.invocation.clone(),
        };
        let live_watch = LiveWatch(live.clone());
        let watch = state.metered(&live_watch, &settings);
        let stream = |run_id| Ok(Some(stream_into(&live, run_id)));
        let result = ops::resume(&r, job, &io(&live, &watch, &stream)).await;
        let end = outcome(&live.dir, result.map(|_| ()));
        state.job_ended(&end);
        live.finish(end);
        state.retire(&live);
    });
    Ok(())
}

/// The lines of the journal in `dir` so far (a resumed run's log starts with them, and is
/// served: read as `run_files` reads what a request gets).
fn read_lines(dir: &Path) -> Vec<Arc<str>> {
    let bytes = crate::run_files::read(dir, "events.jsonl").unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(Arc::from)
        .collect()
}

/// The run's `--events` stream, written into its live log.
fn stream_into(live: &LiveRun, run_id: uuid::Uuid) -> Arc<JsonlSink> {
    Arc::new(JsonlSink::with_options(
        Box::new(LogWriter {
            log: live.log.clone(),
            partial: Vec::new(),
        }),
        JsonlOptions {
            run_id: Some(run_id),
            flush_when_idle: true,
        },
    ))
}

/// The job's final status (`run.json`'s), or why it failed.
fn outcome(dir: &Path, result: planwave_runner::ops::Result<()>) -> Result<String, String> {
    // A goal too vague to plan waits for answers: not a failure (run.json holds them).
    if let Err(e) = &result
        && e.questions().is_some()
    {
        return Ok(planwave_runner::ops::NEEDS_INPUT.into());
    }
    result.map_err(|e| failure(&e))?;
    Ok(crate::listing::read_run_json(dir)
        .and_then(|v| v.get("status")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| "finished".into()))
}

/// Why a job failed, in words: bad input with each of its problems (a goal whose plan never
/// became valid says what was wrong with every attempt, a plan over `--max-tasks` included).
fn failure(e: &RunnerError) -> String {
    match e {
        RunnerError::Invalid(i) => format!("{}: {}", i.source_name, i.problems.join("; ")),
        other => other.to_string(),
    }
}
