//! A batch as a job: many runs sharing one model client (so one rate limiter), one cap on
//! subagents in flight and one cancellation; a run directory per job under `DIR/jobs/`, and
//! `DIR/batch.json` rewritten (durably) as each job ends. Resuming skips finished jobs and
//! continues the others from their own journals.

mod job;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::error::Context;
use futures::StreamExt;
use planwave_batch::{BadLine, BatchSummary, JobSummary, ResolvedJob, parse_jobs, resolve_jobs};
use planwave_config::Settings;
use planwave_record::EventSink;
use planwave_storage::{RunDir, RunLock};
use tokio_util::sync::CancellationToken;

use crate::{BatchInvocation, InvalidInput, Notes, Resources, lock_run_dir, open_run_dir};
pub use job::{JobContext, PLAN_FILE, job_spec};

/// How a front end watches a batch.
pub trait BatchWatch: Send + Sync {
    fn job_started(&self, id: &str);
    /// A job `batch.json` already records as finished (a resume).
    fn skipped(&self, id: &str);
    /// A job's plan is known: `total` tasks, `done` of them kept from an earlier attempt.
    fn add_tasks(&self, total: usize, done: usize);
    /// After `batch.json` records the job.
    fn job_finished(&self, summary: &JobSummary);
    /// The events of one job's run.
    fn for_job(&self, id: &str) -> Arc<dyn EventSink>;
}

/// The job file's bytes (each line is checked for UTF-8 on its own, so one bad line is
/// reported and skipped like any other) and the directory its relative plan files are read
/// from.
pub struct JobFileText {
    pub name: String,
    pub bytes: Vec<u8>,
    pub base: PathBuf,
}

/// Reads the job file (before anything is started).
pub fn read_job_file(path: &Path) -> Result<JobFileText, InvalidInput> {
    let bytes = crate::input_size::read_input(path)
        .map_err(|e| InvalidInput::one(path.display().to_string(), format!("job file: {e}")))?;
    Ok(JobFileText {
        name: path.display().to_string(),
        bytes,
        base: path.parent().map(Path::to_path_buf).unwrap_or_default(),
    })
}

/// The job file's valid jobs and its bad lines (each already noted).
pub struct BatchJobs {
    pub jobs: Vec<ResolvedJob>,
    pub bad_lines: Vec<BadLine>,
}

/// Parses the job file and resolves its jobs (plan files read, plans validated against the
/// batch's tools, a run directory name each). Bad lines are noted and skipped; a file with
/// no valid job is bad input.
pub fn resolve_batch(
    file: &JobFileText,
    resources: &Resources,
    meta: &std::collections::BTreeMap<String, String>,
    notes: &dyn Notes,
) -> Result<BatchJobs, InvalidInput> {
    // Checked like a single run checks its plan: tool steps must name a tool the batch has.
    resolve_batch_with(file, Some(&resources.catalog()), meta, notes)
}

/// As [`resolve_batch`], tool steps checked against `tools` (`None`: not checked here, as
/// when a batch is queued for workers that check them against their own MCP servers).
pub fn resolve_batch_with(
    file: &JobFileText,
    tools: Option<&planwave_plan::ToolCatalog>,
    meta: &std::collections::BTreeMap<String, String>,
    notes: &dyn Notes,
) -> Result<BatchJobs, InvalidInput> {
    let (jobs, bad_lines) = resolve_jobs(parse_jobs(&file.bytes), &file.base, tools, meta, &|p| {
        crate::input_size::read_input(p).map_err(|e| e.to_string())
    });
    for bad in &bad_lines {
        notes.note(&format!("{}: {bad} (skipped)", file.name));
    }
    if jobs.is_empty() {
        return Err(InvalidInput::one(
            &file.name,
            "no job to run (every line is bad or the file is empty)",
        ));
    }
    Ok(BatchJobs { jobs, bad_lines })
}

pub struct Batch<'a> {
    pub jobs: BatchJobs,
    pub out: PathBuf,
    /// Continue the batch in `out`: finished jobs are kept.
    pub resuming: bool,
    /// Recorded in `invocation.json` when the batch starts (not when it resumes).
    pub invocation: Option<BatchInvocation>,
    /// With the MCP servers started: every job shares them.
    pub resources: Resources,
    /// The planner's and the engine's settings for every job, and the whole batch's deadline
    /// (it stops like a cancellation).
    pub settings: &'a Settings,
    /// Jobs run at once.
    pub parallel: usize,
    /// Most subagents in flight across all jobs.
    pub max_subagents: Option<usize>,
    pub cancel: CancellationToken,
    pub watch: &'a dyn BatchWatch,
    pub notes: &'a dyn Notes,
}

/// How the batch ended, for the front end's exit status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchEnd {
    /// Every job completed and every line was a valid job.
    Completed,
    /// Some job did not complete, or bad lines were skipped.
    Partial,
    /// The deadline passed; resuming goes on.
    Deadline,
    /// Cancelled; resuming goes on.
    Interrupted,
    /// The budget (`--max-tokens-total`, `--max-cost`) was spent: the jobs left did not
    /// start, or stopped with their tasks `blocked`; resuming with a larger budget goes on.
    Budget(String),
}

pub struct BatchOutcome {
    pub summary: BatchSummary,
    pub root: RunDir,
    pub end: BatchEnd,
}

