//! `planwave show DIR`: a finished run's summary table from its `run.json`, or a batch's
//! table and success metrics from its `batch.json`; `planwave show DIR DIR...` (or a data
//! directory holding run directories) the success metrics across those runs.

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
    // A batch directory has batch.json and no run.json of its own.
    if !dir.join("run.json").exists() && dir.join("batch.json").exists() {
        return show_batch(&dir.join("batch.json"));
    }
    // A data directory: no run of its own, runs under it.
    if !planwave_runner::is_run_dir(dir) {
        let runs = planwave_runner::runs_under(dir);
        if !runs.is_empty() {
            return show_metrics(runs);
        }
    }
    let run = planwave_storage::read_run(dir).map_err(|e| match e {
        ReadRunError::NotFinished { dir } => InvalidInput::one(
            dir.display().to_string(),
            super::show_waiting::not_finished(&dir),
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

/// Planning success rate, mean planning time and execution success rate across `dirs`.
fn show_metrics(dirs: Vec<PathBuf>) -> anyhow::Result<Outcome> {
    let m = planwave_runner::runs_metrics(&dirs);
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
