//! A round's passes: its execution, then recovery while the policy finds a strategy, each
//! pass recorded; and the round's record made from them.

use std::sync::Arc;

use planwave_plan::{Lang, ValidatedPlan};
use planwave_record::{Preset, RoundTag, RunResult, RunStatus};

use super::records::{PassRecord, RoundRecord, pass_record};
use super::recovery::{choose, recover, recovery_event};
use super::rounds::{LoopContext, LoopError, Rounds};
use crate::policy::{Used, choose_strategy};

/// A round's passes: its execution, then recovery while the policy finds a strategy.
pub(super) struct Passes {
    /// The plan the last pass ran (a recovery may have replaced it).
    pub(super) plan: Arc<ValidatedPlan>,
    /// The round's language: its first plan's.
    pub(super) lang: Lang,
    pub(super) passes: Vec<PassRecord>,
    pub(super) result: RunResult,
    pub(super) interrupted: bool,
    /// The last pass's tag.
    pub(super) tag: RoundTag,
}

/// `preset`: tasks an interrupted earlier process completed in this round (resume).
pub(super) async fn run_passes<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    k: u32,
    mut plan: Arc<ValidatedPlan>,
    mut preset: Vec<Preset>,
) -> Result<Passes, LoopError<R::Error>> {
    let lang = plan.lang();
    let mut passes: Vec<PassRecord> = Vec::new();
    let mut used = Used::default();
    let mut tag = RoundTag { round: k, pass: 1 };
    // A resumed round keeps its sections; a fresh one starts clean.
    let mut fresh = preset.is_empty();
    let (result, interrupted) = loop {
        let mut result = driver
            .execute(tag, plan.clone(), std::mem::take(&mut preset), fresh)
            .await
            .map_err(LoopError::Driver)?;
        passes.push(pass_record(tag.pass, &result));
        if result.status == RunStatus::Cancelled {
            break (result, true);
        }
        let Some(rule) = choose_strategy(&cx.policy, &result.tasks, used) else {
            break (result, false);
        };
        let last = passes.len() - 1;
        let Some((strategy, reflected)) =
            choose(cx, driver, (&plan, lang), tag, &mut result, (rule, used)).await?
        else {
            break (result, true);
        };
        let analysis = reflected.as_ref().map(|r| r.analysis.clone());
        passes[last].step_reflection = reflected;
        recovery_event(driver, tag, strategy, &result);
        passes[last].recovery = Some(strategy);
        driver.progress(&format!(
            "round {k}: {} task(s) failed; recovering with {}",
            result.stats.failed,
            strategy.as_str()
        ));
        let next = RoundTag {
            round: k,
            pass: tag.pass + 1,
        };
        let step = (strategy, next, analysis.as_deref());
        let recovered = recover(cx, driver, (&plan, lang), &result, step, &mut used).await?;
        match recovered {
            Ok(n) => (plan, preset, fresh) = (n.plan, n.preset, n.fresh),
            Err(why) => {
                passes[last].recovery_error = Some(why.error);
                break (result, why.interrupted);
            }
        }
        tag = next;
    };
    Ok(Passes {
        plan,
        lang,
        passes,
        result,
        interrupted,
        tag,
    })
}

/// Round `k`'s record from its passes (not yet evaluated), and what is left of them.
pub(super) fn round_record(k: u32, run: Passes) -> (RoundRecord, PassesLeft) {
    let record = RoundRecord {
        round: k,
        status: run.result.status,
        passes: run.passes,
        overall_score: None,
        correctness: None,
        is_successful: None,
        should_replan: None,
        evaluation_id: None,
        reflection_id: None,
        evaluation: None,
        result: run.result,
    };
    let left = PassesLeft {
        plan: run.plan,
        lang: run.lang,
        interrupted: run.interrupted,
        tag: run.tag,
    };
    (record, left)
}

/// What evaluation and reflection need of a round's passes once its record is made.
pub(super) struct PassesLeft {
    pub(super) plan: Arc<ValidatedPlan>,
    pub(super) lang: Lang,
    pub(super) interrupted: bool,
    pub(super) tag: RoundTag,
}
