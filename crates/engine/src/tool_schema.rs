//! The JSON tool protocol's answer as a JSON Schema, sent as `response_format` so a
//! grammar-enforcing server (llama.cpp, vLLM) makes the model write the object the tool loop
//! reads: `{"content": "...", "next": [{"mcp": TOOL, "args": {...}}]}`, with a known tool's
//! name and a bounded list of calls.

use std::sync::Arc;

use planwave_llm::{AnswerSchema, bound_schema};
use planwave_mcp::ToolInfo;
use serde_json::json;

/// Calls one answer may ask for, and characters of text outside `content`.
const CALLS: u64 = 4;
const CHARS: u64 = 300;
/// `content` is the section itself: bounded by the output cap, not by the schema, unless
/// the answer would otherwise be endless.
const CONTENT_CHARS: u64 = 32_000;

pub(crate) fn tool_turn(tools: &[ToolInfo]) -> Arc<AnswerSchema> {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let mut schema = json!({
        "type": "object",
        "properties": {
            "content": {"type": "string", "maxLength": CONTENT_CHARS},
            "next": {"type": "array", "maxItems": CALLS, "items": {
                "type": "object",
                "properties": {
                    "mcp": {"type": "string", "enum": names},
                    "args": {"type": "object"}
                },
                "required": ["mcp", "args"]
            }}
        },
        "required": ["content", "next"]
    });
    bound_schema(&mut schema, CALLS, CHARS);
    AnswerSchema::new("tool_turn", schema)
}
