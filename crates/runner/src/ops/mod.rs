//! The operations every front end calls (cargo's `ops` layer): [`run`], [`research`] and
//! [`resume`], each taking the job's [`JobSpec`] (as the person chose it) with its resolved
//! settings and prepared resources, and the front end's [`JobIo`] (its view, its notes, its
//! cancellation token, its `--events` stream), and returning a [`JobOutcome`]. Each claims
//! the run directory (open, lock), records the spec as `invocation.json`, journals and
//! executes, as the CLI, the HTTP server and any other front end would otherwise each do by
//! hand. Resuming knows every kind of run directory in one place ([`Resumable::open`]).
//!
//! What they leave to the front end: parsing its input into a spec, resolving the settings
//! (`JobSpec::settings`), preparing and starting the resources (so a server shares one model
//! client and its MCP servers across jobs), checking `--out` before anything starts
//! ([`claim_out_dir`]), and telling the outcome (a summary and an exit
//! code, a job's state on a page).
//!
//! With [`term`](crate::term), this module is the runner's whole public surface: the
//! operations, and below them what a front end needs to prepare a job and tell its outcome.
//! Everything else in the crate is its own.

mod resume;

use planwave_engine::RunRequest;
use std::sync::Arc;

use planwave_config::Settings;
use planwave_config::spec::JobSpec;
use planwave_engine::RunConfig;
use planwave_plan::ValidatedPlan;
use planwave_record::{PlanSource, RunResult};
use planwave_storage::{JournalMirror, JsonlSink, RunDir};
use tokio_util::sync::CancellationToken;

pub use resume::{Resumable, ResumeKind, resume, resume_in};

// A job file (`batch`) and its jobs.
pub use crate::batch::{
    Batch, BatchEnd, BatchWatch, JobContext, PLAN_FILE, job_spec, read_job_file, resolve_batch,
    resolve_batch_with, run_batch,
};
// Preparing a job: its input, resources, directory and plan.
pub use crate::{
    input::InvalidInput, input::load_plan, input::parse_plan_source, input::validate_plan,
    input_size::set_max_input_bytes, invocation::BatchInvocation, invocation::Invocation,
    outdir::claim_out_dir, outdir::inside, plan_cache::PlanCache, planning::PlanRequest,
    planning::plan_goal, provider_batches::ProviderBatches, resources::Resources,
    resources::model_client, resources::tool_catalog, validator::CommandValidator,
    validator::ValidatorError, workdir::lock_run_dir, workdir::open_run_dir,
};
// Watching it, stopping it, telling its outcome.
pub use crate::{
    error::Result, error::RunnerError, execute::Watch, execute::Watcher, interrupt::CtrlC,
    interrupt::stop_signal, interrupt::terminated, needs_input::NEEDS_INPUT,
    needs_input::NeedsInputRun, needs_input::questions_in, notes::Notes, notes::Silent,
    notes::Stderr, notes::printable, pdf::print_pdf, research::ResearchOutcome,
};
// What a directory holds, for `show` and the server's listings.
pub use crate::{
    dir_holds::DirHolds, dir_holds::dir_holds, dir_holds::last_provider_batch,
    plan_cache::MedianCall, run_metrics::RunsMetrics, run_metrics::runs_metrics,
    run_metrics::runs_under,
};

use crate::{Execution, Research, execute_plan, open_journal};

/// The `--events` stream of a run id, if the front end wants one.
pub type StreamFor<'a> = &'a (dyn Fn(uuid::Uuid) -> crate::Result<Option<Arc<JsonlSink>>> + Sync);

/// What a front end lends an operation.
pub struct JobIo<'a> {
    pub watch: &'a dyn Watch,
    pub notes: &'a dyn Notes,
    pub cancel: CancellationToken,
    pub stream: StreamFor<'a>,
    /// No progress lines (the MCP servers' and the loop's).
    pub quiet: bool,
    /// The process's root span gets the run's fields (a command's own run, not a server's).
    pub root_span: bool,
}

/// A job ready to run: its spec, the settings resolved from it, and the resources it runs
/// with (prepared, the MCP servers started).
pub struct Job<'a> {
    pub spec: &'a JobSpec,
    pub settings: &'a Settings,
    pub resources: Resources,
    /// What is recorded as the run's `invocation.json` (the spec, and the directory its
    /// relative paths are relative to): [`Invocation::job`], or for a command
    /// [`Invocation::current_job`]. Not written again by a resume.
    pub invocation: Invocation,
}

/// What a batch's job brings to an operation besides its spec (a command and the server
/// bring nothing: [`Shared::default`]).
#[derive(Clone, Default)]
pub struct Shared {
    /// The run directory as the front end opened it (a queue worker's mirrors every file it
    /// writes into JetStream); `None`: the operation opens the spec's.
    pub out: Option<RunDir>,
    /// Where journal lines must also be stored before they count as durable (a queue
    /// worker's stream).
    pub mirror: Option<Arc<dyn JournalMirror>>,
    /// The run slots the batch's jobs share.
    pub slots: Option<planwave_engine::Slots>,
}

