//! Integration tests of the plan crate, in one binary (one link) with a module per concern.

mod generate;
mod layout;
mod parsing;
mod props;
mod shape;
mod tools;
mod validation;
mod waves;

use planwave_plan::{PlanSpec, TaskId, TaskSpec, ValidatedPlan};

/// A research plan from `(id, deps)` pairs with integer ids.
pub fn plan(tasks: &[(i64, &[i64])]) -> PlanSpec {
    PlanSpec {
        topic: "test".into(),
        tasks: tasks
            .iter()
            .map(|&(id, deps)| {
                TaskSpec::new(
                    id,
                    format!("task {id}"),
                    deps.iter().map(|&d| TaskId::Int(d)).collect(),
                )
            })
            .collect(),
        ..PlanSpec::default()
    }
}

/// The user-facing messages of a validation failure.
pub fn messages(spec: PlanSpec) -> Vec<String> {
    match ValidatedPlan::new(spec) {
        Ok(_) => Vec::new(),
        Err(e) => e.0.iter().map(ToString::to_string).collect(),
    }
}

/// Tasks per wave, as ids.
pub fn wave_ids(plan: &ValidatedPlan) -> Vec<Vec<String>> {
    plan.waves()
        .iter()
        .map(|w| w.iter().map(|&i| plan.id(i as usize).to_string()).collect())
        .collect()
}
