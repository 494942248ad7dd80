//! The custom validator's plug-in point (`[validate] command`): something outside planwave
//! that reads a plan and names its problems. They join the built-in ones: a plan it faults
//! is sent back for repair like any invalid plan. The planner only asks; running a program
//! (bounded in time and output, never through a shell) is the runner's.

use std::sync::Arc;

/// A check of a plan beyond the built-in validation.
#[async_trait::async_trait]
pub trait PlanValidator: Send + Sync {
    /// The plan's problems as the validator sees them (none: it accepts the plan), given
    /// the plan as `plan.json` holds it; an error when the validator itself failed.
    async fn problems(&self, plan_json: String) -> Result<Vec<String>, ValidatorFailed>;
}

/// The validator could not say (it did not start, timed out, failed or answered something
/// other than a list of problems): planning stops, since no repair of the plan can fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValidatorFailed(pub String);

/// How the planner calls a validator on each plan that passed the built-in checks.
pub(crate) fn check_of(
    validator: &Arc<dyn PlanValidator>,
    plan: &planwave_plan::ValidatedPlan,
) -> crate::ask::CheckFuture {
    let v = Arc::clone(validator);
    let json = serde_json::to_string(plan.spec()).unwrap_or_default();
    Box::pin(async move { v.problems(json).await })
}