impl Job<'_> {
    /// The job's model client counting against its budget, with what an earlier session
    /// in `dir` spent (none without a budget).
    fn budgeted(&mut self, dir: &std::path::Path) -> crate::Result<()> {
        let (resources, _) = crate::budget::budgeted(
            &self.resources,
            self.settings.budget,
            &self.settings.run.prices,
            dir,
        )?;
        self.resources = resources;
        Ok(())
    }
}

impl Shared {
    fn open(&self, dir: &std::path::Path) -> crate::Result<RunDir> {
        match &self.out {
            Some(out) => Ok(out.clone()),
            None => open_run_dir(dir),
        }
    }
}

/// How a job ended.
pub enum JobOutcome {
    /// One execution of a plan (`run`, or its resume).
    Run { result: Box<RunResult>, out: RunDir },
    /// The reflective loop: `research`, or `run --recover`'s one round (`planned` false:
    /// the plan came from a file, not the planner).
    Loop {
        outcome: ResearchOutcome,
        out: RunDir,
        planned: bool,
    },
}

impl JobOutcome {
    pub fn out(&self) -> &RunDir {
        match self {
            JobOutcome::Run { out, .. } | JobOutcome::Loop { out, .. } => out,
        }
    }
}

/// Runs `plan` (validated by the front end against the resources' tools) as `job.spec`
/// says: one execution, or with `recover` the reflective loop's one round.
pub async fn run(
    mut job: Job<'_>,
    plan: ValidatedPlan,
    io: &JobIo<'_>,
) -> crate::Result<JobOutcome> {
    let out = open_run_dir(&job.spec.out)?;
    let _lock = lock_run_dir(&out)?;
    job.budgeted(out.root())?;
    job.invocation.record(&out)?;
    let _batches = job.resources.join_batches(&out).await?;
    let run_id = uuid::Uuid::new_v4();
    let stream = (io.stream)(run_id)?;
    if job.spec.recovers() {
        let goal = recover_goal(&plan);
        let outcome = loop_job(
            &job,
            &out,
            goal,
            Some(plan),
            false,
            run_id,
            stream,
            io,
            None,
        )
        .await?;
        return Ok(JobOutcome::Loop {
            outcome,
            out,
            planned: false,
        });
    }
    let events = open_journal(&out, "events.jsonl", run_id)?;
    let result = execute_plan(
        Execution {
            run: RunRequest {
                run_id,
                config: RunConfig {
                    plan_source: Some(PlanSource::File),
                    ..job.settings.run.clone()
                },
                deadline: job.settings.deadline,
                preset: Vec::new(),
                slots: None,
                cancel: io.cancel.clone(),
                ..job.resources.request(Arc::new(plan), &out, &events)
            },
            resources: job.resources.clone(),
            stream,
            root_span: io.root_span,
        },
        io.watch,
    )
    .await?;
    Ok(JobOutcome::Run {
        result: Box::new(result),
        out,
    })
}

/// The reflective loop for the spec's goal, into the spec's run directory.
pub async fn research(mut job: Job<'_>, io: &JobIo<'_>) -> crate::Result<JobOutcome> {
    let out = open_run_dir(&job.spec.out)?;
    let _lock = lock_run_dir(&out)?;
    job.budgeted(out.root())?;
    job.invocation.record(&out)?;
    let _batches = job.resources.join_batches(&out).await?;
    let run_id = uuid::Uuid::new_v4();
    let stream = (io.stream)(run_id)?;
    let goal = job.spec.goal().unwrap_or_default().to_owned();
    let outcome = loop_job(&job, &out, goal, None, false, run_id, stream, io, None).await?;
    Ok(JobOutcome::Loop {
        outcome,
        out,
        planned: true,
    })
}

/// The goal `--recover` replans for: the plan's topic. A step plan may have none; its first
/// task still says what it is about.
pub fn recover_goal(plan: &ValidatedPlan) -> String {
    let topic = &plan.spec().topic;
    if topic.trim().is_empty() {
        plan.task(0).title().to_owned()
    } else {
        topic.clone()
    }
}

/// The loop over `out` (opened and locked by the caller): fresh, or (`resume`) from its
/// rounds; `plan`: `run --recover`'s; `slots`: a batch's.
#[allow(clippy::too_many_arguments)]
async fn loop_job(
    job: &Job<'_>,
    out: &RunDir,
    goal: String,
    plan: Option<ValidatedPlan>,
    resume: bool,
    run_id: uuid::Uuid,
    stream: Option<Arc<JsonlSink>>,
    io: &JobIo<'_>,
    slots: Option<planwave_engine::Slots>,
) -> crate::Result<ResearchOutcome> {
    let recover = job.spec.recovers();
    let stream_plan = match &job.spec.work {
        planwave_config::spec::Work::Goal { stream_plan, .. } => *stream_plan && !resume,
        planwave_config::spec::Work::Plan { .. } => false,
    };
    crate::research(Research {
        goal,
        plan,
        resume,
        recover: resume && recover,
        out: out.clone(),
        resources: job.resources.clone(),
        settings: job.settings,
        run_id,
        stream,
        quiet: io.quiet,
        cancel: io.cancel.clone(),
        watch: io.watch,
        notes: io.notes,
        slots,
        // A resume finishes the recorded plan; only a fresh research streams it.
        stream_plan,
    })
    .await
}
