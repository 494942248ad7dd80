//! One job of a batch: its run directory, its plan (given or planned), and its run, resumed
//! from its own journal when one exists. Whatever goes wrong is the job's verdict, never the
//! batch's failure.

use std::sync::Arc;
use std::time::Instant;

use crate::error::Context;
use planwave_batch::{JobInput, JobPlanning, JobState, JobSummary, ResolvedJob};
use planwave_engine::{
    Event, EventSink, Journal, PlanSource, Replay, RunConfig, RunDir, RunResult, RunStatus,
};
use planwave_plan::ValidatedPlan;
use planwave_planner::{Attempt, PlannerConfig};
use tokio_util::sync::CancellationToken;

use super::BatchWatch;
use crate::execute::Watch;
use crate::{
    Execution, Notes, PlanCache, PlanRequest, Resources, RunnerError, Watcher, execute_plan,
    load_plan, open_journal, plan_goal_cached, resume_presets,
};

/// Written next to a job's plan when it came from the cache, so a resumed job still says so.
const CACHE_NOTE: &str = "planner/cache.json";

/// What every job of a batch shares.
pub(super) struct JobContext<'a> {
    pub root: RunDir,
    pub resources: Resources,
    pub planner: PlannerConfig,
    pub config: RunConfig,
    /// `--plan-cache`: goal jobs reuse plans planned before.
    pub cache: Option<PlanCache>,
    pub slots: Option<Arc<tokio::sync::Semaphore>>,
    pub cancel: CancellationToken,
    pub watch: &'a dyn BatchWatch,
    pub notes: &'a dyn Notes,
}

/// A job's run as a batch shows it: its events go to the batch's view of that job.
struct JobView(Arc<dyn EventSink>);

impl EventSink for JobView {
    fn emit(&self, event: &Event) {
        self.0.emit(event);
    }
}

impl Watcher for JobView {}

struct JobWatch(Arc<dyn EventSink>);

impl Watch for JobWatch {
    fn open(&self, _plan: &Arc<ValidatedPlan>) -> Arc<dyn Watcher> {
        Arc::new(JobView(self.0.clone()))
    }
}

/// The verdict of a job that ended with `result`.
fn state_of(r: &RunResult) -> JobState {
    match r.status {
        RunStatus::Completed => JobState::Completed,
        RunStatus::Partial => JobState::Partial,
        RunStatus::Failed => JobState::Failed,
        RunStatus::Cancelled => JobState::Cancelled,
    }
}

