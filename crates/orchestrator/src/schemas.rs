//! The JSON Schemas of the loop's answers (evaluation, reflection, step reflection), sent as
//! `response_format` so a grammar-enforcing server (llama.cpp, vLLM) makes a weak model
//! write the shape the judge reads. Bounded (`maxItems`, `maxLength`) so the grammar also
//! stops an answer that would repeat itself until the output cap.

use std::sync::Arc;

use planwave_llm::{AnswerSchema, bound_schema};
use serde_json::{Value, json};

use crate::policy::Strategy;

/// Items per list and characters per text in a loop answer.
const ITEMS: u64 = 5;
const CHARS: u64 = 300;

fn bounded(name: &'static str, mut schema: Value) -> Arc<AnswerSchema> {
    bound_schema(&mut schema, ITEMS, CHARS);
    AnswerSchema::new(name, schema)
}

fn score() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 100})
}

fn texts() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// The evaluator's answer ([`crate::model::Evaluation`]).
pub fn evaluation() -> Arc<AnswerSchema> {
    bounded(
        "evaluation",
        json!({
            "type": "object",
            "properties": {
                "overall_score": score(),
                "is_successful": {"type": "boolean"},
                "dimensions": {
                    "type": "object",
                    "properties": {
                        "completeness": score(), "correctness": score(),
                        "efficiency": score(), "reliability": score()
                    },
                    "required": ["completeness", "correctness", "efficiency", "reliability"]
                },
                "successes": texts(),
                "failures": texts(),
                "improvement_suggestions": texts()
            },
            "required": ["overall_score", "is_successful", "dimensions", "successes",
                         "failures", "improvement_suggestions"]
        }),
    )
}

/// The reflector's answer ([`crate::model::Reflection`]).
pub fn reflection() -> Arc<AnswerSchema> {
    let text = json!({"type": "string"});
    bounded(
        "reflection",
        json!({
            "type": "object",
            "properties": {
                "root_causes": texts(),
                "incorrect_assumptions": texts(),
                "alternative_approaches": texts(),
                "optimization_suggestions": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "aspect": text, "current_issue": text,
                        "proposed_solution": text, "expected_improvement": text
                    },
                    "required": ["aspect", "current_issue", "proposed_solution",
                                 "expected_improvement"]
                }},
                "lessons_learned": texts(),
                "should_replan": {"type": "boolean"}
            },
            "required": ["root_causes", "incorrect_assumptions", "alternative_approaches",
                         "optimization_suggestions", "lessons_learned", "should_replan"]
        }),
    )
}

/// A step-level reflection ([`crate::model::StepReflection`]): the strategy one of `offered`.
pub fn step_reflection(offered: &[Strategy]) -> Arc<AnswerSchema> {
    let allowed: Vec<&str> = offered.iter().map(|s| s.as_str()).collect();
    bounded(
        "step_reflection",
        json!({
            "type": "object",
            "properties": {
                "analysis": {"type": "string"},
                "strategy": {"type": "string", "enum": allowed},
                "reason": {"type": "string"}
            },
            "required": ["analysis", "strategy", "reason"]
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schemas_bound_every_list_and_text() {
        let e = evaluation();
        assert_eq!(e.schema["properties"]["failures"]["maxItems"], ITEMS);
        assert_eq!(
            e.schema["properties"]["failures"]["items"]["maxLength"],
            CHARS
        );
        let r = reflection();
        let s = &r.schema["properties"]["optimization_suggestions"];
        assert_eq!(s["items"]["properties"]["aspect"]["maxLength"], CHARS);
        let st = step_reflection(&[Strategy::RetryStep]);
        assert_eq!(st.schema["properties"]["strategy"]["enum"][0], "retry_step");
    }
}
