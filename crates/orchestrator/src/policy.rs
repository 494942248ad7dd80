//! When the loop stops, and how a round recovers from failed tasks. Pure functions.

use planwave_record::{FailureKind, TaskRecord, TaskStatus};
use serde::Serialize;

use crate::model::{Evaluation, Reflection};

/// Correctness at or above this ends the loop whatever else the evaluation says.
pub const CORRECTNESS_DONE: f64 = 95.0;

#[derive(Clone, Debug, PartialEq)]
pub struct LoopPolicy {
    pub max_rounds: u32,
    pub success_threshold: f64,
    pub max_consecutive_failures: u32,
    pub max_step_retries: u32,
    pub max_task_replanning_attempts: u32,
    /// `[orchestrator] enable_auto_reflection`: `false` evaluates each round but never reflects,
    /// so the loop ends after the first round the stop rules do not end earlier.
    pub auto_reflection: bool,
    /// `[reflection] enable_step_level_reflection`: before a recovery pass the reflector
    /// analyses the failed tasks and recommends the strategy.
    pub step_reflection: bool,
    /// `[orchestrator] task_timeout_secs`: the whole loop's time limit.
    pub timeout: Option<std::time::Duration>,
}

/// Why the loop stopped (`run.json` `stop_reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `dimensions.correctness >= 95`.
    Correctness,
    /// `is_successful` and `overall_score >= success_threshold`.
    SuccessThreshold,
    /// The reflection said `should_replan: false`.
    NoReplan,
    /// The round limit was reached.
    MaxRounds,
    /// Too many rounds in a row ended with failed tasks.
    ConsecutiveFailures,
    /// No valid evaluation or reflection could be had from the model.
    EvaluationFailed,
    ReflectionFailed,
    /// Ctrl-C, or planning failed for a later round.
    Interrupted,
    PlanningFailed,
    /// `run --recover`: the one round ran and recovered; there is no loop to go on with.
    RunFinished,
    /// `[orchestrator] enable_auto_reflection = false`: evaluated, not reflected on.
    AutoReflectionOff,
    /// The loop's time limit (`[orchestrator] task_timeout_secs`, `--deadline`) passed.
    Timeout,
}

impl StopReason {
    /// The loop was cut short (Ctrl-C, its time limit): the round in progress is the one to
    /// show and to resume.
    pub fn cut_short(self) -> bool {
        matches!(self, StopReason::Interrupted | StopReason::Timeout)
    }

    /// The loop ended on a failure (the model's evaluation, reflection or a round's planning)
    /// rather than on its own verdict: a front end must not call it a success however the
    /// shown round's tasks ended.
    pub fn failed(self) -> bool {
        matches!(
            self,
            StopReason::EvaluationFailed
                | StopReason::ReflectionFailed
                | StopReason::PlanningFailed
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Correctness => "correctness",
            StopReason::SuccessThreshold => "success_threshold",
            StopReason::NoReplan => "no_replan",
            StopReason::MaxRounds => "max_rounds",
            StopReason::ConsecutiveFailures => "consecutive_failures",
            StopReason::EvaluationFailed => "evaluation_failed",
            StopReason::ReflectionFailed => "reflection_failed",
            StopReason::Interrupted => "interrupted",
            StopReason::PlanningFailed => "planning_failed",
            StopReason::RunFinished => "run_finished",
            StopReason::AutoReflectionOff => "auto_reflection_off",
            StopReason::Timeout => "timeout",
        }
    }
}

/// The checks that need no reflection, in the loop's documented order; `None` means reflect.
pub fn stop_before_reflection(
    p: &LoopPolicy,
    round: u32,
    e: &Evaluation,
    consecutive_failed_rounds: u32,
) -> Option<StopReason> {
    if e.dimensions.correctness >= CORRECTNESS_DONE {
        Some(StopReason::Correctness)
    } else if e.is_successful && e.overall_score >= p.success_threshold {
        Some(StopReason::SuccessThreshold)
    } else if round >= p.max_rounds {
        Some(StopReason::MaxRounds)
    } else if consecutive_failed_rounds >= p.max_consecutive_failures {
        Some(StopReason::ConsecutiveFailures)
    } else {
        None
    }
}

pub fn stop_after_reflection(r: &Reflection) -> Option<StopReason> {
    (!r.should_replan).then_some(StopReason::NoReplan)
}

/// The recovery strategies of adaptive recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Run the failed tasks (and what they blocked) again, completed sections kept.
    RetryStep,
    /// Ask the planner for replacements of the failed tasks and their blocked descendants only.
    ReplanFromFailure,
    /// Discard the round's plan and plan again, told why it failed.
    CompleteReplan,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::RetryStep => "retry_step",
            Strategy::ReplanFromFailure => "replan_from_failure",
            Strategy::CompleteReplan => "complete_replan",
        }
    }
}

/// Recovery passes used so far in a round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Used {
    pub retries: u32,
    pub replans: u32,
}

