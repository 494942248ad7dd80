//! `planwave batch JOBS.jsonl --out DIR`: many runs sharing one model client (so one rate
//! limiter), one cap on subagents in flight, and one Ctrl-C; a run directory per job under
//! `DIR/jobs/`, `DIR/batch.json` updated as each job ends, and a table at the end.
//! `planwave batch --resume DIR` continues after a crash: finished jobs are kept, the others
//! resume from their own journals.

mod nats;
pub(super) mod progress;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use planwave_batch::render_batch_table;
use planwave_runner::ops::{Batch, BatchEnd, read_job_file, resolve_batch, run_batch};
use planwave_runner::ops::{BatchInvocation, CtrlC, InvalidInput, Stderr};

use super::exit::{BUDGET, DEADLINE, INTERRUPTED, OK, Outcome, PARTIAL};
use super::job::{JobOptions, Prepare};
use super::llm::{self, ResearchOptions};
use super::progress::Mode;
use super::{Command, recorded_command};
use progress::{BatchProgress, BatchView};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BatchArgs {
    #[command(subcommand)]
    pub action: Option<nats::BatchAction>,
    /// Job file: one JSON object per line, `{"id": ..., "goal": "..."}`,
    /// `{"id": ..., "plan": {...}}`, `{"id": ..., "plan_file": "..."}` or
    /// `{"id": ..., "template": "...", "vars": {...}}` (files relative to the job file).
    /// Bad lines are reported with their number and skipped.
    #[arg(value_name = "JOBS.jsonl", required_unless_present = "resume")]
    pub job_file: Option<PathBuf>,
    /// Batch directory: `batch.json` and `jobs/<id>/` (one run directory per job).
    #[arg(long, value_name = "DIR", required_unless_present_any = ["resume", "batch"])]
    pub out: Option<PathBuf>,
    /// Queue the jobs on NATS JetStream (see --nats) for `planwave worker`s to run, under
    /// this batch name (letters, digits, '_', '-'). Submitting again adds no duplicate job.
    #[arg(long, value_name = "NAME", requires = "nats", conflicts_with_all = ["out", "resume"])]
    pub batch: Option<String>,
    /// With --nats: show progress until every job has a verdict, then the table.
    #[arg(long, requires = "nats")]
    pub wait: bool,
    #[command(flatten)]
    pub nats: super::nats::NatsOptions,
    /// Continue the interrupted batch in DIR (same settings as when it started).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["job_file", "out"])]
    pub resume: Option<PathBuf>,
    /// Jobs run at once.
    #[arg(long = "jobs", value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    pub parallel: u64,
    /// Most subagents in flight across all jobs (default: no cap beyond --concurrency per job);
    /// with --nats, across every worker running the batch's jobs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_subagents: Option<u64>,
    /// For each goal job: its rounds, planner and plan cache, as `research` has them.
    #[command(flatten)]
    pub research: ResearchOptions,
    #[command(flatten)]
    pub job: JobOptions,
    /// No progress output; only the final table.
    #[arg(short, long)]
    pub quiet: bool,
}

pub async fn batch(mut args: BatchArgs) -> anyhow::Result<Outcome> {
    if let Some(action) = args.action.take() {
        return nats::action(action).await;
    }
    if args.batch.is_some() {
        return nats::submit(args).await;
    }
    match &args.resume {
        Some(dir) => {
            let dir = dir
                .canonicalize()
                .with_context(|| format!("opening the batch directory {}", dir.display()))?;
            let mut recorded = recorded(&dir)?;
            // A batch stopped by its budget goes on with the larger one given now.
            let (now, then) = (&args.job.run.exec, &mut recorded.job.run.exec);
            then.max_tokens_total = now.max_tokens_total.or(then.max_tokens_total);
            then.max_cost = now.max_cost.or(then.max_cost);
            batch_in(recorded, dir, true, args.quiet).await
        }
        None => {
            let out = args.out.clone().context("--out is required")?;
            if let Some(jobs) = &args.job_file {
                planwave_runner::ops::claim_out_dir(&out, &[jobs], args.job.force)?;
            }
            batch_in(args, out, false, false).await
        }
    }
}

/// The batch command that started `dir`, from its `invocation.json`; also moves to the
/// directory it was started from, so the job file and plan files resolve the same way.
fn recorded(dir: &Path) -> Result<BatchArgs, InvalidInput> {
    let (inv, command) = recorded_command(dir)?;
    let _ = inv.origin.enter_cwd();
    match command {
        Command::Batch(a) if a.resume.is_none() => Ok(a),
        _ => Err(InvalidInput::one(
            dir.display().to_string(),
            "invocation.json does not record a batch",
        )),
    }
}

async fn batch_in(
    args: BatchArgs,
    out: PathBuf,
    resuming: bool,
    quiet_override: bool,
) -> anyhow::Result<Outcome> {
    let quiet = args.quiet || quiet_override;
    let settings = llm::settings(&[&args.job, &args.research])?;
    let job_file = args.job_file.clone().context("the job file is required")?;
    let jobs = read_job_file(&job_file)?;
    // One provider for every job: one HTTP client, one rate limiter, one retry budget.
    let resources = args.job.resources(&settings)?;
    let interrupt = CtrlC::listen();
    // One set of MCP servers for every job, shut down whatever happens.
    let resources = resources
        .start_mcp(settings.mcp.as_ref(), quiet, &Stderr)
        .await;
    resources
        .scope(async |resources| {
            let jobs = resolve_batch(&jobs, resources, &settings.planner.meta, &Stderr)?;
            let progress = Arc::new(BatchProgress::new(jobs.jobs.len(), Mode::detect(quiet)));
            let done = run_batch(Batch {
                jobs,
                out,
                resuming,
                invocation: if resuming {
                    None
                } else {
                    Some(BatchInvocation::current()?)
                },
                resources: resources.clone(),
                settings: &settings,
                parallel: args.parallel as usize,
                max_subagents: args.max_subagents.map(|n| n as usize),
                cancel: interrupt.token(),
                watch: &BatchView(progress.clone()),
                notes: &Stderr,
            })
            .await;
            progress.finish();
            let done = done?;
            print!("{}", render_batch_table(&done.summary));
            println!("batch: {}", done.root.root().join("batch.json").display());
            let code = match &done.end {
                BatchEnd::Budget(why) => {
                    println!(
                        "budget reached ({why}); finished work is saved. Continue with a larger budget: planwave batch --resume {} --max-tokens-total N (or --max-cost)",
                        done.root.root().display()
                    );
                    BUDGET
                }
                BatchEnd::Completed => OK,
                BatchEnd::Partial => PARTIAL,
                BatchEnd::Deadline | BatchEnd::Interrupted => {
                    let deadline = done.end == BatchEnd::Deadline;
                    println!(
                        "{}; finished work is saved. Continue with: planwave batch --resume {}",
                        if deadline {
                            "deadline reached"
                        } else {
                            "interrupted"
                        },
                        done.root.root().display()
                    );
                    if deadline { DEADLINE } else { INTERRUPTED }
                }
            };
            Ok(Outcome(code))
        })
        .await
}
