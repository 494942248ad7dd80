//! The simulator's tool use: when a task's suggested tools exist and nothing has been called
//! yet, it asks for a deterministic chain of calls (each suggested tool once, in order); once
//! results are back, the section reports them.
//!
//! Arguments come from each tool's input schema: numbers from the seed, strings from the
//! task, and `{{input}}` for the first string argument of every call after the first, so the
//! previous call's output flows into it (tools that declare `input` get it from the executor).

use std::fmt::Write;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value, json};

use planwave_llm::{RequestContext, ToolCall};

use planwave_record::stable_hash;

/// The calls to make now, or `None` when the task has no tools or already has results.
pub fn chain(ctx: &RequestContext, seed: u64) -> Option<Vec<(String, Value)>> {
    if ctx.tools.is_empty() || !ctx.tool_results.is_empty() {
        return None;
    }
    Some(
        ctx.tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), args(&t.schema, ctx, seed, &t.name, i > 0)))
            .collect(),
    )
}

/// The JSON protocol's answer asking for `calls`.
pub fn json_answer(calls: &[(String, Value)]) -> String {
    let next: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"mcp": name, "args": args}))
        .collect();
    json!({"content": "", "next": next}).to_string()
}

/// The native protocol's calls, with stable ids.
pub fn native_calls(calls: &[(String, Value)]) -> Vec<ToolCall> {
    calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall::new(format!("call_{}", i + 1), name, args))
        .collect()
}

fn args(schema: &Value, ctx: &RequestContext, seed: u64, tool: &str, chained: bool) -> Value {
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = match schema.get("required").and_then(Value::as_array) {
        Some(r) => r.iter().filter_map(Value::as_str).collect(),
        None => props.keys().map(String::as_str).collect(),
    };
    let mut rng = StdRng::seed_from_u64(stable_hash(seed, tool, 0));
    let mut out = Map::new();
    let mut input_placed = false;
    for name in required {
        if name == "input" {
            continue;
        }
        let p = props.get(name).unwrap_or(&Value::Null);
        let v = if let Some(first) = p
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            first.clone()
        } else {
            match p.get("type").and_then(Value::as_str).unwrap_or("string") {
                "integer" | "number" => json!(rng.random_range(1..100)),
                "boolean" => json!(false),
                "array" => json!([]),
                "object" => json!({}),
                _ if chained && !input_placed => {
                    input_placed = true;
                    json!("{{input}}")
                }
                _ => json!(if ctx.task_title.is_empty() {
                    ctx.topic.clone()
                } else {
                    ctx.task_title.clone()
                }),
            }
        };
        out.insert(name.to_owned(), v);
    }
    Value::Object(out)
}

/// The paragraph a section gets about the tools it used.
pub fn findings(ctx: &RequestContext) -> String {
    if ctx.tool_results.is_empty() {
        return String::new();
    }
    let mut out = String::from(match ctx.lang {
        planwave_plan::Lang::Zh => "\n### 工具结果\n\n",
        planwave_plan::Lang::En => "\n### Tool results\n\n",
    });
    for r in &ctx.tool_results {
        let text: String = r.output.chars().take(400).collect();
        let text = text.replace('\n', " ");
        let _ = writeln!(
            out,
            "- `{}`{}: {}",
            r.tool,
            if r.is_error { " (error)" } else { "" },
            text.trim()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_llm::{ToolRef, ToolResultRef};

    fn ctx() -> RequestContext {
        RequestContext {
            task_title: "Totals".into(),
            tools: vec![
                ToolRef {
                    name: "get-sum".into(),
                    schema: json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
                },
                ToolRef {
                    name: "echo".into(),
                    schema: json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
                },
            ],
            ..RequestContext::default()
        }
    }

    #[test]
    fn chain_is_deterministic_and_feeds_the_previous_output_forward() {
        let calls = chain(&ctx(), 7).expect("tools and no results yet");
        assert_eq!(calls, chain(&ctx(), 7).expect("same seed"));
        assert_eq!(calls[0].0, "get-sum");
        assert!(calls[0].1["a"].is_number() && calls[0].1["b"].is_number());
        assert_eq!(
            calls[1],
            ("echo".to_owned(), json!({"message": "{{input}}"}))
        );
        let answer: Value = serde_json::from_str(&json_answer(&calls)).expect("json");
        assert_eq!(answer["next"][1]["mcp"], "echo");
        assert_eq!(native_calls(&calls)[1].id, "call_2");

        let mut done = ctx();
        done.tool_results.push(ToolResultRef {
            tool: "echo".into(),
            output: "Echo: 42".into(),
            is_error: false,
        });
        assert_eq!(chain(&done, 7), None, "results are in: write the section");
        assert!(findings(&done).contains("`echo`: Echo: 42"));
    }
}
