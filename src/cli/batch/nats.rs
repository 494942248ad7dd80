//! The queued batch: `batch JOBS.jsonl --nats URL --batch NAME [--wait]` and
//! `batch status|fetch|cancel NAME --nats URL`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use planwave_batch::render_batch_table;
use planwave_queue::{BatchStatus, Queue, QueueState};
use planwave_runner::ops::{CtrlC, Stderr};
use planwave_runner::ops::{read_job_file, resolve_batch_with};

use super::BatchArgs;
use crate::cli::exit::{INTERRUPTED, InvalidInput, OK, Outcome, PARTIAL};
use crate::cli::llm;
use crate::cli::nats::NatsOptions;

#[derive(Debug, Subcommand)]
pub enum BatchAction {
    /// A queued batch's jobs: state (queued, running on which worker, completed, partial,
    /// failed with the reason, cancelled), counts, tokens and cost.
    Status(StatusArgs),
    /// Write a queued batch's finished jobs as a local batch directory (batch.json and
    /// `jobs/<id>/` run directories), so `show` works on them.
    Fetch(FetchArgs),
    /// Cancel a queued batch: queued jobs are dropped, running ones stop like Ctrl-C.
    Cancel(CancelArgs),
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The batch's name (as given to --batch).
    pub name: String,
    #[command(flatten)]
    pub nats: NatsOptions,
    /// JSON for scripts instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The batch's name (as given to --batch).
    pub name: String,
    #[command(flatten)]
    pub nats: NatsOptions,
    /// Directory to write (batch.json and jobs/).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The batch's name (as given to --batch).
    pub name: String,
    #[command(flatten)]
    pub nats: NatsOptions,
}

pub async fn action(a: BatchAction) -> anyhow::Result<Outcome> {
    match a {
        BatchAction::Status(a) => {
            let q = a.nats.connect("planwave batch status").await?;
            let s = planwave_queue::status(&q, &a.name).await?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print!("{}", render_status(&s));
            }
            Ok(Outcome(OK))
        }
        BatchAction::Fetch(a) => {
            planwave_queue::check_fetch_dir(&a.out, &a.name)
                .map_err(|p| InvalidInput::one(a.out.display().to_string(), p))?;
            let q = a.nats.connect("planwave batch fetch").await?;
            let f = planwave_queue::fetch(&q, &a.name, &a.out).await?;
            print!("{}", render_batch_table(&f.summary));
            println!("batch: {}", a.out.join("batch.json").display());
            if !f.unfinished.is_empty() {
                println!(
                    "{} job(s) not finished yet (not written): {}",
                    f.unfinished.len(),
                    f.unfinished.join(", ")
                );
                return Ok(Outcome(PARTIAL));
            }
            Ok(Outcome(OK))
        }
        BatchAction::Cancel(a) => {
            let q = a.nats.connect("planwave batch cancel").await?;
            let dropped = planwave_queue::cancel(&q, &a.name).await?;
            println!(
                "batch {} cancelled: {dropped} queued job(s) dropped; running ones are stopping",
                a.name
            );
            Ok(Outcome(OK))
        }
    }
}

/// `batch JOBS.jsonl --nats URL --batch NAME`: checks the file like a local batch (bad lines
/// reported and skipped), queues its jobs, and with `--wait` shows progress until the end.
pub async fn submit(args: BatchArgs) -> anyhow::Result<Outcome> {
    let name = args
        .batch
        .clone()
        .context("--batch NAME is required with --nats")?;
    planwave_queue::check_batch_name(&name)?;
    if let Some(n) = args.max_subagents
        && n > planwave_queue::MAX_SUBAGENTS
    {
        return Err(InvalidInput::one(
            format!("--max-subagents {n}"),
            format!("with --nats, at most {}", planwave_queue::MAX_SUBAGENTS),
        )
        .into());
    }
    let settings = llm::settings(&[&args.job, &args.research])?;
    let job_file = args.job_file.clone().context("the job file is required")?;
    let file = read_job_file(&job_file)?;
    // Plans are checked here for all but their tools (each worker checks those against its
    // own MCP servers); submitting needs no model and no API key.
    let jobs = resolve_batch_with(&file, None, &settings.planner.meta, &Stderr)?;
    let q = args.nats.connect("planwave batch").await?;
    let opts = planwave_queue::BatchOptions {
        max_subagents: args.max_subagents,
    };
    let done = planwave_queue::submit_with(&q, &name, &jobs.jobs, &jobs.bad_lines, &opts).await?;
    println!(
        "batch {name}: {} job(s) queued, {} already in the batch{}",
        done.added,
        done.existing,
        if jobs.bad_lines.is_empty() {
            String::new()
        } else {
            format!(", {} bad line(s) skipped", jobs.bad_lines.len())
        }
    );
    if !args.wait {
        return Ok(Outcome(if jobs.bad_lines.is_empty() {
            OK
        } else {
            PARTIAL
        }));
    }
    wait(&q, &name, args.quiet).await
}

