//! What the loop keeps of its rounds and passes: the records in `run.json` `rounds[]` and
//! `round.json`, the loop's outcome, and which round's report is the final one.

use planwave_record::{EventKind, RunResult, RunStatus, TaskStatus};
use serde::Serialize;
use serde_json::json;

use super::rounds::Rounds;
use crate::model::{Evaluation, StepReflection};
use crate::policy::{StopReason, Strategy};

/// One execution pass of a round.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct PassRecord {
    pub pass: u32,
    pub status: RunStatus,
    pub completed: usize,
    pub failed: usize,
    pub blocked: usize,
    /// Failed tasks with their failure kind.
    pub failed_tasks: Vec<serde_json::Value>,
    /// The recovery strategy applied after this pass, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Strategy>,
    /// Why recovery was not possible (no valid replacement, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_error: Option<String>,
    /// The reflector's analysis and recommended strategy (step-level reflection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_reflection: Option<StepReflection>,
}

/// One round, as summarised in `run.json` `rounds[]`.
#[derive(Clone, Debug, Serialize)]
pub struct RoundRecord {
    pub round: u32,
    pub status: RunStatus,
    pub passes: Vec<PassRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overall_score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correctness: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_successful: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub should_replan: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reflection_id: Option<String>,
    #[serde(skip)]
    pub evaluation: Option<Evaluation>,
    #[serde(skip)]
    pub result: RunResult,
}

#[derive(Debug)]
pub struct LoopOutcome {
    pub rounds: Vec<RoundRecord>,
    /// The round whose report is the final one.
    pub best_round: Option<u32>,
    pub stop_reason: StopReason,
}

/// The best round: highest overall score, then correctness, then the later round. Rounds
/// without an evaluation only count when no round has one.
pub fn best_round(rounds: &[RoundRecord]) -> Option<u32> {
    let key = |r: &RoundRecord| {
        r.evaluation.as_ref().map(|e| {
            (
                e.overall_score,
                e.dimensions.correctness,
                f64::from(r.round),
            )
        })
    };
    rounds
        .iter()
        .filter(|r| key(r).is_some())
        .max_by(|a, b| {
            key(a)
                .partial_cmp(&key(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .or_else(|| rounds.last())
        .map(|r| r.round)
}

pub(super) fn pass_record(pass: u32, r: &RunResult) -> PassRecord {
    PassRecord {
        pass,
        status: r.status,
        completed: r.stats.completed,
        failed: r.stats.failed,
        blocked: r.stats.blocked,
        failed_tasks: r
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Failed)
            .map(|t| json!({"id": t.id, "failure_kind": t.failure_kind, "error": t.error}))
            .collect(),
        recovery: None,
        recovery_error: None,
        step_reflection: None,
    }
}

/// Round `record` is over: `round_finished`, then it joins the loop's rounds.
pub(super) fn finished<R: Rounds>(
    driver: &mut R,
    rounds: &mut Vec<RoundRecord>,
    record: RoundRecord,
) {
    // `round.json` lets a resume rebuild this round's record; losing it costs that only.
    if let Err(e) = driver.save(record.round, "round.json", &json!(record)) {
        driver.warn(&format!(
            "round {}: round.json not written: {e}",
            record.round
        ));
    }
    driver.event(
        record.round,
        EventKind::RoundFinished {
            round: record.round,
            status: record.status.as_str().into(),
            passes: record.passes.len() as u32,
        },
    );
    rounds.push(record);
}
