//! `planwave batch JOBS.jsonl --out DIR`: many runs sharing one model client (so one rate
//! limiter), one cap on subagents in flight, and one Ctrl-C; a run directory per job under
//! `DIR/jobs/`, `DIR/batch.json` updated as each job ends, and a table at the end.
//! `planwave batch --resume DIR` continues after a crash: finished jobs are kept, the others
//! resume from their own journals.

mod job;
mod progress;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Parser};
use futures::StreamExt;
use planwave_batch::{BatchSummary, JobSummary, parse_jobs, render_batch_table, resolve_jobs};
use planwave_engine::RunDir;
use tokio_util::sync::CancellationToken;

use super::exit::{DEADLINE, INTERRUPTED, InvalidInput, OK, Outcome, PARTIAL};
use super::llm::{self, LlmOptions, PlannerOptions, PromptOptions};
use super::mcp::{self, McpOptions};
use super::options::{ExecOptions, SimOptions};
use super::progress::Mode;
use super::run::{create_run_dir, lock_run_dir, record_invocation};
use super::{Cli, Command};
use job::{JobContext, run_job};
use progress::BatchProgress;

#[derive(Debug, Args)]
pub struct BatchArgs {
    /// Job file: one JSON object per line, `{"id": ..., "goal": "..."}`,
    /// `{"id": ..., "plan": {...}}` or `{"id": ..., "plan_file": "..."}` (relative to the
    /// job file). Bad lines are reported with their number and skipped.
    #[arg(value_name = "JOBS.jsonl", required_unless_present = "resume")]
    pub job_file: Option<PathBuf>,
    /// Batch directory: batch.json and jobs/<id>/ (one run directory per job).
    #[arg(long, value_name = "DIR", required_unless_present = "resume")]
    pub out: Option<PathBuf>,
    /// Continue the interrupted batch in DIR (same settings as when it started).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["job_file", "out"])]
    pub resume: Option<PathBuf>,
    /// Jobs run at once.
    #[arg(long = "jobs", value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    pub parallel: u64,
    /// Most subagents in flight across all jobs (default: no cap beyond --concurrency per job).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_subagents: Option<u64>,
    #[command(flatten)]
    pub planner: PlannerOptions,
    #[command(flatten)]
    pub exec: ExecOptions,
    #[command(flatten)]
    pub llm: LlmOptions,
    #[command(flatten)]
    pub prompts: PromptOptions,
    #[command(flatten)]
    pub sim: SimOptions,
    /// MCP servers are started once for the whole batch and shared by every job.
    #[command(flatten)]
    pub mcp: McpOptions,
    /// No progress output; only the final table.
    #[arg(short, long)]
    pub quiet: bool,
}

pub async fn batch(args: BatchArgs) -> anyhow::Result<Outcome> {
    match &args.resume {
        Some(dir) => {
            let dir = dir
                .canonicalize()
                .with_context(|| format!("opening the batch directory {}", dir.display()))?;
            let recorded = recorded(&dir)?;
            run_batch(recorded, dir, true, args.quiet).await
        }
        None => {
            let out = args.out.clone().context("--out is required")?;
            run_batch(args, out, false, false).await
        }
    }
}

/// The batch command that started `dir`, from its `invocation.json`; also moves to the
/// directory it was started from, so the job file and plan files resolve the same way.
fn recorded(dir: &Path) -> Result<BatchArgs, InvalidInput> {
    let bad = |p: String| InvalidInput {
        source_name: dir.display().to_string(),
        problems: vec![p],
    };
    #[derive(serde::Deserialize)]
    struct Invocation {
        argv: Vec<String>,
        cwd: PathBuf,
    }
    let text = std::fs::read_to_string(dir.join("invocation.json")).map_err(|e| {
        bad(format!(
            "not a batch directory: cannot read invocation.json: {e}"
        ))
    })?;
    let inv: Invocation = serde_json::from_str(&text)
        .map_err(|e| bad(format!("invocation.json is not valid: {e}")))?;
    let cli = Cli::try_parse_from(std::iter::once("planwave".to_owned()).chain(inv.argv))
        .map_err(|e| bad(format!("invocation.json: {}", e.to_string().trim())))?;
    let _ = std::env::set_current_dir(&inv.cwd);
    match cli.command {
        Command::Batch(a) if a.resume.is_none() => Ok(a),
        _ => Err(bad("invocation.json does not record a batch".into())),
    }
}

async fn run_batch(
    args: BatchArgs,
    out: PathBuf,
    resuming: bool,
    quiet_override: bool,
) -> anyhow::Result<Outcome> {
    // One set of MCP servers for every job, shut down whatever happens.
    let settings = llm::settings(&[
        &args.llm,
        &args.prompts,
        &args.planner,
        &args.exec,
        &args.mcp,
    ])?;
    let registry = mcp::start(settings.mcp.as_ref(), args.quiet || quiet_override).await;
    let result = run_batch_with(
        args,
        settings,
        out,
        resuming,
        quiet_override,
        registry.clone(),
    )
    .await;
    if let Some(r) = registry {
        r.shutdown().await;
    }
    result
}