/// The strategy for a finished pass, or `None` (nothing failed, or the budget is spent).
///
/// - Most of the plan failed (no section, or more failed tasks than half the plan): the
///   plan itself is wrong, so `complete_replan`.
/// - Every failure was transient (timeouts, 5xx, 429 outlasting the task's retries): the
///   tasks are fine, the moment was not, so `retry_step`.
/// - Otherwise (refusals, crashes): the tasks as phrased do not work, so
///   `replan_from_failure`, which keeps every completed section.
///
/// When the preferred strategy's budget is spent, retry falls back to partial replanning;
/// replanning passes (`replan_from_failure`, `complete_replan`) share
/// `max_task_replanning_attempts`, retries have `max_step_retries`.
pub fn choose_strategy(p: &LoopPolicy, records: &[TaskRecord], used: Used) -> Option<Strategy> {
    // A failed optional step blocked nothing: there is nothing to recover.
    let failed: Vec<&TaskRecord> = records
        .iter()
        .filter(|r| r.status == TaskStatus::Failed && !r.optional)
        .collect();
    if failed.is_empty() {
        return None;
    }
    let completed = records
        .iter()
        .filter(|r| r.status == TaskStatus::Completed)
        .count();
    let can_retry = used.retries < p.max_step_retries;
    let can_replan = used.replans < p.max_task_replanning_attempts;
    if completed == 0 || failed.len() * 2 > records.len() {
        return can_replan.then_some(Strategy::CompleteReplan);
    }
    let all_transient = failed
        .iter()
        .all(|r| r.failure_kind == Some(FailureKind::Transient));
    if all_transient && can_retry {
        Some(Strategy::RetryStep)
    } else if can_replan {
        Some(Strategy::ReplanFromFailure)
    } else {
        None
    }
}

/// The strategies whose budget is not spent, `first` (the rule's choice) leading.
pub fn available(p: &LoopPolicy, used: Used, first: Strategy) -> Vec<Strategy> {
    let mut out = vec![first];
    for s in [
        Strategy::RetryStep,
        Strategy::ReplanFromFailure,
        Strategy::CompleteReplan,
    ] {
        let budget = match s {
            Strategy::RetryStep => used.retries < p.max_step_retries,
            _ => used.replans < p.max_task_replanning_attempts,
        };
        if budget && s != first {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Dimensions;
    use planwave_plan::TaskId;

    fn policy() -> LoopPolicy {
        LoopPolicy {
            max_rounds: 3,
            success_threshold: 80.0,
            max_consecutive_failures: 2,
            max_step_retries: 1,
            max_task_replanning_attempts: 1,
            auto_reflection: true,
            step_reflection: false,
            timeout: None,
        }
    }

    fn eval(correctness: f64, overall: f64, ok: bool) -> Evaluation {
        Evaluation {
            overall_score: overall,
            is_successful: ok,
            dimensions: Dimensions {
                correctness,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn stop_conditions_in_the_seed_order() {
        let p = policy();
        assert_eq!(
            stop_before_reflection(&p, 1, &eval(95.0, 10.0, false), 0),
            Some(StopReason::Correctness)
        );
        assert_eq!(
            stop_before_reflection(&p, 1, &eval(90.0, 80.0, true), 0),
            Some(StopReason::SuccessThreshold)
        );
        assert_eq!(
            stop_before_reflection(&p, 1, &eval(90.0, 85.0, false), 0),
            None
        );
        assert_eq!(
            stop_before_reflection(&p, 1, &eval(90.0, 79.9, true), 0),
            None
        );
        assert_eq!(
            stop_before_reflection(&p, 3, &eval(50.0, 50.0, false), 0),
            Some(StopReason::MaxRounds)
        );
        assert_eq!(
            stop_before_reflection(&p, 2, &eval(50.0, 50.0, false), 2),
            Some(StopReason::ConsecutiveFailures)
        );
        let r = Reflection {
            should_replan: false,
            ..Default::default()
        };
        assert_eq!(stop_after_reflection(&r), Some(StopReason::NoReplan));
    }

    fn rec(id: i64, status: TaskStatus, kind: Option<FailureKind>) -> TaskRecord {
        TaskRecord {
            id: TaskId::Int(id),
            description: String::new(),
            status,
            wave: 0,
            attempts: 1,
            started_at: None,
            finished_at: None,
            error: None,
            blocked_by: None,
            context_from: Vec::new(),
            section_file: None,
            usage: Default::default(),
            context_cut: Vec::new(),
            tool_calls: Vec::new(),
            failure_kind: kind,
            round: None,
            optional: false,
            empty_refs: Vec::new(),
            warnings: Vec::new(),
            result: None,
        }
    }

    #[test]
    fn strategy_follows_the_failure_cause_and_the_budgets() {
        use FailureKind::*;
        use TaskStatus::*;
        let p = policy();
        let transient = [
            rec(1, Completed, None),
            rec(2, Failed, Some(Transient)),
            rec(3, Completed, None),
            rec(4, Blocked, None),
        ];
        let none = Used::default();
        assert_eq!(
            choose_strategy(&p, &transient, none),
            Some(Strategy::RetryStep)
        );
        let retried = Used {
            retries: 1,
            replans: 0,
        };
        assert_eq!(
            choose_strategy(&p, &transient, retried),
            Some(Strategy::ReplanFromFailure),
            "retries spent: replan the failed task instead"
        );
        let spent = Used {
            retries: 1,
            replans: 1,
        };
        assert_eq!(choose_strategy(&p, &transient, spent), None);
        let refused = [
            rec(1, Completed, None),
            rec(2, Failed, Some(Fatal)),
            rec(3, Completed, None),
        ];
        assert_eq!(
            choose_strategy(&p, &refused, none),
            Some(Strategy::ReplanFromFailure)
        );
        let wrecked = [
            rec(1, Failed, Some(Fatal)),
            rec(2, Failed, Some(Transient)),
            rec(3, Blocked, None),
        ];
        assert_eq!(
            choose_strategy(&p, &wrecked, none),
            Some(Strategy::CompleteReplan)
        );
        let fine = [rec(1, Completed, None)];
        assert_eq!(choose_strategy(&p, &fine, none), None);
    }
}
