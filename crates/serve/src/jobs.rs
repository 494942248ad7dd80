//! Starting and resuming jobs: a request becomes the command line the CLI would have been
//! given (recorded as the run's `invocation.json`, so `planwave resume DIR` works on it
//! too), the front end turns that into settings, and the runner runs it exactly as the CLI
//! does, into `DATA/<id>/`.

use std::path::Path;
use std::sync::Arc;

use planwave_plan::ValidatedPlan;
use planwave_record::PlanSource;
use planwave_runner::{
    Execution, Invocation, Research, Silent, execute_plan, lock_run_dir, open_journal,
    open_run_dir, validate_plan,
};
use planwave_storage::{JsonlOptions, JsonlSink, RunDir, RunLock};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::ids::new_run_id;
use crate::live::{LiveRun, LiveWatch};
use crate::log::{EventLog, LogWriter};
use crate::state::{AppState, JobSetup};

/// What a new job starts from.
pub enum Start {
    Plan(Value),
    Goal(String),
}

/// Checks the request, prepares `DATA/<id>/` and starts the job; returns its id.
pub fn create(
    state: &Arc<AppState>,
    start: Start,
    options: &Map<String, Value>,
    prefix: &str,
) -> Result<String, ApiError> {
    let research = matches!(start, Start::Goal(_));
    let flags = crate::options::to_args(options, research)
        .map_err(|p| ApiError::Unprocessable("invalid options".into(), p))?;
    let id = new_run_id(prefix);
    let dir = state.data.join(&id);
    let dir_text = dir.display().to_string();
    let (head, last) = match &start {
        Start::Plan(_) => ("run", dir.join("plan.json").display().to_string()),
        Start::Goal(goal) => ("research", goal.clone()),
    };
    // `--` first so a goal starting with `-` stays the goal.
    let mut argv = vec![head.to_owned(), "--out".into(), dir_text];
    argv.extend(state.front.server_args());
    argv.extend(flags);
    argv.push("--".into());
    argv.push(last);
    let setup = state
        .front
        .job(&argv)
        .map_err(|p| ApiError::Unprocessable("invalid options".into(), p))?;
    let plan = match &start {
        Start::Plan(value) => Some(check_plan(state, value, &setup)?),
        Start::Goal(g) if g.trim().is_empty() => {
            return Err(ApiError::Unprocessable(
                "invalid goal".into(),
                vec!["goal: empty".into()],
            ));
        }
        Start::Goal(_) => None,
    };
    let out = open_run_dir(&dir).map_err(|e| ApiError::Internal(e.to_string()))?;
    let lock = lock_run_dir(&out).map_err(|e| ApiError::Internal(e.to_string()))?;
    Invocation {
        argv,
        cwd: state.data.clone(),
        redacted: Vec::new(),
    }
    .record(&out)
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    let live = LiveRun::new(
        id.clone(),
        dir,
        research,
        EventLog::default(),
        state.shutdown.child_token(),
        setup.settings.run.prices.clone(),
    );
    state.insert_live(live.clone());
    let job = Job {
        state: state.clone(),
        live,
        setup,
        out,
        lock,
    };
    state.jobs.spawn(async move {
        match plan {
            Some(plan) => job.run(plan).await,
            None => job.research(false).await,
        }
    });
    Ok(id)
}

/// The plan as `validate` checks it: parsed leniently, validated with every problem.
fn check_plan(
    state: &AppState,
    value: &Value,
    setup: &JobSetup,
) -> Result<ValidatedPlan, ApiError> {
    let bytes = serde_json::to_vec(value).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let mut spec = planwave_plan::parse_plan(&bytes).map_err(|e| {
        ApiError::Unprocessable(
            "invalid plan".into(),
            e.to_string().lines().map(str::to_owned).collect(),
        )
    })?;
    spec.about.meta.extend(setup.settings.planner.meta.clone());
    let plan = validate_plan("plan", spec, Some(&state.shared.catalog()), &Silent)
        .map_err(|e| ApiError::Unprocessable("invalid plan".into(), e.problems))?;
    Ok(plan)
}

