//! `planwave resume DIR`: continue an interrupted run from its journal.
//!
//! The settings come from `DIR/invocation.json` (the command line that started the run), the
//! plan from `DIR/plan.json`, and what is already done from `DIR/events.jsonl`: a task whose
//! `task_completed` event names a section file that is present with the recorded hash is
//! kept; every other task (pending, running when the run stopped, failed, blocked) runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser};
use planwave_engine::{EventKind, EventSink, Replay};
use serde::Deserialize;

use super::exit::{InvalidInput, Outcome};
use super::input::load_plan;
use super::llm::{self, LlmOptions, PlannerOptions, PromptOptions};
use super::mcp::McpOptions;
use super::options::{ExecOptions, SimOptions};
use super::run::{
    Execution, create_run_dir, execute_plan, lock_run_dir, open_events, outcome, print_summary,
};
use super::{Cli, Command};

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run directory of `planwave run` or `planwave research`.
    pub dir: PathBuf,
    /// No progress output; only the final summary.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Deserialize)]
struct Invocation {
    argv: Vec<String>,
    cwd: PathBuf,
}

/// The options of the command that started a run.
pub struct Recorded {
    pub exec: ExecOptions,
    pub llm: LlmOptions,
    pub prompts: PromptOptions,
    pub sim: SimOptions,
    pub planner: Option<PlannerOptions>,
    pub mcp: Option<McpOptions>,
}

fn invalid(dir: &Path, problem: String) -> InvalidInput {
    InvalidInput {
        source_name: dir.display().to_string(),
        problems: vec![problem],
    }
}

/// Reads `invocation.json` and parses its command line again; also moves to its working
/// directory so relative paths in it (config, latency files) mean what they meant.
fn recorded(dir: &Path) -> Result<Recorded, InvalidInput> {
    let path = dir.join("invocation.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        invalid(
            dir,
            format!("not a resumable run directory: cannot read invocation.json: {e}"),
        )
    })?;
    let inv: Invocation = serde_json::from_str(&text)
        .map_err(|e| invalid(dir, format!("invocation.json is not valid: {e}")))?;
    let cli = Cli::try_parse_from(std::iter::once("planwave".to_owned()).chain(inv.argv))
        .map_err(|e| invalid(dir, format!("invocation.json: {}", e.to_string().trim())))?;
    if let Err(e) = std::env::set_current_dir(&inv.cwd) {
        eprintln!(
            "warning: cannot enter the run's original directory {}: {e}",
            inv.cwd.display()
        );
    }
    match cli.command {
        Command::Run(a) => Ok(Recorded {
            exec: a.exec,
            llm: a.llm,
            prompts: a.prompts,
            sim: a.sim,
            planner: None,
            mcp: Some(a.mcp),
        }),
        Command::Research(a) => Ok(Recorded {
            exec: a.exec,
            llm: a.llm,
            prompts: a.prompts,
            sim: a.sim,
            planner: Some(a.planner),
            mcp: Some(a.mcp),
        }),
        _ => Err(invalid(
            dir,
            "invocation.json does not record a run or research command".into(),
        )),
    }
}

pub async fn resume(args: ResumeArgs) -> anyhow::Result<Outcome> {
    let dir = args
        .dir
        .canonicalize()
        .map_err(|e| invalid(&args.dir, format!("cannot open the run directory: {e}")))?;
    if !dir.join("plan.json").is_file() {
        return Err(invalid(
            &dir,
            "no plan.json: the run stopped before its plan was ready; start it again".into(),
        )
        .into());
    }
    let rec = recorded(&dir)?;
    let out = create_run_dir(&dir)?;
    let _lock = lock_run_dir(&out)?;
    let settings = llm::settings(&[&rec.llm, &rec.prompts, &rec.planner, &rec.exec, &rec.mcp])?;
    let templates = llm::templates(&settings)?;
    let provider = llm::provider(&settings, rec.sim.sim_config(rec.exec.seed)?)?;
    let plan = Arc::new(load_plan(&dir.join("plan.json"))?);
    let replay =
        Replay::read(&dir.join("events.jsonl")).map_err(|e| invalid(&dir, e.to_string()))?;
    let run_id = replay.run_id.context("the journal names no run")?;
    let (preset, notes) = replay.presets(&plan, &out);
    for n in notes {
        eprintln!("resume: {n}");
    }
    let events = open_events(&out, run_id)?;
    events.emit(&planwave_engine::Event::now(EventKind::RunResumed {
        run_id,
        completed: preset.len(),
        pending: plan.len() - preset.len(),
    }));
    println!(
        "resuming run {run_id}: {} of {} tasks already completed",
        preset.len(),
        plan.len()
    );
    let mcp = super::mcp::start(settings.mcp.as_ref(), args.quiet).await;
    let result = execute_plan(Execution {
        plan,
        provider,
        prompts: templates,
        config: settings.run.clone(),
        deadline: settings.deadline,
        out: out.clone(),
        events,
        quiet: args.quiet,
        run_id,
        stream: None,
        preset,
        mcp: mcp.clone(),
    })
    .await;
    if let Some(m) = mcp {
        m.shutdown().await;
    }
    let result = result?;
    print_summary(&result, &out);
    Ok(outcome(&result))
}
