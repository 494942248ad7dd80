//! `replan_from_failure`: what the planner is told (kept tasks, tasks to replace), and how
//! its answer becomes a new plan: the kept tasks unchanged plus the replacements, validated
//! together (ids unique, dependencies resolve, no cycle).

use planwave_llm::SectionRef;
use planwave_plan::{PlanSpec, TaskId, ValidatedPlan, extract_json, plan_from_value};
use planwave_prompts::ReplanTask;
use planwave_record::{TaskRecord, TaskStatus};
use serde_json::{Value, json};

/// The kept (completed) tasks and the ones to replace (failed, and blocked by a failure).
pub fn split(plan: &ValidatedPlan, records: &[TaskRecord]) -> (Vec<ReplanTask>, Vec<ReplanTask>) {
    let mut kept = Vec::new();
    let mut replace = Vec::new();
    for (i, r) in records.iter().enumerate().take(plan.len()) {
        let t = ReplanTask {
            id: plan.id(i).to_string(),
            title: plan.task(i).title().to_owned(),
            status: r.status.as_str().to_owned(),
            deps: plan
                .deps(i)
                .iter()
                .map(|&d| plan.id(d as usize).to_string())
                .collect(),
            error: r.error.clone(),
        };
        if r.status == TaskStatus::Completed {
            kept.push(t);
        } else {
            replace.push(t);
        }
    }
    (kept, replace)
}

/// One past the largest integer id (string ids do not count).
pub fn next_id(plan: &ValidatedPlan) -> u64 {
    (0..plan.len())
        .filter_map(|i| match plan.id(i) {
            TaskId::Int(n) => u64::try_from(*n).ok(),
            TaskId::Str(s) => s.parse::<u64>().ok(),
        })
        .max()
        .unwrap_or(0)
        + 1
}

/// The structured context of the request (the simulator answers from it).
pub fn context_sections(kept: &[ReplanTask], replace: &[ReplanTask]) -> Vec<SectionRef> {
    kept.iter()
        .chain(replace)
        .map(|t| SectionRef {
            id: t.id.clone(),
            title: t.title.clone(),
            status: t.status.clone(),
        })
        .collect()
}

/// The merged plan, or every problem with the replacement answer.
pub fn merge(
    plan: &ValidatedPlan,
    records: &[TaskRecord],
    raw: &str,
) -> Result<ValidatedPlan, Vec<String>> {
    let value = extract_json(raw).map_err(|e| vec![e.to_string()])?;
    let tasks = match value {
        Value::Object(mut m) => m.remove("tasks").unwrap_or(Value::Null),
        v @ Value::Array(_) => v,
        _ => Value::Null,
    };
    if tasks.as_array().is_none_or(|t| t.is_empty()) {
        return Err(vec![
            "expected {\"tasks\": [...]} with at least one replacement task".into(),
        ]);
    }
    let spec = plan.spec();
    let new: PlanSpec = plan_from_value(json!({
        "topic": spec.topic,
        "objectives": spec.objectives,
        "tasks": tasks,
    }))
    .map_err(|e| e.to_string().lines().map(str::to_owned).collect::<Vec<_>>())?;
    let merged = join_kept(plan, records, new, |t| {
        format!(
            "task {}: the id is already used by a kept task; new ids start at {}",
            t.id,
            next_id(plan)
        )
    })?;
    ValidatedPlan::new(merged)
        .map(|p| p.with_lang(plan.lang()))
        .map_err(|e| e.0.iter().map(|p| p.to_string()).collect())
}

/// The plan's completed tasks followed by `new`'s, or one problem (from `clash`) per new task
/// whose id a kept task already has. Shared by the research and the step replan, which
/// differ only in how they parse the answer and validate the result.
pub(crate) fn join_kept(
    plan: &ValidatedPlan,
    records: &[TaskRecord],
    new: PlanSpec,
    clash: impl Fn(&planwave_plan::TaskSpec) -> String,
) -> Result<PlanSpec, Vec<String>> {
    let kept: Vec<usize> = (0..plan.len())
        .filter(|&i| {
            records
                .get(i)
                .is_some_and(|r| r.status == TaskStatus::Completed)
        })
        .collect();
    let problems: Vec<String> = new
        .tasks
        .iter()
        .filter(|t| kept.iter().any(|&k| plan.id(k) == &t.id))
        .map(clash)
        .collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut merged = plan.spec().clone();
    merged.tasks = kept
        .iter()
        .map(|&k| plan.task(k).clone())
        .chain(new.tasks)
        .collect();
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_plan::TaskSpec;

    fn plan() -> ValidatedPlan {
        ValidatedPlan::new(PlanSpec {
            topic: "t".into(),
            tasks: vec![
                TaskSpec::new(1, "a", vec![]),
                TaskSpec::new(2, "b", vec![]),
                TaskSpec::new(3, "c", vec![TaskId::Int(1), TaskId::Int(2)]),
            ],
            ..Default::default()
        })
        .expect("valid")
    }

    fn records(p: &ValidatedPlan, statuses: &[TaskStatus]) -> Vec<TaskRecord> {
        statuses
            .iter()
            .enumerate()
            .map(|(i, s)| TaskRecord {
                description: String::new(),
                status: *s,
                wave: 0,
                attempts: 1,
                ..TaskRecord::pending(p, i)
            })
            .collect()
    }

    #[test]
    fn replacements_join_the_kept_tasks_and_are_validated_against_them() {
        use TaskStatus::*;
        let p = plan();
        let recs = records(&p, &[Completed, Failed, Blocked]);
        let (kept, replace) = split(&p, &recs);
        assert_eq!(kept.len(), 1);
        assert_eq!(
            replace.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            ["2", "3"]
        );
        assert_eq!(next_id(&p), 4);
        let merged = merge(
            &p,
            &recs,
            r#"{"tasks": [{"id": 4, "description": "b2", "dependencies": []}, {"id": 5, "description": "c2", "dependencies": [1, 4]}]}"#,
        )
        .expect("valid");
        let ids: Vec<String> = (0..merged.len())
            .map(|i| merged.id(i).to_string())
            .collect();
        assert_eq!(ids, ["1", "4", "5"]);

        let clash = merge(
            &p,
            &recs,
            r#"{"tasks": [{"id": 1, "description": "x", "dependencies": []}]}"#,
        )
        .expect_err("id clash");
        assert_eq!(
            clash,
            ["task 1: the id is already used by a kept task; new ids start at 4"]
        );
        let dangling = merge(
            &p,
            &recs,
            r#"{"tasks": [{"id": 4, "description": "x", "dependencies": [2]}]}"#,
        )
        .expect_err("depends on a replaced task");
        assert!(dangling[0].contains("dependency 2"), "{dangling:?}");
        let cycle = merge(
            &p,
            &recs,
            r#"{"tasks": [{"id": 4, "description": "x", "dependencies": [5]}, {"id": 5, "description": "y", "dependencies": [4]}]}"#,
        )
        .expect_err("cycle");
        assert!(cycle.iter().any(|m| m.starts_with("cycle")), "{cycle:?}");
        assert!(merge(&p, &recs, r#"{"tasks": []}"#).is_err());
    }
}