/// Resumes the stopped run in `dir` from its journal (or its rounds, for `research`).
pub fn resume(state: &Arc<AppState>, id: &str, dir: &Path) -> Result<(), ApiError> {
    let inv = Invocation::read(dir, "a resumable run directory")?;
    let setup = state
        .front
        .job(&inv.argv)
        .map_err(|p| ApiError::Unprocessable("invalid invocation.json".into(), p))?;
    if setup.recover {
        return Err(ApiError::Conflict(
            "a run --recover is resumed with `planwave resume DIR`".into(),
        ));
    }
    let research = setup.goal.is_some();
    let earlier = read_lines(&dir.join("events.jsonl"));
    let cancel = state.shutdown.child_token();
    if research {
        let out = open_run_dir(dir).map_err(|e| ApiError::Internal(e.to_string()))?;
        let lock = lock_run_dir(&out).map_err(|e| ApiError::Conflict(e.to_string()))?;
        let live = LiveRun::new(
            id.into(),
            dir.into(),
            true,
            EventLog::seeded(earlier),
            cancel,
            setup.settings.run.prices.clone(),
        );
        state.insert_live(live.clone());
        let job = Job {
            state: state.clone(),
            live,
            setup,
            out,
            lock,
        };
        state.jobs.spawn(job.research(true));
        return Ok(());
    }
    let dir = planwave_runner::resumable_dir(dir)?;
    let mut point = planwave_runner::resume(&dir, &Silent).map_err(|e| match e {
        planwave_runner::RunnerError::Invalid(i) => ApiError::from(i),
        other => ApiError::Conflict(other.to_string()),
    })?;
    let live = LiveRun::new(
        id.into(),
        dir,
        false,
        EventLog::seeded(earlier),
        cancel,
        setup.settings.run.prices.clone(),
    );
    state.insert_live(live.clone());
    let state = state.clone();
    state.clone().jobs.spawn(async move {
        let resources = state.resources_for(&setup);
        let stream = stream_into(&live, point.run_id);
        let result = execute_plan(
            Execution {
                plan: point.plan.clone(),
                resources,
                config: setup.settings.run.clone(),
                deadline: setup.settings.deadline,
                out: point.out.clone(),
                events: point.events.clone(),
                stream: Some(stream),
                run_id: point.run_id,
                preset: std::mem::take(&mut point.preset),
                slots: None,
                cancel: live.cancel.clone(),
                root_span: false,
            },
            &LiveWatch(live.clone()),
        )
        .await;
        // Unlocked before anyone can see the run ended (and ask to resume it again).
        drop(point);
        live.finish(outcome(&live.dir, result.map(|_| ())));
        state.retire(&live);
    });
    Ok(())
}

/// The lines of a journal so far (a resumed run's log starts with them).
fn read_lines(path: &Path) -> Vec<Arc<str>> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(Arc::from)
        .collect()
}

/// A job running in the background; the run directory's lock lives as long as it does.
struct Job {
    state: Arc<AppState>,
    live: Arc<LiveRun>,
    setup: JobSetup,
    out: RunDir,
    lock: RunLock,
}

impl Job {
    async fn run(self, plan: ValidatedPlan) {
        let lock = self.lock;
        let resources = self.state.resources_for(&self.setup);
        let run_id = uuid::Uuid::new_v4();
        let live = self.live;
        let result = async {
            let events = open_journal(&self.out, "events.jsonl", run_id)?;
            execute_plan(
                Execution {
                    plan: Arc::new(plan),
                    resources,
                    config: {
                        let mut config = self.setup.settings.run.clone();
                        config.plan_source = Some(PlanSource::File);
                        config
                    },
                    deadline: self.setup.settings.deadline,
                    out: self.out.clone(),
                    events,
                    stream: Some(stream_into(&live, run_id)),
                    run_id,
                    preset: Vec::new(),
                    slots: None,
                    cancel: live.cancel.clone(),
                    root_span: false,
                },
                &LiveWatch(live.clone()),
            )
            .await
            .map(|_| ())
        }
        .await;
        // Unlocked before anyone can see the run ended (and ask to resume it).
        drop(lock);
        live.finish(outcome(&live.dir, result));
        self.state.retire(&live);
    }

    async fn research(self, resume: bool) {
        let lock = self.lock;
        let live = self.live;
        let resources = self.state.resources_for(&self.setup);
        let run_id = uuid::Uuid::new_v4();
        let result = planwave_runner::research(Research {
            goal: self.setup.goal.clone().unwrap_or_default(),
            plan: None,
            resume,
            recover: false,
            out: self.out.clone(),
            resources,
            settings: &self.setup.settings,
            run_id,
            stream: Some(stream_into(&live, run_id)),
            quiet: true,
            cancel: live.cancel.clone(),
            watch: &LiveWatch(live.clone()),
            notes: &Silent,
            slots: None,
            // A resume finishes the recorded plan; only a fresh research streams it.
            stream_plan: self.setup.stream_plan && !resume,
        })
        .await
        .map(|_| ());
        // Unlocked before anyone can see the run ended (and ask to resume it).
        drop(lock);
        live.finish(outcome(&live.dir, result));
        self.state.retire(&live);
    }
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
fn outcome(dir: &Path, result: planwave_runner::Result<()>) -> Result<String, String> {
    result.map_err(|e| e.to_string())?;
    Ok(crate::listing::read_run_json(dir)
        .and_then(|v| v.get("status")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| "finished".into()))
}
