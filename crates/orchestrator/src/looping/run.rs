//! The loop itself: rounds until a stop condition ([`run_loop`], [`run_loop_from`] after a
//! resume), and `run --recover`'s single round ([`recover_plan`]).

use std::sync::Arc;

use planwave_plan::ValidatedPlan;
use planwave_record::{EventKind, Preset, RoundTag};
use serde_json::json;

use super::evaluation::evaluate;
use super::passes::{PassesLeft, round_record, run_passes};
use super::planning::round_plan;
use super::records::{LoopOutcome, RoundRecord, best_round, finished};
use super::reflection::reflect;
use super::rounds::{LoopContext, LoopError, Rounds};
use crate::policy::{LoopPolicy, StopReason, stop_after_reflection, stop_before_reflection};

/// The loop from its first round.
pub async fn run_loop<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
) -> Result<LoopOutcome, LoopError<R::Error>> {
    run_loop_from(cx, driver, LoopStart::default()).await
}

/// Where a loop starts: from nothing, or (`planwave resume`) after the rounds an earlier
/// process finished, with the round it was in the middle of.
#[derive(Default)]
pub struct LoopStart {
    /// Rounds already finished (their results as recorded, sections not loaded).
    pub rounds: Vec<RoundRecord>,
    /// The last finished round's reflection summary, for the next round's planner.
    pub note: Option<String>,
    /// The interrupted round's plan and the tasks its journal shows completed: the first
    /// round runs it (no planning) with those kept.
    pub resume: Option<(ValidatedPlan, Vec<Preset>)>,
}

/// The loop from `start`: `run_loop` from nothing, or the rest of an interrupted one.
pub async fn run_loop_from<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    start: LoopStart,
) -> Result<LoopOutcome, LoopError<R::Error>> {
    let p = &cx.policy;
    let LoopStart {
        mut rounds,
        mut note,
        mut resume,
    } = start;
    // Rounds in a row, up to the last finished one, that ended with failed tasks.
    let mut consecutive_failed = rounds
        .iter()
        .rev()
        .take_while(|r| r.result.stats.failed > r.result.stats.optional_failed)
        .count() as u32;
    // A loop stopped after its last finished round (and cut off before it could say so)
    // stays stopped.
    let already = match (resume.is_none(), rounds.last()) {
        (true, Some(last)) => stopped_after(p, last, consecutive_failed),
        _ => None,
    };
    let stop_reason = loop {
        if let Some(reason) = already {
            break reason;
        }
        if cx.interrupt.is_cancelled() {
            break StopReason::Interrupted;
        }
        if cx.timed_out() {
            break StopReason::Timeout;
        }
        let k = rounds.len() as u32 + 1;
        let first = RoundTag { round: k, pass: 1 };
        driver.event(
            k,
            EventKind::RoundStarted {
                round: k,
                reflected: note.is_some(),
            },
        );
        let (plan, preset) = match resume.take() {
            Some((plan, preset)) => (Arc::new(plan), preset),
            None => match round_plan(driver, first, note.as_deref()).await? {
                Ok(plan) => (plan, Vec::new()),
                Err(reason) => break reason,
            },
        };
        let run = run_passes(cx, driver, k, plan, preset).await?;
        let (record, run) = round_record(k, run);
        if run.interrupted {
            // Not finished: no round.json, so a resume runs this round on.
            rounds.push(record);
            break cx.cut_short();
        }
        consecutive_failed = if record.result.stats.failed > record.result.stats.optional_failed {
            consecutive_failed + 1
        } else {
            0
        };
        note = match conclude(cx, driver, &mut rounds, (record, run), consecutive_failed).await? {
            Ok(summary) => Some(summary),
            Err(reason) => break reason,
        };
    };
    Ok(LoopOutcome {
        best_round: best_round(&rounds),
        rounds,
        stop_reason,
    })
}

