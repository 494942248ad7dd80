//! A goal too vague to plan, without answers: the job ends `needs_input`, its `run.json`
//! holding the planner's questions so a person (or the front end that started it) can
//! answer them and run the job again with `--answers` (or a job line's, a request's
//! `answers`). Nothing blocks waiting for them.

use planwave_storage::RunDir;
use serde::{Deserialize, Serialize};

/// The status a run directory's `run.json` records for it.
pub const NEEDS_INPUT: &str = "needs_input";

/// `run.json` of a job that ended asking questions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NeedsInputRun {
    pub run_id: uuid::Uuid,
    /// Always [`NEEDS_INPUT`].
    pub status: String,
    pub goal: String,
    /// What the planner asked, in order: the answers are given in the same order.
    pub questions: Vec<String>,
}

/// Records the questions as the run's `run.json`.
pub(crate) fn record(
    out: &RunDir,
    run_id: uuid::Uuid,
    goal: &str,
    questions: &[String],
) -> crate::Result<()> {
    out.write_json(
        "run.json",
        &NeedsInputRun {
            run_id,
            status: NEEDS_INPUT.into(),
            goal: goal.to_owned(),
            questions: questions.to_vec(),
        },
    )?;
    Ok(())
}

/// The questions a run directory's `run.json` is waiting on, if it is waiting.
pub fn questions_in(dir: &std::path::Path) -> Option<NeedsInputRun> {
    let text = std::fs::read(dir.join("run.json")).ok()?;
    let run: NeedsInputRun = serde_json::from_slice(&text).ok()?;
    (run.status == NEEDS_INPUT).then_some(run)
}
