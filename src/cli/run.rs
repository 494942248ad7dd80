//! `planwave run PLAN --out DIR`

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use planwave_config::Settings;
use planwave_engine::{
    EventSink, FanoutSink, JsonlSink, Preset, PromptSet, RunConfig, RunDir, RunRequest, RunResult,
    RunStatus, execute,
};
use planwave_llm::LlmProvider;
use planwave_plan::ValidatedPlan;
use tokio_util::sync::CancellationToken;

use super::exit::{INTERRUPTED, OK, Outcome, PARTIAL};
use super::input::load_plan;
use super::llm::{self, LlmOptions, PromptOptions};
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
    /// No progress output; only the final summary.
    #[arg(short, long)]
    pub quiet: bool,
}

pub async fn run(args: RunArgs) -> anyhow::Result<Outcome> {
    let plan = Arc::new(load_plan(&args.plan)?);
    let settings = llm::settings(&args.llm, &args.prompts, None)?;
    let templates = llm::templates(&settings)?;
    let provider = llm::provider(
        &settings,
        args.sim.sim_config(args.exec.seed)?,
        args.exec.seed,
    )?;
    let out = RunDir::create(&args.out).context("preparing the run directory")?;
    let events = open_events(&out)?;
    let result = execute_plan(Execution {
        plan,
        provider,
        prompts: templates,
        config: run_config(&args.exec, &settings),
        out: out.clone(),
        events,
        quiet: args.quiet,
        preset: Vec::new(),
    })
    .await?;
    print_summary(&result, &out);
    Ok(outcome(result.status))
}

/// The engine settings from the flags plus what planwave.toml adds (budget, prices).
pub fn run_config(exec: &ExecOptions, settings: &Settings) -> RunConfig {
    RunConfig {
        context_budget_tokens: Some(settings.prompts.context_budget_tokens),
        prices: settings.prices.clone(),
        ..exec.run_config()
    }
}

pub fn open_events(out: &RunDir) -> anyhow::Result<Arc<JsonlSink>> {
    open_events_at(out, "events.jsonl")
}

/// An events file at `rel` inside the run directory.
pub fn open_events_at(out: &RunDir, rel: &str) -> anyhow::Result<Arc<JsonlSink>> {
    let path = out.path(rel)?;
    Ok(Arc::new(
        JsonlSink::create(&path).with_context(|| format!("opening {}", path.display()))?,
    ))
}

pub struct Execution {
    pub plan: Arc<ValidatedPlan>,
    pub provider: Arc<dyn LlmProvider>,
    pub prompts: Arc<dyn PromptSet>,
    pub config: RunConfig,
    pub out: RunDir,
    /// Closed (flushed) when the run ends.
    pub events: Arc<JsonlSink>,
    pub quiet: bool,
    /// Tasks already done (a recovery pass of the reflective loop).
    pub preset: Vec<Preset>,
}

/// Runs a plan into its run directory with progress output and Ctrl-C handling.
pub async fn execute_plan(x: Execution) -> anyhow::Result<RunResult> {
    let progress = Arc::new(Progress::new(x.plan.clone(), Mode::detect(x.quiet)));
    let sink: Arc<dyn EventSink> = Arc::new(FanoutSink(vec![x.events.clone(), progress.clone()]));
    let cancel = CancellationToken::new();
    let ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let run_id = uuid::Uuid::new_v4();
    super::telemetry::record_run(&run_id, &x.plan);
    let result = execute(RunRequest {
        run_id,
        plan: x.plan,
        provider: x.provider,
        prompts: x.prompts,
        sink,
        config: x.config,
        output: Some(x.out.clone()),
        cancel,
        preset: x.preset,
    })
    .await;
    ctrl_c.abort();
    progress.finish();
    x.events.close().context("writing events.jsonl")?;
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

pub fn outcome(status: RunStatus) -> Outcome {
    Outcome(match status {
        RunStatus::Completed => OK,
        RunStatus::Partial | RunStatus::Failed => PARTIAL,
        RunStatus::Cancelled => INTERRUPTED,
    })
}

pub fn print_summary(r: &RunResult, out: &RunDir) {
    let s = &r.stats;
    println!(
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
        println!("estimated cost: {:.4} {}", c.total, c.currency);
    }
    for t in r.tasks.iter().filter(|t| t.error.is_some()) {
        println!(
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
        println!(
            "interrupted; finished sections are in {}",
            out.root().join("sections").display()
        );
    }
    println!("report: {}", out.root().join("report.md").display());
}
