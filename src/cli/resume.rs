//! `planwave resume DIR`: continue an interrupted run from its journal.
//!
//! The settings come from `DIR/invocation.json` (the command line that started the run), the
//! plan from `DIR/plan.json`, and what is already done from `DIR/events.jsonl`: a task whose
//! `task_completed` event names a section file that is present with the recorded hash is
//! kept; every other task (pending, running when the run stopped, failed, blocked) runs.

use std::path::{Path, PathBuf};

use clap::Args;
use planwave_runner::{
    CtrlC, Execution, InvalidInput, Research, Stderr, lock_run_dir, open_run_dir,
};

use super::exit::Outcome;
use super::job::JobOptions;
use super::llm::{self, MaxRounds};
use super::progress::Terminal;
use super::research::ResearchArgs;
use super::run::RunArgs;
use super::summary::execute_and_summarize;
use super::{Command, recorded_command};

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run directory of `planwave run` or `planwave research`.
    pub dir: PathBuf,
    /// No progress output; only the final summary.
    #[arg(short, long)]
    pub quiet: bool,
}

/// The command that started the run, as far as resuming needs it.
enum Recorded {
    Run(Box<RunArgs>),
    Research(Box<ResearchArgs>),
}

/// Parses the recorded command line again; also moves to its working directory so relative
/// paths in it (config, latency files) mean what they meant.
fn recorded(dir: &Path) -> Result<Recorded, InvalidInput> {
    let (inv, command) = recorded_command(dir, "a resumable run directory")?;
    let bad = |p: String| InvalidInput::one(dir.display().to_string(), p);
    if let Err(e) = inv.enter_cwd() {
        eprintln!(
            "warning: cannot enter the run's original directory {}: {e}",
            inv.cwd.display()
        );
    }
    match command {
        Command::Run(a) => Ok(Recorded::Run(Box::new(a))),
        Command::Research(a) => Ok(Recorded::Research(Box::new(a))),
        _ => Err(bad(
            "invocation.json does not record a run or research command".into(),
        )),
    }
}

pub async fn resume(args: ResumeArgs) -> anyhow::Result<Outcome> {
    let dir = args.dir.canonicalize().map_err(|e| {
        InvalidInput::one(
            args.dir.display().to_string(),
            format!("cannot open the run directory: {e}"),
        )
    })?;
    // A research keeps its rounds under rounds/: its loop goes on from there, even when
    // killed before anything was published at the top.
    if dir.join("invocation.json").is_file() && dir.join("rounds").is_dir() {
        match recorded(&dir)? {
            Recorded::Research(a) => return resume_research(&dir, *a, args.quiet).await,
            Recorded::Run(a) if a.recover => return resume_recover(&dir, *a, args.quiet).await,
            Recorded::Run(_) => {}
        }
    }
    let dir = planwave_runner::resumable_dir(&dir)?;
    let job = match recorded(&dir)? {
        Recorded::Run(a) => a.job,
        Recorded::Research(a) => a.job,
    };
    let settings = llm::settings(&[&job])?;
    let resources = job.resources(&settings)?;
    let mut point = planwave_runner::resume(&dir, &Stderr)?;
    println!(
        "resuming run {}: {} of {} tasks already completed",
        point.run_id,
        point.preset.len(),
        point.plan.len()
    );
    let interrupt = CtrlC::listen();
    let resources = resources
        .start_mcp(settings.mcp.as_ref(), args.quiet, &Stderr)
        .await;
    resources
        .scope(async move |resources| {
            execute_and_summarize(
                Execution {
                    plan: point.plan.clone(),
                    resources: resources.clone(),
                    config: settings.run.clone(),
                    deadline: settings.deadline,
                    out: point.out.clone(),
                    events: point.events.clone(),
                    stream: None,
                    run_id: point.run_id,
                    preset: std::mem::take(&mut point.preset),
                    slots: None,
                    cancel: interrupt.token(),
                    root_span: true,
                },
                args.quiet,
            )
            .await
        })
        .await
}

/// The rest of an interrupted `research`: its round in progress (tasks completed kept), then
/// the loop to its stop condition, with the recorded settings.
async fn resume_research(dir: &Path, a: ResearchArgs, quiet: bool) -> anyhow::Result<Outcome> {
    let settings = llm::settings(&[&a.job, &a.planner, &MaxRounds(a.max_rounds)])?;
    go_on(dir, &a.job, &settings, a.goal.clone(), false, quiet).await
}

/// The rest of an interrupted `run --recover`: its round goes on (tasks completed kept) and
/// recovers as before; no evaluation, no reflection.
async fn resume_recover(dir: &Path, a: RunArgs, quiet: bool) -> anyhow::Result<Outcome> {
    let settings = llm::settings(&[&a.job])?;
    let plan = planwave_runner::load_plan(&dir.join("rounds/1/plan.json"), &Stderr)?;
    let goal = super::run::recover_goal(&plan);
    go_on(dir, &a.job, &settings, goal, true, quiet).await
}

/// A reflective loop (`recover`: `run --recover`'s one round) resumed from its rounds.
async fn go_on(
    dir: &Path,
    job: &JobOptions,
    settings: &planwave_config::Settings,
    goal: String,
    recover: bool,
    quiet: bool,
) -> anyhow::Result<Outcome> {
    let resources = job.resources(settings)?;
    let out = open_run_dir(dir)?;
    let _lock = lock_run_dir(&out)?;
    let interrupt = CtrlC::listen();
    let resources = resources
        .start_mcp(settings.mcp.as_ref(), quiet, &Stderr)
        .await;
    let done = resources
        .scope(async |resources| {
            planwave_runner::research(Research {
                goal: goal.clone(),
                plan: None,
                resume: true,
                recover,
                out: out.clone(),
                resources: resources.clone(),
                settings,
                run_id: uuid::Uuid::new_v4(),
                stream: None,
                quiet,
                cancel: interrupt.token(),
                watch: &Terminal { quiet },
                notes: &Stderr,
                slots: None,
                stream_plan: false,
            })
            .await
        })
        .await?;
    Ok(super::research::report(&done, &out, !recover))
}
