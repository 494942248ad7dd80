//! One job of a batch: its run directory, its plan (given or planned), and its run. A job
//! that ran before (a crash, Ctrl-C, a queue worker killed) goes on through the one resume
//! ([`ops::Resumable::with_spec`] and [`ops::resume_in`], as `planwave resume` and the server
//! do), with its [`job_spec`]. Whatever goes wrong is the job's verdict, never the batch's
//! failure.

use planwave_engine::RunRequest;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::error::Context;
use planwave_batch::{JobInput, JobPlanning, JobState, JobSummary, ResolvedJob};
use planwave_config::spec::{JobOptions, JobSpec, MetaOptions, ResearchOptions, RunOptions, Work};
use planwave_engine::RunConfig;
use planwave_plan::ValidatedPlan;
use planwave_record::{Event, EventSink, PlanSource, RunResult, RunStatus};
use planwave_storage::{JournalMirror, Replay, RunDir};
use tokio_util::sync::CancellationToken;

use super::BatchWatch;
use crate::execute::Watch;
use crate::ops;
use crate::{
    Execution, Notes, Resources, RunnerError, Watcher, execute_plan, open_journal_mirrored,
};

/// The plan a batch's plan job names: its own, in its run directory.
pub const PLAN_FILE: &str = "plan.json";

/// A batch job's spec, run in `out`: a goal planned whole (a batch streams no plan), or its
/// given plan as the job's own `plan.json` (a batch has no recover kind); of the options only
/// its metadata (the batch's `--meta` with the job line's over it), the rest being the
/// batch's (or a queue worker's) own. A queue message carries its work and options.
pub fn job_spec(job: &ResolvedJob, out: PathBuf) -> JobSpec {
    let work = match &job.input {
        JobInput::Goal(goal) => Work::Goal {
            goal: goal.clone(),
            research: ResearchOptions {
                planner: planwave_config::spec::PlannerOptions {
                    answers: (!job.answers.is_empty())
                        .then(|| planwave_config::spec::Answers(job.answers.clone())),
                    ..Default::default()
                },
                ..ResearchOptions::default()
            },
            stream_plan: false,
        },
        JobInput::Plan(_) => Work::Plan {
            plan: PLAN_FILE.into(),
            recover: false,
        },
    };
    JobSpec {
        work,
        out,
        options: JobOptions {
            run: RunOptions {
                meta: MetaOptions {
                    meta: job.metadata.clone().into_iter().collect(),
                },
                ..RunOptions::default()
            },
            ..JobOptions::default()
        },
    }
}

/// What every job of a batch shares (a queue worker builds one for its jobs too).
pub struct JobContext<'a> {
    pub root: RunDir,
    /// The batch's settings: a goal job runs the reflective loop with its policy.
    pub settings: &'a planwave_config::Settings,
    pub resources: Resources,
    /// The batch's budget, which `resources` count against: once it is reached no job
    /// starts.
    pub budget: Option<Arc<planwave_llm::Budget>>,
    pub config: RunConfig,
    pub slots: Option<planwave_engine::Slots>,
    pub cancel: CancellationToken,
    pub watch: &'a dyn BatchWatch,
    pub notes: &'a dyn Notes,
    /// Where a plan job's journal lines must also be stored before they count as durable
    /// (a queue worker's JetStream stream); `None` for a local batch.
    pub mirror: Option<Arc<dyn JournalMirror>>,
    /// With the Batch API: the root whose `jobs/<dir>/` keeps each job's record of its
    /// provider batches, when not the job's run directory as opened (a queue worker mirrors
    /// that one file of a plan job's directory); `None`: the run directory.
    pub ledger_root: Option<RunDir>,
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

/// A resumed plan job's view: its tasks, those done before included, join the batch's
/// progress when the journal says how many were done.
struct ResumedJobWatch<'a> {
    sink: Arc<dyn EventSink>,
    batch: &'a dyn BatchWatch,
}

impl Watch for ResumedJobWatch<'_> {
    fn open(&self, _plan: &Arc<ValidatedPlan>) -> Arc<dyn Watcher> {
        Arc::new(JobView(self.sink.clone()))
    }

    fn resumed(&self, _run_id: uuid::Uuid, completed: usize, tasks: usize) {
        self.batch.add_tasks(tasks, completed);
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
    // Stopped by the budget, the job is unfinished like an interrupted one: `batch
    // --resume` goes on with it.
    if r.stop_reason == Some(planwave_record::CancelReason::Budget) {
        return JobState::Cancelled;
    }
    match r.status {
        RunStatus::Completed => JobState::Completed,
        RunStatus::Partial => JobState::Partial,
        RunStatus::Failed => JobState::Failed,
        RunStatus::Cancelled => JobState::Cancelled,
    }
}

