//! `planwave run PLAN --out DIR`

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use planwave_config::Settings;
use planwave_engine::{
    EventSink, FanoutSink, Journal, JsonlSink, Preset, PromptSet, RunConfig, RunDir, RunLock,
    RunRequest, RunResult, RunStatus, execute,
};
use planwave_llm::LlmProvider;
use planwave_mcp::McpRegistry;
use planwave_plan::ValidatedPlan;
use tokio_util::sync::CancellationToken;

use super::events::{EventsOptions, human, open_stream};
use super::exit::{DEADLINE, INTERRUPTED, OK, Outcome, PARTIAL};
use super::input::load_plan_with_tools;
use super::llm::{self, LlmOptions, PromptOptions};
use super::mcp::{self, McpOptions};
use super::options::{ExecOptions, SimOptions};
use super::progress::{Mode, Progress};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Plan file (JSON, possibly wrapped in prose or a ```json fence); `-` reads stdin.
    pub plan: PathBuf,
    /// Run directory: report.md, plan.json, run.json, events.jsonl, sections/.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub exec: ExecOptions,
    #[command(flatten)]
    pub llm: LlmOptions,
    #[command(flatten)]
    pub prompts: PromptOptions,
    #[command(flatten)]
    pub sim: SimOptions,
    #[command(flatten)]
    pub mcp: McpOptions,
    #[command(flatten)]
    pub events: EventsOptions,
    /// No progress output; only the final summary.
    #[arg(short, long)]
    pub quiet: bool,
}

pub async fn run(args: RunArgs) -> anyhow::Result<Outcome> {
    let settings = llm::settings(&[&args.llm, &args.prompts, &args.exec, &args.mcp])?;
    let mcp = mcp::start(settings.mcp.as_ref(), args.quiet).await;
    let result = run_with(&args, settings, mcp.clone()).await;
    if let Some(m) = mcp {
        m.shutdown().await;
    }
    result
}

async fn run_with(
    args: &RunArgs,
    settings: Settings,
    mcp: Option<Arc<McpRegistry>>,
) -> anyhow::Result<Outcome> {
    let catalog = mcp::catalog(mcp.as_deref());
    let plan = Arc::new(load_plan_with_tools(&args.plan, Some(&catalog))?);
    let templates = llm::templates(&settings)?;
    let provider = llm::provider(&settings, args.sim.sim_config(args.exec.seed)?)?;
    let out = create_run_dir(&args.out)?;
    let _lock = lock_run_dir(&out)?;
    record_invocation(&out)?;
    let run_id = uuid::Uuid::new_v4();
    let events = open_events(&out, run_id)?;
    let stream = open_stream(run_id, &args.events)?;
    let result = execute_plan(Execution {
        stream,
        plan,
        provider,
        prompts: templates,
        config: settings.run.clone(),
        deadline: settings.deadline,
        out: out.clone(),
        events,
        quiet: args.quiet,
        run_id,
        preset: Vec::new(),
        mcp,
    })
    .await?;
    print_summary(&result, &out);
    Ok(outcome(&result))
}

/// The run directory, with every file made durable (fsync, rename, directory fsync).
pub fn create_run_dir(path: &std::path::Path) -> anyhow::Result<RunDir> {
    Ok(RunDir::create(path)
        .context("preparing the run directory")?
        .with_durable(true))
}

/// One process per run directory, for as long as the guard lives.
pub fn lock_run_dir(out: &RunDir) -> anyhow::Result<RunLock> {
    Ok(RunLock::acquire(out.root())?)
}

/// `invocation.json`: the command line and working directory that started the run, so
/// `planwave resume DIR` can rebuild the same settings (keys are never flags, so none are
/// recorded).
pub fn record_invocation(out: &RunDir) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    out.write_json(
        "invocation.json",
        &serde_json::json!({ "argv": argv, "cwd": cwd }),
    )?;
    Ok(())
}

/// The run's journal, `events.jsonl` (appended to when it exists: resume); every line
/// carries the run id.
pub fn open_events(out: &RunDir, run_id: uuid::Uuid) -> anyhow::Result<Arc<Journal>> {
    open_events_at(out, "events.jsonl", run_id)
}

/// A journal at `rel` inside the run directory (appended to when it exists).
pub fn open_events_at(out: &RunDir, rel: &str, run_id: uuid::Uuid) -> anyhow::Result<Arc<Journal>> {
    let path = out.path(rel)?;
    Ok(Arc::new(
        Journal::open_for_run(&path, out.is_durable(), Some(run_id))
            .with_context(|| format!("opening {}", path.display()))?,
    ))
}

pub struct Execution {
    pub plan: Arc<ValidatedPlan>,
    pub provider: Arc<dyn LlmProvider>,
    pub prompts: Arc<dyn PromptSet>,
    pub config: RunConfig,
    pub deadline: Option<std::time::Duration>,
    pub out: RunDir,
    /// Closed (flushed) when the run ends.
    pub events: Arc<Journal>,
    /// The `--events` stream, if asked for: every event the journal gets, live.
    pub stream: Option<Arc<JsonlSink>>,
    pub quiet: bool,
    pub mcp: Option<Arc<McpRegistry>>,
    pub run_id: uuid::Uuid,
    /// Tasks completed by an earlier attempt (resume).
    pub preset: Vec<Preset>,
}

/// Runs a plan into its run directory with progress output and Ctrl-C handling.
pub async fn execute_plan(x: Execution) -> anyhow::Result<RunResult> {
    let progress = Arc::new(Progress::new(x.plan.clone(), Mode::detect(x.quiet)));
    let mut sinks: Vec<Arc<dyn EventSink>> = vec![progress.clone()];
    if let Some(s) = &x.stream {
        sinks.push(s.clone());
    }
    let sink: Arc<dyn EventSink> = Arc::new(FanoutSink(sinks));
    let cancel = CancellationToken::new();
    let ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    super::telemetry::record_run(&x.run_id, &x.plan);
    let result = execute(RunRequest {
        run_id: x.run_id,
        plan: x.plan,
        provider: x.provider,
        prompts: x.prompts,
        sink,
        journal: Some(x.events.clone()),
        config: x.config,
        deadline: x.deadline,
        slots: None,
        output: Some(x.out.clone()),
        cancel,
        preset: x.preset,
        mcp: x.mcp,
    })
    .await;
    ctrl_c.abort();
    progress.finish();
    x.events.close().context("writing events.jsonl")?;
    // A stream still held elsewhere (the reflective loop's later passes) stays open; its
    // last holder closes it.
    if let Some(s) = &x.stream
        && Arc::strong_count(s) == 1
    {
        s.close().context("writing the --events stream")?;
    }
    if let Ok(r) = &result {
        let s = &r.stats;
        super::telemetry::record_status(
            r.status.as_str(),
            (r.status != RunStatus::Completed).then(|| {
                format!(
                    "{} of {} tasks completed ({} failed, {} blocked)",
                    s.completed, s.tasks, s.failed, s.blocked
                )
            }),
        );
    }
    result.context("running the plan")
}

pub fn outcome(r: &RunResult) -> Outcome {
    Outcome(match r.status {
        RunStatus::Completed => OK,
        RunStatus::Partial | RunStatus::Failed => PARTIAL,
        RunStatus::Cancelled if r.stop_reason.as_deref() == Some("deadline") => DEADLINE,
        RunStatus::Cancelled => INTERRUPTED,
    })
}

pub fn print_summary(r: &RunResult, out: &RunDir) {
    let mut h = human();
    let s = &r.stats;
    let _ = writeln!(
        h,
        "{}: {} completed, {} failed, {} blocked of {} tasks in {:.2}s ({} retries, {} tokens)",
        r.status.as_str(),
        s.completed,
        s.failed,
        s.blocked,
        s.tasks,
        s.makespan_ms / 1000.0,
        s.retries,
        s.usage.total()
    );
    if let Some(c) = &s.cost {
        let _ = writeln!(h, "estimated cost: {:.4} {}", c.total, c.currency);
    }
    if !s.transport_retries.is_empty() {
        let causes: Vec<String> = s
            .transport_retries
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        let _ = writeln!(h, "transport retries: {}", causes.join(", "));
    }
    for t in r.tasks.iter().filter(|t| t.error.is_some()) {
        let _ = writeln!(
            h,
            "  task {} {}: {}",
            t.id,
            t.status.as_str(),
            t.error.as_deref().unwrap_or("")
        );
    }
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    if r.status == RunStatus::Cancelled {
        let why = match r.stop_reason.as_deref() {
            Some("deadline") => "deadline reached",
            _ => "interrupted",
        };
        let _ = writeln!(
            h,
            "{why}; finished work is saved. Continue with: planwave resume {}",
            out.root().display()
        );
    }
    let _ = writeln!(h, "report: {}", out.root().join("report.md").display());
}