impl JobContext<'_> {
    /// Runs one job to its end.
    pub async fn run(&self, job: ResolvedJob) -> JobSummary {
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
            planning: None,
        };
        if self.cancel.is_cancelled() {
            summary.state = JobState::Cancelled;
            return summary;
        }
        self.watch.job_started(&job.id);
        match self.run_dir(&job).await {
            Ok(Some(r)) => {
                let s = &r.stats;
                summary.state = state_of(&r);
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
        if matches!(job.input, JobInput::Goal(_)) {
            summary.planning = self.planning_of(&job);
        }
        summary.wall_ms = clock.elapsed().as_secs_f64() * 1000.0;
        summary
    }

    /// A goal job's planning, read back from its `planner/attempts.json` (written whether
    /// planning succeeded or not), so a job that planned in an earlier session of a resumed
    /// batch counts the same as one that planned now. `None` when planning never ended.
    fn planning_of(&self, job: &ResolvedJob) -> Option<JobPlanning> {
        #[derive(serde::Deserialize)]
        struct AttemptTime {
            duration_ms: f64,
            valid: bool,
        }
        let path = self
            .root
            .root()
            .join("jobs")
            .join(&job.dir)
            .join("planner/attempts.json");
        let text = std::fs::read_to_string(path).ok()?;
        let attempts: Vec<AttemptTime> = serde_json::from_str(&text).ok()?;
        (!attempts.is_empty()).then(|| JobPlanning {
            valid: attempts.iter().any(|a| a.valid),
            attempts: attempts.len(),
            ms: attempts.iter().map(|a| a.duration_ms).sum(),
        })
    }

    /// `None` when cancelled before the run started.
    async fn run_dir(&self, job: &ResolvedJob) -> crate::Result<Option<RunResult>> {
        let out = self
            .root
            .child(&format!("jobs/{}", job.dir))
            .context("preparing the job's run directory")?
            .with_durable(true);
        // The same lock as `run` and `resume` take: neither can enter a job's directory while
        // the batch drives it, nor the batch theirs.
        let _lock = crate::lock_run_dir(&out)?;
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
        let events = open_journal(&out, "events.jsonl", run_id)?;
        let resumable = out.root().join("plan.json").is_file();
        let (plan, source) = match self.plan_for(job, &out, &events).await {
            Ok(Some((p, source))) => (Arc::new(p), source),
            // The run never started: its journal is closed here (execution closes it).
            Ok(None) => {
                events.close().context("writing events.jsonl")?;
                return Ok(None);
            }
            Err(e) => {
                let _ = events.close();
                return Err(e);
            }
        };
        let preset = match replay {
            Some(replay) if resumable => resume_presets(&replay, &plan, &out, &events, run_id).0,
            _ => Vec::new(),
        };
        self.watch.add_tasks(plan.len(), preset.len());
        let result = execute_plan(
            Execution {
                plan,
                resources: self.resources.clone(),
                config: RunConfig {
                    plan_source: Some(source),
                    ..self.config.clone()
                },
                deadline: None,
                out,
                events,
                stream: None,
                run_id,
                preset,
                slots: self.slots.clone(),
                cancel: self.cancel.child_token(),
                root_span: false,
            },
            &JobWatch(self.watch.for_job(&job.id)),
        )
        .await?;
        Ok(Some(result))
    }

    /// The job's plan and where it came from: given, or planned from its goal (once: a
    /// resumed job reuses plan.json), through the plan cache when there is one.
    async fn plan_for(
        &self,
        job: &ResolvedJob,
        out: &RunDir,
        events: &Arc<Journal>,
    ) -> crate::Result<Option<(ValidatedPlan, PlanSource)>> {
        let goal = match &job.input {
            JobInput::Plan(p) => {
                let source = match job.kind {
                    "plan_file" => PlanSource::File,
                    "template" => PlanSource::Template,
                    _ => PlanSource::Inline,
                };
                return Ok(Some(((**p).clone(), source)));
            }
            JobInput::Goal(g) => g,
        };
        let saved = out.root().join("plan.json");
        if saved.is_file() {
            let source = if out.root().join(CACHE_NOTE).is_file() {
                PlanSource::Cache
            } else {
                PlanSource::Planner
            };
            return Ok(Some((load_plan(&saved, self.notes)?, source)));
        }
        let journal = events.clone();
        let mut on_attempt = move |a: &Attempt| {
            journal.emit(&crate::planning::planner_call_event(a));
        };
        let planned = plan_goal_cached(
            PlanRequest {
                goal,
                reflection: None,
                resources: &self.resources,
                config: PlannerConfig {
                    meta: job.metadata.clone(),
                    ..self.planner.clone()
                },
                quiet: true,
                cancel: &self.cancel,
                notes: self.notes,
            },
            self.cache.as_ref(),
            &mut on_attempt,
        )
        .await?;
        let Some(planned) = planned else {
            return Ok(None);
        };
        std::fs::create_dir_all(out.root().join("planner")).context("creating planner/")?;
        out.write_json("planner/attempts.json", &planned.outcome.attempts)?;
        if planned.source == PlanSource::Cache {
            out.write_json(CACHE_NOTE, &serde_json::json!({"plan_source": "cache"}))?;
        }
        match planned.outcome.into_plan() {
            Ok(p) => Ok(Some((p, planned.source))),
            Err(e) => Err(RunnerError::message(format!(
                "planning failed: {}",
                crate::planning::failure_detail(&e)
            ))),
        }
    }
}

fn finished_run(out: &RunDir) -> Option<RunResult> {
    let text = std::fs::read_to_string(out.root().join("run.json")).ok()?;
    let r: RunResult = serde_json::from_str(&text).ok()?;
    (r.status != RunStatus::Cancelled).then_some(r)
}
