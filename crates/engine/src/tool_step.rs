//! Tool steps (the step plan format): a task with `tool` and `params` runs that tool directly,
//! without a model; `llm_call` with a `prompt` is a direct model call. Parameters may
//! reference earlier results (`planwave_plan::refs`).

use planwave_llm::{AgentRole, ChatMessage, ChatRequest};
use planwave_plan::{LLM_CALL, refs};
use serde_json::Value;

use crate::calls::TaskCalls;
use crate::outcome::FailureKind;
use planwave_prompts::{TaskText, subagent_context};

/// Runs tool step `index`: its section text and its JSON result, or why it failed and how.
pub(crate) async fn run(
    calls: &mut TaskCalls<'_>,
    index: usize,
    tool: &str,
) -> Result<(String, Value), (String, FailureKind)> {
    run_inner(calls, index, tool).await.map_err(|e| match e {
        // Timeouts and broken connections were already retried once; a later pass may work.
        Failure::Tool(e) if e.is_retryable() => (e.to_string(), FailureKind::Transient),
        Failure::Model(e) if e.is_retryable() => (e.to_string(), FailureKind::Transient),
        Failure::Tool(e) => (e.to_string(), FailureKind::Fatal),
        Failure::Model(e) => (e.to_string(), FailureKind::Fatal),
        Failure::Other(e) => (e, FailureKind::Fatal),
    })
}

enum Failure {
    Tool(planwave_mcp::ToolError),
    Model(planwave_llm::LlmError),
    Other(String),
}

async fn run_inner(
    calls: &mut TaskCalls<'_>,
    index: usize,
    tool: &str,
) -> Result<(String, Value), Failure> {
    let shared = calls.shared;
    let plan = &shared.plan;
    let params = plan.task(index).params.clone().unwrap_or(Value::Null);
    let params = refs::substitute(&params, &|id: &str| {
        plan.index_of_key(id).and_then(|i| shared.results.get(i))
    })
    .map_err(|e| Failure::Other(format!("parameters: {e}")))?;
    if tool == LLM_CALL {
        let prompt = match params.get("prompt") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => {
                return Err(Failure::Other(
                    "llm_call needs a \"prompt\" parameter".into(),
                ));
            }
        };
        let request = ChatRequest {
            role: AgentRole::Subagent,
            messages: vec![ChatMessage::user(prompt)],
            attempt: 1,
            context: subagent_context(plan, index, &TaskText::of(plan.task(index)), &[]),
            traceparent: None,
            tools: Vec::new(),
        };
        let answer = calls.model(request).await.map_err(Failure::Model)?;
        return Ok((answer.content.clone(), Value::String(answer.content)));
    }
    let params = if params.is_null() {
        Value::Object(Default::default())
    } else {
        params
    };
    match calls.tool(tool, params).await {
        Ok(out) if out.is_error => Err(Failure::Other(format!(
            "tool {tool} returned an error: {}",
            out.text
        ))),
        Ok(out) => {
            let json = out.json();
            Ok((out.text, json))
        }
        Err(e) => Err(Failure::Tool(e)),
    }
}
