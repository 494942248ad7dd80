//! Tool steps (seeds 003/004): a task with `tool` and `params` runs that tool directly,
//! without a model; `llm_call` with a `prompt` is a direct model call. Parameters may
//! reference earlier results (`planwave_plan::refs`).

use planwave_llm::{AgentRole, ChatMessage, ChatRequest};
use planwave_plan::{LLM_CALL, refs};
use serde_json::Value;

use crate::calls::TaskCalls;
use crate::prompt::subagent_context;

/// Runs tool step `index`: its section text and its JSON result, or why it failed.
pub(crate) async fn run(
    calls: &mut TaskCalls<'_>,
    index: usize,
    tool: &str,
) -> Result<(String, Value), String> {
    let shared = calls.shared;
    let plan = &shared.plan;
    let params = plan.task(index).params.clone().unwrap_or(Value::Null);
    let params = {
        let results = shared
            .results
            .lock()
            .map_err(|_| "results lock poisoned".to_owned())?;
        refs::substitute(&params, &|id: &str| {
            plan.index_of_key(id).and_then(|i| results.get(&i).cloned())
        })
        .map_err(|e| format!("parameters: {e}"))?
    };
    if tool == LLM_CALL {
        let prompt = match params.get("prompt") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => return Err("llm_call needs a \"prompt\" parameter".into()),
        };
        let request = ChatRequest {
            role: AgentRole::Subagent,
            messages: vec![ChatMessage::user(prompt)],
            attempt: 1,
            context: subagent_context(plan, index, &[]),
            traceparent: None,
            tools: Vec::new(),
        };
        let answer = calls.model(request).await.map_err(|e| e.to_string())?;
        return Ok((answer.content.clone(), Value::String(answer.content)));
    }
    let params = if params.is_null() {
        Value::Object(Default::default())
    } else {
        params
    };
    match calls.tool(tool, params).await {
        Ok(out) if out.is_error => Err(format!("tool {tool} returned an error: {}", out.text)),
        Ok(out) => {
            let json = out.json();
            Ok((out.text, json))
        }
        Err(e) => Err(e.to_string()),
    }
}