/// A job's cost from its estimate: none where no call had a price (it is unpriced, not free).
fn set_cost(summary: &mut JobSummary, cost: Option<&planwave_record::CostEstimate>) {
    summary.cost = cost.filter(|c| c.priced()).map(|c| c.total);
    summary.currency = cost.map(|c| c.currency.clone());
    summary.unpriced = cost.is_some_and(|c| !c.unpriced_models.is_empty());
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
        if let Some(why) = self.budget.as_ref().and_then(|b| b.reached()) {
            // Not run: `batch --resume` with a larger budget runs it.
            summary.state = JobState::Cancelled;
            summary.error = Some(format!("not started: budget reached: {why}"));
            return summary;
        }
        self.watch.job_started(&job.id);
        match self.run_dir(&job).await {
            Ok(Some(r)) => {
                let s = &r.stats;
                summary.state = state_of(&r);
                if let Some(why) = &r.plan_fallback {
                    // The planner's one-task stand-in ran, not a plan for the goal: whatever
                    // it wrote, the job did not do what was asked.
                    summary.state = JobState::Failed;
                    summary.error = Some(format!(
                        "planning failed, so the planner's one-task fallback plan ran: {why}"
                    ));
                }
                summary.tasks = s.tasks;
                summary.completed = s.completed;
                summary.failed = s.failed;
                summary.blocked = s.blocked;
                summary.tokens = s.usage.total();
                summary.prompt_tokens = s.usage.prompt_tokens;
                summary.cached_tokens = s.usage.cached_tokens;
                set_cost(&mut summary, s.cost.as_ref());
            }
            Ok(None) => summary.state = JobState::Cancelled,
            Err(e) => match e.questions() {
                Some(q) => {
                    summary.state = JobState::NeedsInput;
                    summary.questions = q.to_vec();
                }
                None => summary.error = Some(format!("{e:#}")),
            },
        }
        if matches!(job.input, JobInput::Goal(_)) {
            let planned = self.planning_of(&job);
            // A job whose planning failed has no run record, yet its planner calls were
            // made: their tokens and cost count.
            if let Some((_, calls)) = planned.as_ref().filter(|_| summary.tokens == 0) {
                summary.tokens = calls.iter().map(|(_, u)| u.total()).sum();
                let cost = self
                    .config
                    .prices
                    .estimate(calls.iter().map(|(m, u)| (m.as_str(), *u)));
                set_cost(&mut summary, cost.as_ref());
            }
            summary.planning = planned.map(|(p, _)| p);
        }
        summary.wall_ms = clock.elapsed().as_secs_f64() * 1000.0;
        summary
    }

    /// A goal job's planning, read back from its `planner/attempts.json` (written whether
    /// planning succeeded or not), so a job that planned in an earlier session of a resumed
    /// batch counts the same as one that planned now. `None` when planning never ended.
    /// With it, each attempt's model and usage.
    fn planning_of(
        &self,
        job: &ResolvedJob,
    ) -> Option<(JobPlanning, Vec<(String, planwave_record::Usage)>)> {
        #[derive(serde::Deserialize)]
        struct AttemptTime {
            duration_ms: f64,
            valid: bool,
            #[serde(default)]
            model: String,
            #[serde(default)]
            usage: planwave_record::Usage,
        }
        let path = self
            .root
            .root()
            .join("jobs")
            .join(&job.dir)
            .join("planner/attempts.json");
        let text = std::fs::read_to_string(path).ok()?;
        let attempts: Vec<AttemptTime> = serde_json::from_str(&text).ok()?;
        (!attempts.is_empty()).then(|| {
            let planning = JobPlanning {
                valid: attempts.iter().any(|a| a.valid),
                attempts: attempts.len(),
                ms: attempts.iter().map(|a| a.duration_ms).sum(),
            };
            let calls = attempts.into_iter().map(|a| (a.model, a.usage)).collect();
            (planning, calls)
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
        let lock = crate::lock_run_dir(&out)?;
        // A run that ended before a crash (run.json written, batch.json not yet) is not redone.
        if let Some(done) = finished_run(&out) {
            return Ok(Some(done));
        }
        // With the Batch API the job's calls are its own, recorded with it.
        let mut resources = self.resources.clone();
        let record = match &self.ledger_root {
            Some(r) => r
                .child(&format!("jobs/{}", job.dir))
                .context("preparing the job's run directory")?,
            None => out.clone(),
        };
        let _batches = resources.join_batches(&record).await?;
        // A job that ran before goes on as the same run: the one resume takes the lock.
        let replay = Replay::read(&out.root().join("events.jsonl"))
            .ok()
            .filter(|r| r.run_id.is_some());
        let interrupted = match &job.input {
            JobInput::Goal(_) => out.root().join("rounds").is_dir(),
            JobInput::Plan(_) => replay.is_some() && out.root().join(PLAN_FILE).is_file(),
        };
        if interrupted {
            drop(lock);
            return self.resume(job, out, resources).await;
        }
        if let JobInput::Goal(goal) = &job.input {
            return self.research(job, goal, out, resources).await;
        }
        // A journal without a plan yet: the same run id goes on, nothing done to keep.
        let run_id = replay
            .as_ref()
            .and_then(|r| r.run_id)
            .unwrap_or_else(uuid::Uuid::new_v4);
        let events = open_journal_mirrored(&out, "events.jsonl", run_id, self.mirror.clone())?;
        let Some((plan, source)) = Self::given_plan(job) else {
            let _ = events.close();
            return Err(RunnerError::message("a goal job runs the reflective loop"));
        };
        let plan = Arc::new(plan);
        self.watch.add_tasks(plan.len(), 0);
        let result = execute_plan(
            Execution {
                run: RunRequest {
                    run_id,
                    config: RunConfig {
                        plan_source: Some(source),
                        ..self.config.clone()
                    },
                    deadline: None,
                    preset: Vec::new(),
                    slots: self.slots.clone(),
                    cancel: self.cancel.child_token(),
                    ..resources.request(plan, &out, &events)
                },
                resources,
                stream: None,
                root_span: false,
            },
            &JobWatch(self.watch.for_job(&job.id)),
        )
        .await?;
        drop(lock);
        Ok(Some(result))
    }

    /// The settings a job runs with: the batch's, with the job's metadata, its plan's source,
    /// and no deadline of its own (the batch's cancels every job).
    fn job_settings(&self, job: &ResolvedJob) -> planwave_config::Settings {
        let mut settings = self.settings.clone();
        settings.planner.meta = job.metadata.clone();
        if !job.answers.is_empty() {
            settings.planner.answers = job.answers.clone();
        }
        settings.deadline = None;
        settings.run = RunConfig {
            plan_source: Self::given_plan(job).map(|(_, source)| source),
            ..self.config.clone()
        };
        settings
    }

    /// A job that ran before, going on through the one resume: a plan from its journal
    /// (completed tasks kept), a goal's loop from its rounds. `None` when the loop was
    /// cancelled before a round was shown.
    async fn resume(
        &self,
        job: &ResolvedJob,
        out: RunDir,
        resources: Resources,
    ) -> crate::Result<Option<RunResult>> {
        let r = ops::Resumable::with_spec(out.root(), job_spec(job, out.root().to_path_buf()))?;
        let settings = self.job_settings(job);
        let sink = self.watch.for_job(&job.id);
        let plan_watch = ResumedJobWatch {
            sink: sink.clone(),
            batch: self.watch,
        };
        let loop_watch = LoopJobWatch {
            sink,
            batch: self.watch,
        };
        let goal = matches!(job.input, JobInput::Goal(_));
        let io = ops::JobIo {
            watch: if goal { &loop_watch } else { &plan_watch },
            notes: self.notes,
            cancel: self.cancel.child_token(),
            stream: &|_| Ok(None),
            quiet: true,
            root_span: false,
        };
        let shared = ops::Shared {
            out: Some(out),
            // A goal's directory mirrors itself whole; a plan's journal goes to its stream.
            mirror: if goal { None } else { self.mirror.clone() },
            slots: self.slots.clone(),
        };
        let spec_job = ops::Job {
            spec: &r.spec,
            settings: &settings,
            resources,
            invocation: r.invocation.clone(),
        };
        let done = ops::resume_in(&r, spec_job, &io, &shared)
            .await
            .map_err(planning_failed)?;
        Ok(match done {
            ops::JobOutcome::Run { result, .. } => Some(*result),
            ops::JobOutcome::Loop { outcome, .. } => {
                outcome.shown_round().map(|r| r.result.clone())
            }
        })
    }

    /// A goal job: the reflective loop, as `research` runs it, its rounds under the job's
    /// run directory. `None` when cancelled before its first round ran.
    async fn research(
        &self,
        job: &ResolvedJob,
        goal: &str,
        out: RunDir,
        resources: Resources,
    ) -> crate::Result<Option<RunResult>> {
        let settings = self.job_settings(job);
        let done = crate::research(crate::Research {
            goal: goal.to_owned(),
            plan: None,
            resume: false,
            recover: false,
            out,
            resources,
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
        .map_err(planning_failed)?;
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

/// The job's verdict names what failed, as for a job planned on its own.
fn planning_failed(e: RunnerError) -> RunnerError {
    match e {
        RunnerError::Invalid(i) if i.source_name == "planner" => {
            RunnerError::message(format!("planning failed: {}", i.problems.join("; ")))
        }
        other => other,
    }
}

fn finished_run(out: &RunDir) -> Option<RunResult> {
    let text = std::fs::read_to_string(out.root().join("run.json")).ok()?;
    let r: RunResult = serde_json::from_str(&text).ok()?;
    // Stopped by the budget it is unfinished too: a resume goes on with it.
    let stopped = r.status == RunStatus::Cancelled
        || r.stop_reason == Some(planwave_record::CancelReason::Budget);
    (!stopped).then_some(r)
}
