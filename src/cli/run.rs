//! `planwave run PLAN --out DIR`

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use planwave_engine::{
    BuiltinPrompts, EventSink, FanoutSink, JsonlSink, RunDir, RunRequest, RunResult, RunStatus,
    execute,
};
use planwave_llm::LlmProvider;
use planwave_llm::sim::SimProvider;
use tokio_util::sync::CancellationToken;

use super::exit::{INTERRUPTED, OK, Outcome, PARTIAL};
use super::input::load_plan;
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
    pub sim: SimOptions,
    /// No progress output; only the final summary.
    #[arg(short, long)]
    pub quiet: bool,
}

pub async fn run(args: RunArgs) -> anyhow::Result<Outcome> {
    let plan = Arc::new(load_plan(&args.plan)?);
    let provider: Arc<dyn LlmProvider> =
        Arc::new(SimProvider::new(args.sim.sim_config(args.exec.seed)?));
    let info = provider.info();
    if info.simulated {
        eprintln!(
            "planwave: using the simulated LLM (no model configured): sections are generated text, not research"
        );
    }
    let out = RunDir::create(&args.out).context("preparing the run directory")?;
    let events = Arc::new(
        JsonlSink::create(&out.root().join("events.jsonl"))
            .with_context(|| format!("opening {}", out.root().join("events.jsonl").display()))?,
    );
    let progress = Arc::new(Progress::new(plan.clone(), Mode::detect(args.quiet)));
    let sink: Arc<dyn EventSink> = Arc::new(FanoutSink(vec![events.clone(), progress.clone()]));
    let cancel = CancellationToken::new();
    let ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let result = execute(RunRequest {
        run_id: uuid::Uuid::new_v4(),
        plan,
        provider,
        prompts: Arc::new(BuiltinPrompts),
        sink,
        config: args.exec.run_config(),
        output: Some(out.clone()),
        cancel,
        preset: Vec::new(),
    })
    .await;
    ctrl_c.abort();
    progress.finish();
    events.close().context("writing events.jsonl")?;
    let result = result.context("running the plan")?;
    print_summary(&result, &out);
    Ok(Outcome(match result.status {
        RunStatus::Completed => OK,
        RunStatus::Partial | RunStatus::Failed => PARTIAL,
        RunStatus::Cancelled => INTERRUPTED,
    }))
}

fn print_summary(r: &RunResult, out: &RunDir) {
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
