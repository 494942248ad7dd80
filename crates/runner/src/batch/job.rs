//! One job of a batch: its run directory, its plan (given or planned), and its run, resumed
//! from its own journal when one exists. Whatever goes wrong is the job's verdict, never the
//! batch's failure.

use std::sync::Arc;
use std::time::Instant;

use crate::error::Context;
use planwave_batch::{JobInput, JobPlanning, JobState, JobSummary, ResolvedJob};
use planwave_engine::RunConfig;
use planwave_plan::ValidatedPlan;
use planwave_record::{Event, EventSink, PlanSource, RunResult, RunStatus};
use planwave_storage::{JournalMirror, Replay, RunDir};
use tokio_util::sync::CancellationToken;

use super::BatchWatch;
use crate::execute::Watch;
use crate::{
    Execution, Notes, Resources, RunnerError, Watcher, execute_plan, open_journal_mirrored,
    resume_presets,
};

/// What every job of a batch shares (a queue worker builds one for its jobs too).
pub struct JobContext<'a> {
    pub root: RunDir,
    /// The batch's settings: a goal job runs the reflective loop with its policy.
    pub settings: &'a planwave_config::Settings,
    pub resources: Resources,
    pub config: RunConfig,
    pub slots: Option<Arc<tokio::sync::Semaphore>>,
    pub cancel: CancellationToken,
    pub watch: &'a dyn BatchWatch,
    pub notes: &'a dyn Notes,
    /// Where a plan job's journal lines must also be stored before they count as durable
    /// (a queue worker's JetStream stream); `None` for a local batch.
    pub mirror: Option<Arc<dyn JournalMirror>>,
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

/// A goal job's view: each pass of its loop adds its plan's tasks to the batch's progress.
struct LoopJobWatch<'a> {
    sink: Arc<dyn EventSink>,
    batch: &'a dyn BatchWatch,
}

impl Watch for LoopJobWatch<'_> {
    fn open(&self, plan: &Arc<ValidatedPlan>) -> Arc<dyn Watcher> {
        self.batch.add_tasks(plan.len(), 0);
        Arc::new(JobView(self.sink.clone()))
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
        let mut summary = JobSummary::failed(&job.id, job.line, job.kind, &job.dir, None);
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
        if let JobInput::Goal(goal) = &job.input {
            return self.research(job, goal, out).await;
        }
        // A job that ran before (crash, Ctrl-C) goes on as the same run, from its journal.
        let replay = Replay::read(&out.root().join("events.jsonl"))
            .ok()
            .filter(|r| r.run_id.is_some());
        let run_id = replay
            .as_ref()
            .and_then(|r| r.run_id)
            .unwrap_or_else(uuid::Uuid::new_v4);
        let events = open_journal_mirrored(&out, "events.jsonl", run_id, self.mirror.clone())?;
        let resumable = out.root().join("plan.json").is_file();
        let Some((plan, source)) = Self::given_plan(job) else {
            let _ = events.close();
            return Err(RunnerError::message("a goal job runs the reflective loop"));
        };
        let plan = Arc::new(plan);
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

    /// A goal job: the reflective loop, as `research` runs it, its rounds under the job's
    /// run directory (a job that ran before goes on from them). `None` when cancelled before
    /// its first round ran.
    async fn research(
        &self,
        job: &ResolvedJob,
        goal: &str,
        out: RunDir,
    ) -> crate::Result<Option<RunResult>> {
        let mut settings = self.settings.clone();
        settings.planner.meta = job.metadata.clone();
        // The batch's deadline cancels every job; a job has none of its own.
        settings.deadline = None;
        let resume = out.root().join("rounds").is_dir();
        let done = crate::research(crate::Research {
            goal: goal.to_owned(),
            plan: None,
            resume,
            recover: false,
            out,
            resources: self.resources.clone(),
            settings: &settings,
            run_id: uuid::Uuid::new_v4(),
            stream: None,
            quiet: true,
            cancel: self.cancel.child_token(),
            watch: &LoopJobWatch {
                sink: self.watch.for_job(&job.id),
                batch: self.watch,
            },
            notes: self.notes,
            slots: self.slots.clone(),
            stream_plan: false,
        })
        .await
        .map_err(|e| match e {
            // The job's verdict names what failed, as for a job planned on its own.
            RunnerError::Invalid(i) if i.source_name == "planner" => {
                RunnerError::message(format!("planning failed: {}", i.problems.join("; ")))
            }
            other => other,
        })?;
        Ok(done.shown_round().map(|r| r.result.clone()))
    }

    /// A given plan and where it came from (goal jobs run the loop instead).
    fn given_plan(job: &ResolvedJob) -> Option<(ValidatedPlan, PlanSource)> {
        let JobInput::Plan(p) = &job.input else {
            return None;
        };
        let source = match job.kind {
            "plan_file" => PlanSource::File,
            "template" => PlanSource::Template,
            _ => PlanSource::Inline,
        };
        Some(((**p).clone(), source))
    }
}

fn finished_run(out: &RunDir) -> Option<RunResult> {
    let text = std::fs::read_to_string(out.root().join("run.json")).ok()?;
    let r: RunResult = serde_json::from_str(&text).ok()?;
    (r.status != RunStatus::Cancelled).then_some(r)
}
