//! A step plan's partial replan: what the replanner is told (the tool catalogue with input
//! schemas, the kept steps with their results, the steps to replace with their errors) and
//! how its answer becomes a plan: the kept steps unchanged plus the replacement steps,
//! validated together and against the tool catalogue, like any step plan.

use std::sync::Arc;

use planwave_llm::{ToolRef, ToolResultRef};
use planwave_plan::{PlanSpec, ToolCatalog, ValidatedPlan, extract_json, plan_from_value};
use planwave_prompts::{PlannerTool, ReplanStep};
use planwave_record::{TaskRecord, TaskStatus};
use serde_json::{Value, json};

/// How much of a kept step's result the replanner sees.
const RESULT_CHARS: usize = 600;

/// The kept (completed) steps with their results, and the ones to replace with their errors.
pub fn split(
    plan: &ValidatedPlan,
    records: &[TaskRecord],
    sections: &[Option<Arc<str>>],
) -> (Vec<ReplanStep>, Vec<ReplanStep>) {
    let mut kept = Vec::new();
    let mut replace = Vec::new();
    for (i, r) in records.iter().enumerate().take(plan.len()) {
        let task = plan.task(i);
        let completed = r.status == TaskStatus::Completed;
        let step = ReplanStep {
            id: plan.id(i).to_string(),
            title: task.title().to_owned(),
            tool: task.tool.clone().unwrap_or_default(),
            params: task.params.as_ref().map_or("{}".into(), Value::to_string),
            status: r.status.as_str().to_owned(),
            deps: plan
                .deps(i)
                .iter()
                .map(|&d| plan.id(d as usize).to_string())
                .collect(),
            error: r.error.clone(),
            result: completed.then(|| kept_result(r, sections.get(i))).flatten(),
        };
        if completed {
            kept.push(step);
        } else {
            replace.push(step);
        }
    }
    (kept, replace)
}

/// A kept step's result as its references will read it (a tool's structured content as
/// JSON, whose fields `{{ID.result.FIELD}}` may name), else its section; an excerpt.
fn kept_result(record: &TaskRecord, section: Option<&Option<Arc<str>>>) -> Option<String> {
    match (&record.result, section) {
        (Some(v), _) => Some(excerpt(&v.to_string())),
        (None, Some(Some(text))) => Some(excerpt(text)),
        (None, _) => None,
    }
}

/// A result shortened for the prompt: at most [`RESULT_CHARS`] characters of it, cleaned as
/// every text placed in a `<data>` block is (`planwave_prompts::data`).
fn excerpt(text: &str) -> String {
    let clean = planwave_prompts::data::clean(text);
    let mut kept: String = clean.chars().take(RESULT_CHARS).collect();
    if clean.chars().nth(RESULT_CHARS).is_some() {
        kept.push('…');
    }
    kept
}

/// The tools as the request's structured context gives them (the simulator answers from it).
pub fn tool_refs(tools: &[PlannerTool]) -> Vec<ToolRef> {
    tools
        .iter()
        .map(|t| ToolRef {
            name: t.name.clone(),
            schema: serde_json::from_str(&t.input_schema).unwrap_or(Value::Null),
        })
        .collect()
}

/// What each step's tool gave: a kept step's result, a replaced step's error.
pub fn tool_results(kept: &[ReplanStep], replace: &[ReplanStep]) -> Vec<ToolResultRef> {
    let kept = kept.iter().map(|s| ToolResultRef {
        tool: s.tool.clone(),
        output: s.result.clone().unwrap_or_default(),
        is_error: false,
    });
    let failed = replace
        .iter()
        .filter(|s| s.status == TaskStatus::Failed.as_str())
        .map(|s| ToolResultRef {
            tool: s.tool.clone(),
            output: s.error.clone().unwrap_or_default(),
            is_error: true,
        });
    kept.chain(failed).collect()
}

