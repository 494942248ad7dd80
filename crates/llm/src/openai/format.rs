//! The `response_format` a request is sent with, shared by the streaming client and the
//! Batch API's request lines.

use serde_json::{Value, json};

use super::config::ResponseFormatMode;
use crate::{AgentRole, ChatRequest};

/// `response_format` for a request whose answer must be JSON: its own schema (the
/// evaluator's, the reflector's, the JSON tool protocol's...), else a planner's plan schema;
/// none for free text (a section, a summary).
pub fn response_format(
    mode: ResponseFormatMode,
    plan_schema: Option<&Value>,
    request: &ChatRequest,
) -> Option<Value> {
    let (name, schema) = match &request.context.answer_schema {
        Some(s) => (s.name, Some(&s.schema)),
        None if request.role == AgentRole::Planner => ("research_plan", plan_schema),
        None => return None,
    };
    match (mode, schema) {
        (ResponseFormatMode::JsonSchema, Some(schema)) => Some(json!({
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": false}
        })),
        (ResponseFormatMode::JsonSchema, None) | (ResponseFormatMode::JsonObject, _) => {
            Some(json!({"type": "json_object"}))
        }
        (ResponseFormatMode::None, _) => None,
    }
}
