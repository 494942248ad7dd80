//! `planwave show DIR`: a finished run's summary table from its `run.json`, or a batch's
//! table and success metrics from its `batch.json`; `planwave show DIR DIR...` (or a data
//! directory holding run directories) the success metrics across those runs.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use planwave_batch::{BatchSummary, render_batch_table};
use planwave_report::render_run_table;
use planwave_runner::ops::DirHolds;
use planwave_storage::ReadRunError;

use super::exit::{InvalidInput, OK, Outcome};

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A run directory written by `run` or `research`, or a batch directory (`batch`);
    /// several run directories, or a data directory holding run directories (`serve
    /// --data`), for the success metrics across them.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
}

pub fn show(args: ShowArgs) -> anyhow::Result<Outcome> {
    let dir = match args.dirs.as_slice() {
        [one] => one,
        many => return show_metrics(many.to_vec()),
    };
    match planwave_runner::ops::dir_holds(dir) {
        DirHolds::Batch(record) => return show_batch(&record),
        DirHolds::Runs(runs) => return show_metrics(runs),
        DirHolds::Run => {}
    }
    let run = planwave_storage::read_run(dir).map_err(|e| match e {
        ReadRunError::NotFinished { dir } => {
            InvalidInput::one(dir.display().to_string(), not_finished(&dir)).into()
        }
        ReadRunError::Io { path, source } => {
            anyhow::Error::new(source).context(format!("reading {}", path.display()))
        }
        ReadRunError::NotARecord { path, reason } => InvalidInput::one(
            path.display().to_string(),
            format!("not a planwave run record: {reason}"),
        )
        .into(),
    })?;
    print!("{}", render_run_table(&run));
    Ok(Outcome(OK))
}

/// A batch's table (as printed when it ended, success metrics included) and why each job
/// that failed as a whole failed.
fn show_batch(path: &Path) -> anyhow::Result<Outcome> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let summary: BatchSummary = serde_json::from_str(&text).map_err(|e| InvalidInput {
        source_name: path.display().to_string(),
        problems: vec![format!("not a planwave batch record: {e}")],
    })?;
    let mut out = render_batch_table(&summary);
    for j in summary.jobs.iter().filter(|j| j.error.is_some()) {
        let _ = writeln!(
            out,
            "job {} {}: {}",
            j.id,
            j.state.as_str(),
            j.error.as_deref().unwrap_or("")
        );
    }
    print!("{out}");
    Ok(Outcome(OK))
}

/// Planning success rate, mean planning time and execution success rate across `dirs`.
fn show_metrics(dirs: Vec<PathBuf>) -> anyhow::Result<Outcome> {
    let m = planwave_runner::ops::runs_metrics(&dirs);
    if m.runs == 0 {
        return Err(InvalidInput {
            source_name: "show".into(),
            problems: vec!["none of these directories holds a run".into()],
        }
        .into());
    }
    print!("{}", m.lines());
    Ok(Outcome(OK))
}

/// The sentence for a run without `run.json`.
fn not_finished(dir: &Path) -> String {
    match planwave_runner::ops::last_provider_batch(dir) {
        Some((id, state))
            if !matches!(state.as_str(), "completed" | "failed" | "expired" | "cancelled") =>
        {
            format!(
                "the run has not finished: it is waiting on provider batch {id} ({state}); `planwave resume` goes on polling it"
            )
        }
        Some((id, state)) => format!(
            "the run has not finished (its last provider batch, {id}, is {state}; events.jsonl shows its progress)"
        ),
        None => "no run.json here: not a run directory, or the run has not finished (events.jsonl shows its progress)".into(),
    }
}