/// Runs every job of the file (the ones not finished yet, when resuming).
pub async fn run_batch(b: Batch<'_>) -> crate::Result<BatchOutcome> {
    let clock = Instant::now();
    let BatchJobs { jobs, bad_lines } = b.jobs;
    let (root, _lock) = open_batch_dir(&b.out, b.resuming, b.invocation.as_ref())?;
    let previous = if b.resuming {
        read_previous(&root)
    } else {
        Vec::new()
    };
    let deadline_hit = Arc::new(AtomicBool::new(false));
    let deadline_timer = b.settings.deadline.map(|d| {
        let (cancel, hit) = (b.cancel.clone(), deadline_hit.clone());
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            hit.store(true, Ordering::SeqCst);
            cancel.cancel();
        })
    });
    // One budget for the whole batch, what its earlier sessions spent counted in.
    crate::budget::check_priced(
        b.settings.budget,
        &b.settings.run.prices,
        b.resources.provider.as_ref(),
    )?;
    let spent = previous.iter().fold((0, 0.0), |(t, c), j| {
        (t + j.tokens, c + j.cost.unwrap_or(0.0))
    });
    let (resources, budget) =
        b.resources
            .budgeted(b.settings.budget, &b.settings.run.prices, spent);
    let ctx = JobContext {
        root: root.clone(),
        settings: b.settings,
        resources,
        budget: budget.clone(),
        config: b.settings.run.clone(),
        slots: b
            .max_subagents
            .map(|n| Arc::new(tokio::sync::Semaphore::new(n)) as planwave_engine::Slots),
        cancel: b.cancel.clone(),
        watch: b.watch,
        notes: b.notes,
        mirror: None,
        ledger_root: None,
    };
    let book = Book {
        root: &root,
        bad_lines: &bad_lines,
        clock,
        done: Mutex::new(Vec::new()),
    };
    let to_run = book.skip_finished(jobs, &previous, b.watch)?;
    let mut runs = futures::stream::iter(to_run.into_iter().map(|job| ctx.run(job)))
        .buffer_unordered(b.parallel.max(1));
    while let Some(summary) = runs.next().await {
        book.finished(summary, b.watch, b.notes);
    }
    drop(runs);
    if let Some(t) = deadline_timer {
        t.abort();
    }
    let mut summary = book.summary();
    summary.transport_retries = b.resources.provider.retry_counts();
    root.write_json("batch.json", &summary)?;
    let reached = budget.as_ref().and_then(|b| b.reached());
    let end = if let Some(why) = reached.filter(|_| summary.completed < summary.jobs.len()) {
        BatchEnd::Budget(why)
    } else if b.cancel.is_cancelled() || summary.cancelled > 0 {
        if deadline_hit.load(Ordering::SeqCst) {
            BatchEnd::Deadline
        } else {
            BatchEnd::Interrupted
        }
    } else if summary.completed == summary.jobs.len() && summary.bad_lines.is_empty() {
        BatchEnd::Completed
    } else {
        BatchEnd::Partial
    };
    Ok(BatchOutcome { summary, root, end })
}

/// The batch directory (durable, locked), with `jobs/` and, for a new batch, its invocation.
fn open_batch_dir(
    out: &Path,
    resuming: bool,
    invocation: Option<&BatchInvocation>,
) -> crate::Result<(RunDir, RunLock)> {
    let root = open_run_dir(out).context("preparing the batch directory")?;
    // RunDir makes sections/ for a run; a batch directory has none (remove_dir: only if empty).
    let _ = std::fs::remove_dir(root.root().join("sections"));
    let jobs = root.path("jobs")?;
    std::fs::create_dir_all(&jobs).with_context(|| format!("creating {}", jobs.display()))?;
    let lock = lock_run_dir(&root)?;
    if let (false, Some(inv)) = (resuming, invocation) {
        inv.record(&root)?;
    }
    Ok((root, lock))
}

/// The batch's verdicts so far, and `batch.json` kept in step with them.
struct Book<'a> {
    root: &'a RunDir,
    bad_lines: &'a [BadLine],
    clock: Instant,
    done: Mutex<Vec<JobSummary>>,
}

impl Book<'_> {
    fn done(&self) -> std::sync::MutexGuard<'_, Vec<JobSummary>> {
        self.done.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn summary(&self) -> BatchSummary {
        BatchSummary::new(
            self.done().clone(),
            self.bad_lines.to_vec(),
            self.clock.elapsed().as_secs_f64() * 1000.0,
        )
    }

    /// The jobs still to run; finished ones are recorded as they were, and `batch.json`
    /// written.
    fn skip_finished(
        &self,
        jobs: Vec<ResolvedJob>,
        previous: &[JobSummary],
        watch: &dyn BatchWatch,
    ) -> crate::Result<Vec<ResolvedJob>> {
        let mut to_run = Vec::new();
        for job in jobs {
            match previous
                .iter()
                .find(|p| p.id == job.id && p.state.is_finished())
            {
                Some(p) => {
                    watch.skipped(&job.id);
                    self.done().push(p.clone());
                }
                None => to_run.push(job),
            }
        }
        self.root.write_json("batch.json", &self.summary())?;
        Ok(to_run)
    }

    /// `batch.json` is rewritten (durably) as each job ends, so a crash loses no verdict;
    /// only then is the job reported finished.
    fn finished(&self, summary: JobSummary, watch: &dyn BatchWatch, notes: &dyn Notes) {
        self.done().push(summary.clone());
        if let Err(e) = self.root.write_json("batch.json", &self.summary()) {
            notes.note(&format!("warning: {e:#}"));
        }
        watch.job_finished(&summary);
    }
}

/// The jobs `batch.json` already records (a resume).
fn read_previous(root: &RunDir) -> Vec<JobSummary> {
    std::fs::read_to_string(root.root().join("batch.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<BatchSummary>(&t).ok())
        .map(|s| s.jobs)
        .unwrap_or_default()
}
