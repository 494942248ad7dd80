//! A plan the loop asks its caller for, and the loop's rule when none could be made.

use std::sync::Arc;

use planwave_plan::ValidatedPlan;
use planwave_record::RoundTag;

use super::rounds::{LoopError, Planned, Rounds};
use crate::policy::StopReason;

/// The loop's rule for a plan that could not be made: the first round's first plan failing
/// is the loop's error (there is nothing to show); a later one stops the loop with
/// `planning_failed`, keeping the rounds so far.
pub(super) fn planning_failed<R: Rounds>(
    driver: &mut R,
    tag: RoundTag,
    e: R::Error,
) -> Result<StopReason, LoopError<R::Error>> {
    if tag.round == 1 && tag.pass == 1 {
        return Err(LoopError::Driver(e));
    }
    driver.warn(&format!("round {}: planning failed: {e:#}", tag.round));
    Ok(StopReason::PlanningFailed)
}

/// A round's fresh plan, or why the loop stops instead.
pub(super) async fn round_plan<R: Rounds>(
    driver: &mut R,
    tag: RoundTag,
    note: Option<&str>,
) -> Result<Result<Arc<ValidatedPlan>, StopReason>, LoopError<R::Error>> {
    Ok(
        match driver.plan(tag, note).await.map_err(LoopError::Driver)? {
            Planned::Plan(plan) => Ok(Arc::new(*plan)),
            Planned::Stop(reason) => Err(reason),
            Planned::Failed(e) => Err(planning_failed(driver, tag, e)?),
        },
    )
}