/// The merged step plan (kept steps first, then the replacements), validated against
/// `tools`, or every problem with the answer.
pub fn merge(
    plan: &ValidatedPlan,
    records: &[TaskRecord],
    tools: &[PlannerTool],
    raw: &str,
) -> Result<ValidatedPlan, Vec<String>> {
    let value = extract_json(raw).map_err(|e| vec![e.to_string()])?;
    let steps = match value {
        Value::Object(mut m) => m
            .remove("steps")
            .or_else(|| m.remove("tasks"))
            .unwrap_or(Value::Null),
        v @ Value::Array(_) => v,
        _ => Value::Null,
    };
    if steps.as_array().is_none_or(|s| s.is_empty()) {
        return Err(vec![
            "expected {\"steps\": [...]} with at least one replacement step".into(),
        ]);
    }
    let spec = plan.spec();
    let new: PlanSpec = plan_from_value(json!({"goal": spec.topic, "steps": steps}))
        .map_err(|e| e.to_string().lines().map(str::to_owned).collect::<Vec<_>>())?;
    let merged = crate::replan::join_kept(plan, records, new, |t| {
        format!("step {}: the id is already used by a kept step", t.id)
    })?;
    let catalog = ToolCatalog::new(tools.iter().map(|t| t.name.clone()));
    ValidatedPlan::with_tools(merged, &catalog)
        .map(|p| p.with_lang(plan.lang()))
        .map_err(|e| e.0.iter().map(|p| p.to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> ValidatedPlan {
        let spec = planwave_plan::parse_plan_str(
            r#"{"goal": "g", "steps": [
                {"step_id": "a", "description": "A", "tool": "hello", "params": {"name": "x"}},
                {"step_id": "b", "description": "B", "tool": "broken", "params": {}},
                {"step_id": "c", "description": "C", "tool": "llm_call",
                 "params": {"prompt": "{{a.result}} {{b.result}}"}, "dependencies": ["a", "b"]}]}"#,
        )
        .expect("plan");
        ValidatedPlan::new(spec).expect("valid")
    }

    fn records(p: &ValidatedPlan, statuses: &[TaskStatus]) -> Vec<TaskRecord> {
        statuses
            .iter()
            .enumerate()
            .map(|(i, s)| TaskRecord {
                status: *s,
                ..TaskRecord::pending(p, i)
            })
            .collect()
    }

    fn tools() -> Vec<PlannerTool> {
        ["hello", "broken"]
            .iter()
            .map(|n| PlannerTool {
                name: (*n).into(),
                description: String::new(),
                input_schema: "{}".into(),
            })
            .collect()
    }

    #[test]
    fn replacement_steps_join_the_kept_ones_and_are_checked_against_the_tools() {
        let p = plan();
        let recs = records(
            &p,
            &[
                TaskStatus::Completed,
                TaskStatus::Failed,
                TaskStatus::Blocked,
            ],
        );
        let good = r#"{"steps": [{"step_id": "b2", "description": "B again", "tool": "hello",
            "params": {"name": "y"}}, {"step_id": "c", "description": "C", "tool": "llm_call",
            "params": {"prompt": "{{a.result}} {{b2.result}}"}, "dependencies": ["a", "b2"]}]}"#;
        let merged = merge(&p, &recs, &tools(), good).expect("merged");
        let ids: Vec<String> = (0..merged.len())
            .map(|i| merged.id(i).to_string())
            .collect();
        assert_eq!(ids, ["a", "b2", "c"]);
        assert_eq!(merged.spec().format, planwave_plan::PlanFormat::Steps);

        let unknown = r#"{"steps": [{"step_id": "b2", "description": "B", "tool": "nope"}]}"#;
        let problems = merge(&p, &recs, &tools(), unknown).expect_err("unknown tool");
        assert!(problems.iter().any(|m| m.contains("nope")), "{problems:?}");
        let reused = r#"{"steps": [{"step_id": "a", "description": "A", "tool": "hello"}]}"#;
        assert_eq!(
            merge(&p, &recs, &tools(), reused).expect_err("reused id"),
            ["step a: the id is already used by a kept step"]
        );
    }
}