async fn run_batch_with(
    args: BatchArgs,
    settings: planwave_config::Settings,
    out: PathBuf,
    resuming: bool,
    quiet_override: bool,
    registry: Option<Arc<planwave_mcp::McpRegistry>>,
) -> anyhow::Result<Outcome> {
    let clock = Instant::now();
    let job_file = args.job_file.clone().context("the job file is required")?;
    let text = std::fs::read_to_string(&job_file).map_err(|e| InvalidInput {
        source_name: job_file.display().to_string(),
        problems: vec![format!("cannot read the job file: {e}")],
    })?;
    let base = job_file.parent().map(Path::to_path_buf).unwrap_or_default();
    // Checked like `run` checks a plan: tool steps must name a tool the batch has.
    let catalog = mcp::catalog(registry.as_deref());
    let (jobs, bad_lines) = resolve_jobs(parse_jobs(&text), &base, Some(&catalog));
    let name = job_file.display().to_string();
    for b in &bad_lines {
        eprintln!("{name}: {b} (skipped)");
    }
    if jobs.is_empty() {
        return Err(InvalidInput {
            source_name: name,
            problems: vec!["no job to run (every line is bad or the file is empty)".into()],
        }
        .into());
    }

    let root = create_run_dir(&out).context("preparing the batch directory")?;
    // RunDir makes sections/ for a run; a batch directory has none (remove_dir: only if empty).
    let _ = std::fs::remove_dir(root.root().join("sections"));
    std::fs::create_dir_all(root.root().join("jobs"))
        .with_context(|| format!("creating {}", root.root().join("jobs").display()))?;
    let _lock = lock_run_dir(&root)?;
    if !resuming {
        record_invocation(&root)?;
    }
    let previous = if resuming {
        read_previous(&root)
    } else {
        Vec::new()
    };

    // One provider for every job: one HTTP client, one rate limiter, one retry budget.
    let templates = llm::templates(&settings)?;
    let provider = llm::provider(&settings, args.sim.sim_config(args.exec.seed)?)?;
    let slots = args
        .max_subagents
        .map(|n| Arc::new(tokio::sync::Semaphore::new(n as usize)));
    let quiet = args.quiet || quiet_override;
    let progress = Arc::new(BatchProgress::new(jobs.len(), Mode::detect(quiet)));
    let cancel = CancellationToken::new();
    // --deadline (or [run] deadline_secs) bounds the whole batch: it stops like Ctrl-C.
    let deadline_hit = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let deadline_timer = settings.deadline.map(|d| {
        let cancel = cancel.clone();
        let hit = deadline_hit.clone();
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            hit.store(true, std::sync::atomic::Ordering::SeqCst);
            cancel.cancel();
        })
    });
    let ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let ctx = Arc::new(JobContext {
        root: root.clone(),
        provider,
        templates,
        config: settings.run.clone(),
        settings,
        slots,
        mcp: registry,
        cancel: cancel.clone(),
        progress: progress.clone(),
    });

    let done: Arc<Mutex<Vec<JobSummary>>> = Arc::new(Mutex::new(Vec::new()));
    let mut to_run = Vec::new();
    for job in jobs {
        match previous
            .iter()
            .find(|p| p.id == job.id && p.state.is_finished())
        {
            Some(p) => {
                progress.skipped(&job.id);
                lock(&done).push(p.clone());
            }
            None => to_run.push(job),
        }
    }
    let write_summary = |done: &[JobSummary]| -> anyhow::Result<()> {
        let s = BatchSummary::new(
            done.to_vec(),
            bad_lines.clone(),
            clock.elapsed().as_secs_f64() * 1000.0,
        );
        root.write_json("batch.json", &s)?;
        Ok(())
    };
    write_summary(&lock(&done))?;
    let mut runs = futures::stream::iter(to_run.into_iter().map(|job| {
        let ctx = ctx.clone();
        async move { run_job(&ctx, job).await }
    }))
    .buffer_unordered(args.parallel as usize);
    while let Some(summary) = runs.next().await {
        let mut d = lock(&done);
        d.push(summary.clone());
        // batch.json is rewritten (durably) as each job ends, so a crash loses no verdict;
        // only then is the job reported finished.
        if let Err(e) = write_summary(&d) {
            eprintln!("warning: {e:#}");
        }
        progress.job_finished(&summary);
    }
    ctrl_c.abort();
    if let Some(t) = deadline_timer {
        t.abort();
    }
    progress.finish();
    let done = lock(&done).clone();
    let mut summary = BatchSummary::new(
        done,
        bad_lines.clone(),
        clock.elapsed().as_secs_f64() * 1000.0,
    );
    summary.transport_retries = ctx.provider.retry_counts();
    root.write_json("batch.json", &summary)?;
    print!("{}", render_batch_table(&summary));
    println!("batch: {}", root.root().join("batch.json").display());
    if cancel.is_cancelled() || summary.cancelled > 0 {
        let deadline = deadline_hit.load(std::sync::atomic::Ordering::SeqCst);
        println!(
            "{}; finished work is saved. Continue with: planwave batch --resume {}",
            if deadline {
                "deadline reached"
            } else {
                "interrupted"
            },
            root.root().display()
        );
        return Ok(Outcome(if deadline { DEADLINE } else { INTERRUPTED }));
    }
    let all_good = summary.completed == summary.jobs.len() && summary.bad_lines.is_empty();
    Ok(Outcome(if all_good { OK } else { PARTIAL }))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The jobs `batch.json` already records (a resume).
fn read_previous(root: &RunDir) -> Vec<JobSummary> {
    std::fs::read_to_string(root.root().join("batch.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<BatchSummary>(&t).ok())
        .map(|s| s.jobs)
        .unwrap_or_default()
}
