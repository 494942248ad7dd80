//! `planwave show DIR`: a finished run's summary table from its `run.json`, or a batch's
//! table and success metrics from its `batch.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use planwave_batch::{BatchSummary, render_batch_table};
use planwave_report::render_run_table;
use planwave_storage::ReadRunError;

use super::exit::{InvalidInput, OK, Outcome};

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A run directory written by `run` or `research`, or a batch directory (`batch`).
    pub dir: PathBuf,
}

pub fn show(args: ShowArgs) -> anyhow::Result<Outcome> {
    // A batch directory has batch.json and no run.json of its own.
    if !args.dir.join("run.json").exists() && args.dir.join("batch.json").exists() {
        return show_batch(&args.dir.join("batch.json"));
    }
    let run = planwave_storage::read_run(&args.dir).map_err(|e| match e {
        ReadRunError::NotFinished { dir } => InvalidInput::one(
            dir.display().to_string(),
            "no run.json here: not a run directory, or the run has not finished (events.jsonl shows its progress)",
        )
        .into(),
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