/// Round `record` after its passes: evaluated, reflected on and finished. The summary the
/// next round's planner is told, or why the loop stops.
async fn conclude<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    rounds: &mut Vec<RoundRecord>,
    (mut record, run): (RoundRecord, PassesLeft),
    consecutive_failed: u32,
) -> Result<Result<String, StopReason>, LoopError<R::Error>> {
    let p = &cx.policy;
    let k = record.round;
    let (evaluation, context) =
        match evaluate(cx, driver, (&run.plan, run.lang), run.tag, &mut record).await? {
            Ok(e) => e,
            Err(reason) => {
                finished(driver, rounds, record);
                return Ok(Err(reason));
            }
        };
    let stop = stop_before_reflection(p, k, &evaluation, consecutive_failed);
    if !p.auto_reflection {
        finished(driver, rounds, record);
        return Ok(Err(stop.unwrap_or(StopReason::AutoReflectionOff)));
    }
    // Correct enough: the loop's own rule ends it, and nothing a reflection says changes
    // that, so no reflection call is made.
    if stop == Some(StopReason::Correctness) {
        finished(driver, rounds, record);
        return Ok(Err(StopReason::Correctness));
    }
    // Otherwise the last round is reflected on too: its reflection is the run's lessons,
    // kept in `reflection.json` even though no round follows.
    let reflected = reflect(
        cx,
        driver,
        (&run.plan, run.lang),
        context,
        &evaluation,
        &mut record,
    )
    .await?;
    finished(driver, rounds, record);
    if let Some(reason) = stop {
        return Ok(Err(reason));
    }
    let reflection = match reflected {
        Ok(r) => r,
        Err(reason) => return Ok(Err(reason)),
    };
    if let Some(reason) = stop_after_reflection(&reflection) {
        return Ok(Err(reason));
    }
    let summary = reflection.summary(Some(&evaluation), run.lang, &cx.templates)?;
    driver
        .save(k, "reflection-summary.json", &json!({ "summary": summary }))
        .map_err(LoopError::Driver)?;
    Ok(Ok(summary))
}

/// Whether the loop stopped after finished round `last`, by the rules it went by then.
fn stopped_after(
    p: &LoopPolicy,
    last: &RoundRecord,
    consecutive_failed: u32,
) -> Option<StopReason> {
    let Some(evaluation) = &last.evaluation else {
        return Some(StopReason::EvaluationFailed);
    };
    if let Some(reason) = stop_before_reflection(p, last.round, evaluation, consecutive_failed) {
        return Some(reason);
    }
    if !p.auto_reflection {
        return Some(StopReason::AutoReflectionOff);
    }
    match last.should_replan {
        Some(false) => Some(StopReason::NoReplan),
        Some(true) => None,
        None => Some(StopReason::ReflectionFailed),
    }
}

/// `run --recover`: one round on a given plan, its failed tasks recovered by the loop's
/// policy (retry, partial or complete replan, with `cx.goal` as the goal), neither evaluated
/// nor reflected on.
///
/// `preset`: the tasks an interrupted earlier process completed (`planwave resume`).
pub async fn recover_plan<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    plan: ValidatedPlan,
    preset: Vec<Preset>,
) -> Result<LoopOutcome, LoopError<R::Error>> {
    driver.event(
        1,
        EventKind::RoundStarted {
            round: 1,
            reflected: false,
        },
    );
    let run = run_passes(cx, driver, 1, Arc::new(plan), preset).await?;
    let stop_reason = if run.interrupted {
        cx.cut_short()
    } else {
        StopReason::RunFinished
    };
    let (record, _) = round_record(1, run);
    let mut rounds = Vec::new();
    if stop_reason == StopReason::RunFinished {
        finished(driver, &mut rounds, record);
    } else {
        rounds.push(record);
    }
    Ok(LoopOutcome {
        rounds,
        best_round: Some(1),
        stop_reason,
    })
}
