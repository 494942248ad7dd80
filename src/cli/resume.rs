//! `planwave resume DIR`: continue an interrupted run from its journal.
//!
//! The settings come from `DIR/invocation.json` (the command line that started the run), the
//! plan from `DIR/plan.json`, and what is already done from `DIR/events.jsonl`: a task whose
//! `task_completed` event names a section file that is present with the recorded hash is
//! kept; every other task (pending, running when the run stopped, failed, blocked) runs.

use std::path::{Path, PathBuf};

use clap::Args;
use planwave_runner::{CtrlC, Execution, InvalidInput, Stderr};

use super::exit::Outcome;
use super::job::JobOptions;
use super::llm::{self, PlannerOptions};
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

/// The options of the command that started a run.
struct Recorded {
    job: JobOptions,
    planner: Option<PlannerOptions>,
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
        Command::Run(a) => Ok(Recorded {
            job: a.job,
            planner: None,
        }),
        Command::Research(a) => Ok(Recorded {
            job: a.job,
            planner: Some(a.planner),
        }),
        _ => Err(bad(
            "invocation.json does not record a run or research command".into(),
        )),
    }
}

pub async fn resume(args: ResumeArgs) -> anyhow::Result<Outcome> {
    let dir = planwave_runner::resumable_dir(&args.dir)?;
    let rec = recorded(&dir)?;
    let settings = llm::settings(&[&rec.job, &rec.planner])?;
    let resources = rec.job.resources(&settings)?;
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