/// Progress lines until every job has a verdict; then the table.
async fn wait(q: &Queue, name: &str, quiet: bool) -> anyhow::Result<Outcome> {
    let interrupt = CtrlC::listen();
    let token = interrupt.token();
    let mut last = String::new();
    loop {
        let s = planwave_queue::status(q, name).await?;
        let line = format!(
            "batch {name}: {} queued, {} running, {} completed, {} partial, {} failed, {} cancelled",
            s.counts.queued,
            s.counts.running,
            s.counts.completed,
            s.counts.partial,
            s.counts.failed,
            s.counts.cancelled
        );
        if !quiet && line != last {
            eprintln!("{line}");
            last = line;
        }
        if s.is_done() {
            print!("{}", render_status(&s));
            let all_good = s.counts.completed == s.jobs.len() && s.bad_lines.is_empty();
            return Ok(Outcome(if all_good { OK } else { PARTIAL }));
        }
        tokio::select! {
            _ = token.cancelled() => {
                println!("stopped waiting; the batch goes on (planwave batch status {name})");
                return Ok(Outcome(INTERRUPTED));
            }
            // Polling the bucket: one read per job each second is cheap next to a job.
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

fn render_status(s: &BatchStatus) -> String {
    let mut out = format!(
        "{:<24} {:<10} {:<24} {:>9} {:>9}  reason\n",
        "job", "state", "worker", "tasks", "tokens"
    );
    for j in &s.jobs {
        let tasks = j
            .summary
            .as_ref()
            .map(|x| format!("{}/{}", x.completed, x.tasks))
            .unwrap_or_else(|| "-".into());
        let tokens = j.summary.as_ref().map(|x| x.tokens).unwrap_or(0);
        let worker = match j.state {
            QueueState::Queued => "-",
            _ => j.worker.as_deref().unwrap_or("-"),
        };
        out.push_str(&format!(
            "{:<24} {:<10} {:<24} {:>9} {:>9}  {}\n",
            planwave_runner::ops::printable(&j.id),
            j.state.as_str(),
            worker,
            tasks,
            tokens,
            match j.summary.as_ref().filter(|x| !x.questions.is_empty()) {
                // A job waiting on answers says what it asks.
                Some(x) => planwave_runner::ops::printable(&x.questions.join(" / ")).into_owned(),
                None => j
                    .reason
                    .as_deref()
                    .map(planwave_runner::ops::printable)
                    .unwrap_or_default()
                    .into_owned(),
            }
        ));
    }
    let c = &s.counts;
    out.push_str(&format!(
        "{} jobs: {} queued, {} running, {} completed, {} partial, {} failed, {} cancelled{}; {} tokens{}{}\n",
        s.jobs.len(),
        c.queued,
        c.running,
        c.completed,
        c.partial,
        c.failed,
        c.cancelled,
        if c.needs_input > 0 {
            format!(", {} needs_input", c.needs_input)
        } else {
            String::new()
        },
        s.tokens,
        s.cost.map(|x| format!(", cost {x:.4}")).unwrap_or_default(),
        if s.cancelled { " (batch cancelled)" } else { "" }
    ));
    for b in &s.bad_lines {
        out.push_str(&format!("bad line {}: {}\n", b.line, b.error));
    }
    out
}
